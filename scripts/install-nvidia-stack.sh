#!/bin/bash
# Build NVIDIA's Go programs Mokka is tested against, unmodified, at the
# versions pinned in tests/go/versions.env, from the Go module proxy (and
# nvidia-ml-py from PyPI): called by scripts/install-deps.sh.  Everything
# lands in a fixed cache so CI builds each program once and reuses Go's
# build cache afterwards:
#   /var/cache/mokka/go/bin     nvidia-ctk, nvidia-container-runtime,
#                               nvidia-cdi-hook, nvidia-device-plugin,
#                               gpu-feature-discovery, helm
#   /var/cache/mokka/go/{mod,build}   GOMODCACHE, GOCACHE (the harnesses
#                               in tests/go build from these offline)
#   /var/cache/mokka/venv-nvml  a venv with nvidia-ml-py
# A program whose pinned version is already built is not rebuilt (stamp
# files in bin/.stamp).  Needs Go >= 1.24 (k8s-device-plugin v0.18.0):
# /usr/local/go, go on PATH, or else Debian's golang-go fetching the
# golang.org/toolchain module; $C/go links to the one chosen, which the
# tests use (tests/nvidia_stack_lib.sh).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tests/go/versions.env"
C=${MOKKA_GO_CACHE:-/var/cache/mokka/go}
export GOBIN=$C/bin GOMODCACHE=$C/mod GOCACHE=$C/build GOFLAGS=-buildvcs=false
export CGO_CFLAGS="-O2 -Wno-deprecated-declarations" GOTOOLCHAIN=local
mkdir -p "$GOBIN/.stamp"
say() { echo "install-nvidia-stack: $*"; }

go_ok() { # go_ok GO: a Go of at least 1.24
	local v
	v=$("$1" env GOVERSION 2>/dev/null) || return 1
	v=${v#go}
	[ "${v%%.*}" -gt 1 ] || [ "$(echo "$v" | cut -d. -f2)" -ge 24 ]
}
GO=
for g in "${MOKKA_GO:-}" /usr/local/go/bin/go "$(command -v go 2>/dev/null || :)"; do
	[ -n "$g" ] && [ -x "$g" ] && go_ok "$g" && { GO=$g; break; }
done
if [ -z "$GO" ]; then
	# Debian 12's Go (1.19) is too old to build these; it can still fetch
	# a newer toolchain, which the proxy serves as an ordinary module (the
	# zip keeps no mode bits: the go command's own switch sets them too).
	tc=golang.org/toolchain@v0.0.1-go1.27.3.linux-$(dpkg --print-architecture)
	command -v go >/dev/null || apt-get install -y -q --no-install-recommends golang-go
	dir=$(cd /tmp && GOFLAGS=-modcacherw go mod download -json "$tc" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/*
	GO=$dir/bin/go
	go_ok "$GO" || { say "no Go >= 1.24 (tried $tc)"; exit 1; }
fi
ln -sfn "$GO" "$C/go"
say "Go: $GO ($("$GO" env GOVERSION))"

built() { [ -x "$GOBIN/$1" ] && [ "$(cat "$GOBIN/.stamp/$1" 2>/dev/null)" = "$2" ]; }
stamp() { echo "$2" > "$GOBIN/.stamp/$1"; }
timed() { # timed NAME VERSION COMMAND...
	local n=$1 v=$2 s
	shift 2
	built "$n" "$v" && return 0
	s=$(date +%s)
	nice -n 10 "$@"
	stamp "$n" "$v"
	say "$n $v built in $(( $(date +%s) - s )) s"
}

# NVIDIA Container Toolkit: go install at the pinned release.
for c in nvidia-ctk nvidia-container-runtime nvidia-cdi-hook; do
	timed "$c" "$NVIDIA_CTK_VERSION" "$GO" install "$NVIDIA_CTK_MODULE/cmd/$c@$NVIDIA_CTK_VERSION"
done
# k8s-device-plugin: `go install @version` is refused (the proxy answers
# 403 to the module's version list, which go install reads for
# deprecations), so a module of ours requiring only the release builds its
# two programs (one dependency set: the second build reuses the first's
# packages from the build cache).
for c in nvidia-device-plugin gpu-feature-discovery; do
	(cd "$top/tests/go/k8s-device-plugin" &&
		timed "$c" "$K8S_DEVICE_PLUGIN_VERSION" "$GO" build \
			-o "$GOBIN/$c" "$K8S_DEVICE_PLUGIN_MODULE/cmd/$c")
done
# helm, for the chart test.
timed helm "$HELM_VERSION" "$GO" install "$HELM_MODULE/cmd/helm@$HELM_VERSION"
# Our harnesses' modules, downloaded and built once (the tests rebuild
# offline from these caches in a second or two).
(cd "$top/tests/go" && "$GO" mod download && nice -n 10 "$GO" build ./... )

# nvidia-ml-py from PyPI in a venv of Debian's python3 (the pynvml test
# runs once over Debian's python3-pynvml and once over this).
V=/var/cache/mokka/venv-nvml
if ! "$V/bin/python3" -c "import importlib.metadata as m; assert m.version('nvidia-ml-py') == '$NVIDIA_ML_PY_VERSION'" 2>/dev/null; then
	command -v /usr/bin/python3 >/dev/null
	/usr/bin/python3 -m venv --system-site-packages "$V" ||
		{ apt-get install -y -q --no-install-recommends python3-venv && /usr/bin/python3 -m venv --system-site-packages "$V"; }
	"$V/bin/pip" install -q "nvidia-ml-py==$NVIDIA_ML_PY_VERSION"
	say "nvidia-ml-py $NVIDIA_ML_PY_VERSION in $V"
fi
