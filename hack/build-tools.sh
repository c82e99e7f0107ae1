#!/usr/bin/env bash
# Builds the pinned control-plane binaries for the local cluster from the Go
# module proxy (no other downloads) into a cache keyed by the pinned versions:
#
#   .cache/tools/<key>/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,
#                           kubectl,etcd,kwok,kwokctl,prometheus,helm}
#
# <key> hashes hack/tools/{,kwok/,prometheus/,helm/}go.sum, GOOS/GOARCH and this
# script's RECIPE and versions: changing a pin or the recipe builds into a
# fresh directory. Binaries already present are skipped: only the first run
# pays (about 10 minutes on 2 cores with a cold Go build cache).
#
# Usage: hack/build-tools.sh [--check] [NAME...]
#   NAME...   build only these binaries (default: all of them)
#   --check   build nothing; exit 0 if they are all present, 3 if not
# Progress goes to stderr; the last line on stdout is the bin directory.
#
# Environment:
#   GO             go command (default go)
#   TOOLS_CACHE    cache root (default .cache/tools)
#   TOOLS_GOFLAGS  extra go build flags (-p defaults to the CPU count, at most
#                  4: linking kube-apiserver takes about 1.5 GiB per job)
set -euo pipefail

# Bump when the build recipe (flags, ldflags) changes.
RECIPE=3

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/hack/tools"
GO="${GO:-go}"

KUBE_VERSION=v1.37.2 # k8s.io/kubernetes in hack/tools/go.mod
KWOK_VERSION=v0.8.0  # sigs.k8s.io/kwok in hack/tools/kwok/go.mod
PROMETHEUS_VERSION=3.15.0 # github.com/prometheus/prometheus v0.315.0 in hack/tools/prometheus/go.mod
HELM_VERSION=v4.3.1      # helm.sh/helm/v4 in hack/tools/helm/go.mod

# name|module directory (under hack/tools)|package
ALL_TOOLS=(
	"kube-apiserver|.|k8s.io/kubernetes/cmd/kube-apiserver"
	"kube-controller-manager|.|k8s.io/kubernetes/cmd/kube-controller-manager"
	"kube-scheduler|.|k8s.io/kubernetes/cmd/kube-scheduler"
	"kubectl|.|k8s.io/kubernetes/cmd/kubectl"
	"etcd|.|go.etcd.io/etcd/server/v3"
	"kwok|kwok|sigs.k8s.io/kwok/cmd/kwok"
	"kwokctl|kwok|sigs.k8s.io/kwok/cmd/kwokctl"
	"prometheus|prometheus|github.com/prometheus/prometheus/cmd/prometheus"
	"helm|helm|helm.sh/helm/v4/cmd/helm"
)

log() { echo "build-tools: $*" >&2; }
die() { log "error: $*"; exit 1; }

check=0
want=()
for arg in "$@"; do
	case "$arg" in
	--check) check=1 ;;
	-h | --help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown flag $arg" ;;
	*) want+=("$arg") ;;
	esac
done

command -v "$GO" >/dev/null || die "$GO not found in PATH"
goos="$("$GO" env GOOS)"
goarch="$("$GO" env GOARCH)"

# The go.sum files pin every module version (and its hash); comments or
# layout changes in go.mod do not force a rebuild.
key="$(
	cd "$TOOLS"
	{
		echo "recipe=$RECIPE $goos/$goarch kube=$KUBE_VERSION kwok=$KWOK_VERSION prometheus=$PROMETHEUS_VERSION helm=$HELM_VERSION"
		for f in go.sum kwok/go.sum prometheus/go.sum helm/go.sum; do
			echo "== $f"
			cat "$f"
		done
	} | sha256sum | cut -c1-16
)"
DIR="${TOOLS_CACHE:-$ROOT/.cache/tools}/$key"
BIN="$DIR/bin"

# Select the entries to build.
selected=()
if [ "${#want[@]}" -eq 0 ]; then
	selected=("${ALL_TOOLS[@]}")
