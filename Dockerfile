# One image for every gpuscale subcommand (cluster-autoscaler, metrics-adapter,
# dcgm-sim, ...): a static binary on distroless, running as non-root.
#
#   docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse HEAD) -t ghcr.io/gpuscale/gpuscale:0.1.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg VERSION=v0.1.0 \
#     --build-arg COMMIT=$(git rev-parse HEAD) -t ghcr.io/gpuscale/gpuscale:0.1.0 --push .
#
# (`make image` and `make image-push` pass both.) VERSION and COMMIT are what
# `gpuscale version` and the start-up log print; the build context has no
# .git, so without them the binary knows neither.
#
# The deployments in deploy/ pass the subcommand as the first argument.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, so a source change reuses the download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
# Only what the binary is built from (the build context holds .cache/ too).
COPY cmd/ cmd/
COPY internal/ internal/
COPY pkg/ pkg/
ARG TARGETOS TARGETARCH
ARG VERSION=""
ARG COMMIT=""
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w \
      -X github.com/gpuscale/gpuscale/internal/version.version=${VERSION} \
      -X github.com/gpuscale/gpuscale/internal/version.commit=${COMMIT}" \
    -o /out/gpuscale ./cmd/gpuscale

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gpuscale /usr/local/bin/gpuscale
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/gpuscale"]
