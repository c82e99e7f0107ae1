# gpuscale: build, test, benchmark and lint. Tools are built from the Go
# module proxy, pinned by version, and reused: linters into .cache/bin, the
# local control plane into .cache/tools.

GO            ?= go
CACHE         := $(CURDIR)/.cache
BIN           := $(CACHE)/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK   := $(BIN)/staticcheck-$(STATICCHECK_VERSION)
PARITY_DIR    := test/schedulerparity
# HPA parity: the HPA model against the real controller's replica calculator.
HPA_PARITY_DIR := test/hpaparity
# Scheduler parity: random cases compared with the real kube-scheduler plugins.
PARITY_CASES  ?= 20000
BENCH         ?= .
BENCHTIME     ?= 1s
# Ultra-scale benchmarks: the cluster size, and how many loops each case runs.
ULTRA_NODES   ?= 100000
ULTRA_LOOPS   ?= 20
ULTRA_GOALS   ?= 0
# The large local run on the kwok control plane (bench-kwok): nodes of ten
# pods each, and the autoscaler's client rate.
KWOK_NODES    ?= 5000
KWOK_QPS      ?= 50
KWOK_BURST    ?= 100
# kube-controller-manager's client rate in that run (its own default, 20,
# makes the ReplicaSet controller the limit of the burst).
KWOK_CONTROLLER_QPS ?= 500

# What `gpuscale version` and the start-up log say: stamped into
# internal/version at link time (the Dockerfile takes the same as build
# arguments). Override on the command line for a release: make image VERSION=v0.2.0.
VERSION       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
COMMIT        ?= $(shell git rev-parse HEAD 2>/dev/null)
VERSION_PKG   := github.com/gpuscale/gpuscale/internal/version
LDFLAGS       := -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT)
# The image for real clusters (see README: build and push).
IMAGE         ?= ghcr.io/gpuscale/gpuscale
PLATFORMS     ?= linux/amd64,linux/arm64

# The local control plane's binaries (hack/build-tools.sh builds them into
# .cache/tools, once).
E2E_TOOLS     := kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl prometheus helm

.PHONY: all build gpuscale print-ldflags image image-push test unit parity vet lint bench bench-ultra bench-kwok clean tools cluster-up cluster-down demo demo-inference dst dst-planted

all: build

build:
	$(GO) build ./...

## gpuscale: the binary, bin/gpuscale, stamped with VERSION and COMMIT.
gpuscale:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/gpuscale ./cmd/gpuscale

print-ldflags:
	@echo '$(LDFLAGS)'

## image / image-push: the container image (Dockerfile), stamped the same
## way; image-push builds it for PLATFORMS with docker buildx and pushes
## $(IMAGE):$(VERSION) (docker login to the registry first).
image:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE):$(VERSION) .

image-push:
	docker buildx build --platform $(PLATFORMS) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) \
		-t $(IMAGE):$(VERSION) --push .

## test: vet, lint, all tests with the race detector (end-to-end tests on a
## local control plane included), and the scheduler parity suite.
test: vet lint tools unit parity

unit:
	$(GO) test -race -count=1 -timeout 30m ./...

## dst: the long search of the deterministic simulation (internal/dst,
## docs/reliability.md): DST_SCHEDULES schedules drawn from seeds DST_SEED
## on, DST_STEPS steps each, stopped after DST_TIME (0: no limit). Prints
## the report, and a replay test for each finding. `make test` explores a
## fixed handful of seeds only.
DST_SCHEDULES ?= 1000
DST_SEED      ?= 1
DST_STEPS     ?= 60
DST_TIME      ?= 0
dst:
	$(GO) test -count=1 -timeout 0 -run '^TestSearch$$' ./internal/dst -v \
		-dst.schedules=$(DST_SCHEDULES) -dst.seed=$(DST_SEED) -dst.steps=$(DST_STEPS) -dst.time=$(DST_TIME)

