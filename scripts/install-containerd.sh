#!/bin/bash
# containerd 2.x and 1.7 (Debian 12 ships 1.6, which drops enable_cdi and
# the NRI table silently), built from the Go module proxy at pinned
# versions into /var/cache/mokka/go/bin/containerd-<version>/ (containerd,
# ctr, containerd-shim-runc-v2; CGO off, no btrfs) and crictl into
# cri-tools-<version>/: called by scripts/install-deps.sh, used by
# tests/integration/cri_containerd2.sh and nri_containerd.sh.
# A version already built is not rebuilt.  2.x builds with `go install`;
# 1.7's go.mod has exclude directives, which `go install pkg@version`
# refuses, so its module is fetched with `go mod download` (the proxy
# serves it like any module) and built with `go build` in place.
set -eu
C=${MOKKA_GO_CACHE:-/var/cache/mokka/go}
CONTAINERD2=v2.2.9
CONTAINERD17=v1.7.30
CRICTL=v1.34.0		# sigs.k8s.io/cri-tools: the CRI client of nri_containerd.sh
export GOMODCACHE=$C/mod GOCACHE=$C/build GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOTOOLCHAIN=local
say() { echo "install-containerd: $*"; }

GO=
for g in "${MOKKA_GO:-}" /usr/local/go/bin/go "$(command -v go 2>/dev/null || :)"; do
	[ -n "$g" ] && [ -x "$g" ] || continue
	v=$("$g" env GOVERSION 2>/dev/null) || continue
	v=${v#go}
	[ "${v%%.*}" -gt 1 ] || [ "$(echo "$v" | cut -d. -f2)" -ge 23 ] && { GO=$g; break; }
done
if [ -z "$GO" ]; then
	tc=golang.org/toolchain@v0.0.1-go1.24.6.linux-$(dpkg --print-architecture)
	command -v go >/dev/null || apt-get install -y -q --no-install-recommends golang-go
	dir=$(cd /tmp && GOFLAGS=-modcacherw go mod download -json "$tc" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	GO=$dir/bin/go
fi

built() { [ -x "$1/containerd" ] && [ -x "$1/ctr" ] && [ -x "$1/containerd-shim-runc-v2" ]; }

out=$C/bin/containerd-$CONTAINERD2
if ! built "$out"; then
	say "building containerd $CONTAINERD2 (a few minutes)"
	start=$(date +%s)
	m=github.com/containerd/containerd/v2/cmd
	(cd /tmp && GOBIN=$out nice -n 10 "$GO" install -tags no_btrfs "$m/containerd@$CONTAINERD2" \
		"$m/ctr@$CONTAINERD2" "$m/containerd-shim-runc-v2@$CONTAINERD2")
	say "containerd $CONTAINERD2 built in $(( $(date +%s) - start )) s"
fi

out=$C/bin/containerd-$CONTAINERD17
if ! built "$out"; then
	say "building containerd $CONTAINERD17 (a few minutes)"
	start=$(date +%s)
	dir=$(cd /tmp && "$GO" mod download -json "github.com/containerd/containerd@$CONTAINERD17" |
		sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	mkdir -p "$out"
	for c in containerd ctr containerd-shim-runc-v2; do
		(cd "$dir" && nice -n 10 "$GO" build -tags no_btrfs -o "$out/$c" "./cmd/$c")
	done
	say "containerd $CONTAINERD17 built in $(( $(date +%s) - start )) s"
fi

out=$C/bin/cri-tools-$CRICTL
if ! [ -x "$out/crictl" ]; then
	say "building crictl $CRICTL"
	start=$(date +%s)
	(cd /tmp && GOBIN=$out nice -n 10 "$GO" install "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL")
	say "crictl $CRICTL built in $(( $(date +%s) - start )) s"
fi