else
	for name in "${want[@]}"; do
		found=""
		for entry in "${ALL_TOOLS[@]}"; do
			[ "${entry%%|*}" = "$name" ] && found="$entry"
		done
		[ -n "$found" ] || die "unknown tool $name (known: $(for e in "${ALL_TOOLS[@]}"; do printf '%s ' "${e%%|*}"; done))"
		selected+=("$found")
	done
fi

missing() {
	local entry out=()
	for entry in "${selected[@]}"; do
		[ -x "$BIN/${entry%%|*}" ] || out+=("$entry")
	done
	[ "${#out[@]}" -eq 0 ] || printf '%s\n' "${out[@]}"
}

if [ -z "$(missing)" ]; then
	echo "$BIN"
	exit 0
fi
if [ "$check" -eq 1 ]; then
	log "not built yet in $BIN: $(missing | cut -d'|' -f1 | tr '\n' ' ')"
	echo "$BIN"
	exit 3
fi

mkdir -p "$BIN"
# Concurrent callers (parallel test packages) wait for one builder.
exec 9>"$DIR/.lock"
if command -v flock >/dev/null; then
	if ! flock -n 9; then
		log "another build-tools.sh is building into $DIR; waiting..."
		flock 9
	fi
fi

todo="$(missing)"
if [ -z "$todo" ]; then
	echo "$BIN"
	exit 0
fi

cpus="$(nproc 2>/dev/null || echo 2)"
[ "$cpus" -le 4 ] || cpus=4
export GOFLAGS="${GOFLAGS:-} -p=$cpus ${TOOLS_GOFLAGS:-}"
export GOWORK=off
export CGO_ENABLED=0

kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION"
	kube_ldflags+=" -X $pkg.gitMajor=$(echo "${KUBE_VERSION#v}" | cut -d. -f1)"
	kube_ldflags+=" -X $pkg.gitMinor=$(echo "${KUBE_VERSION#v}" | cut -d. -f2)"
	kube_ldflags+=" -X $pkg.gitTreeState=clean"
done
# kwokctl defaults --kube-version (and the flags it gives each component) to
# this; keep it equal to the Kubernetes binaries built here.
kwok_ldflags="-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBE_VERSION#v}"

tmp="$(mktemp -d "$DIR/.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

start_all=$SECONDS
for mod in . kwok prometheus helm; do
	names=()
	pkgs=()
	while IFS= read -r entry; do
		[ -n "$entry" ] || continue
		rest="${entry#*|}"
		[ "${rest%%|*}" = "$mod" ] || continue
		names+=("${entry%%|*}")
		pkgs+=("${rest#*|}")
	done <<<"$todo"
	[ "${#names[@]}" -gt 0 ] || continue

	tags=""
	case "$mod" in
	.) ldflags="-s -w $kube_ldflags" ;;
	kwok) ldflags="-s -w $kwok_ldflags" ;;
	prometheus)
		ldflags="-s -w -X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION"
		# Only the static, file and http service discoveries (tests scrape
		# local processes): skipping the cloud SDKs halves the build. Add
		# enable_kubernetes_sd (etc.) here if a test needs one.
		tags="remove_all_sd"
		;;
	helm) ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" ;;
	esac

	for i in "${!names[@]}"; do
		name="${names[$i]}"
		pkg="${pkgs[$i]}"
		log "building $name (first run only, a few minutes)..."
		t0=$SECONDS
		# One binary per go build: progress per binary; the shared packages
		# come from the build cache after the first one.
		(cd "$TOOLS/$mod" && "$GO" build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$tmp/$name" "$pkg") ||
			die "building $name ($pkg in hack/tools/$mod) failed"
		mv -f "$tmp/$name" "$BIN/$name"
		log "built $name in $((SECONDS - t0))s"
	done
done
log "all tools ready in $BIN ($((SECONDS - start_all))s)"
echo "$BIN"