## dst-planted: each planted bug (internal/dst/planted_test.go: a copy of
## one production file with one safety check broken, swapped in with
## go test -overlay) must be found by the search within DST_PLANTED_TIME.
DST_PLANTED_TIME ?= 5m
DST_PLANTED      ?=
dst-planted:
	$(GO) test -count=1 -timeout 0 -run '^TestPlantedBugsAreFound$$' ./internal/dst -v -dst.planted-time=$(DST_PLANTED_TIME) -dst.planted='$(DST_PLANTED)'

## tools: build the local control plane (first run only, about 10 minutes).
tools:
	hack/build-tools.sh $(E2E_TOOLS)

## cluster-up / cluster-down: a local cluster on 127.0.0.1 (kwok nodes).
cluster-up: tools
	hack/cluster.sh up

cluster-down:
	hack/cluster.sh down

## demo: the seed's GPU HPA walkthrough with node autoscaling, on a local
## control plane with Prometheus, the metrics adapter and dcgm-sim.
demo:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/gpuscale ./cmd/gpuscale
	$(BIN)/gpuscale demo $(DEMO_FLAGS)

## demo-inference: an inference server scaled from and to zero on its queue,
## with a CapacityBuffer's warm GPU node, on the same local control plane.
demo-inference:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/gpuscale ./cmd/gpuscale
	$(BIN)/gpuscale demo --story inference $(DEMO_FLAGS)

parity:
	cd $(PARITY_DIR) && $(GO) vet ./... && PARITY_CASES=$(PARITY_CASES) $(GO) test -count=1 ./...
	cd $(HPA_PARITY_DIR) && $(GO) vet ./... && $(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

lint: $(STATICCHECK)
	$(STATICCHECK) ./...
	cd $(PARITY_DIR) && $(STATICCHECK) ./...
	cd $(HPA_PARITY_DIR) && $(STATICCHECK) ./...

$(STATICCHECK):
	mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(BIN)/staticcheck $@

## bench: the benchmarks beside the code (BENCH=regexp, BENCHTIME=1s).
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem ./...

## bench-ultra: Step and the live loop at ULTRA_NODES nodes of 10 pods
## (default 100,000 nodes, 1,000,000 pods), ULTRA_LOOPS loops each, reporting
## p99 and heap beside each goal; ULTRA_GOALS=1 fails a case past its goal.
## At 100,000 nodes Step's benchmark peaks at about 7 GB resident and the live loop's at about 10 GB; run one at a time.
bench-ultra:
	GPUSCALE_BENCH_NODES=$(ULTRA_NODES) GPUSCALE_BENCH_GOALS=$(ULTRA_GOALS) $(GO) test -run '^$$' -bench 'BenchmarkUltraStep' -benchtime $(ULTRA_LOOPS)x -benchmem -timeout 60m ./pkg/autoscaler/
	GPUSCALE_BENCH_NODES=$(ULTRA_NODES) GPUSCALE_BENCH_GOALS=$(ULTRA_GOALS) $(GO) test -run '^$$' -bench 'BenchmarkUltraLoop' -benchtime $(ULTRA_LOOPS)x -benchmem -timeout 60m ./pkg/controller/

## bench-kwok: the large local run (docs/benchmarks.md): the live autoscaler
## on the kwok control plane, a burst of KWOK_NODES x 10 pods to all Running,
## then a fifth of the nodes (at most 1,000) drained and removed; reports the
## times, loop time, API requests a loop and memory. Not part of make test.
bench-kwok: tools
	GPUSCALE_KWOK_NODES=$(KWOK_NODES) GPUSCALE_KWOK_QPS=$(KWOK_QPS) GPUSCALE_KWOK_BURST=$(KWOK_BURST) \
		GPUSCALE_KWOK_CONTROLLER_QPS=$(KWOK_CONTROLLER_QPS) \
		$(GO) test -run '^$$' -bench 'BenchmarkLargeKwokRun' -benchtime 1x -timeout 180m ./test/e2e/autoscaler/

clean:
	-hack/cluster.sh down
	rm -rf $(CACHE)
