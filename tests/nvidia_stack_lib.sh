# Shared helpers for the NVIDIA Go stack tests (tests/integration/nvidia_*.sh),
# sourced after tests/lib.sh.  NVIDIA's programs are built once, at the
# versions pinned in tests/go/versions.env, by scripts/install-deps.sh into
# $MOKKA_GO_CACHE/bin; our own Go harnesses (tests/go) are built here from
# the same module and build caches, offline (GOPROXY=off: install-deps has
# downloaded every module), which takes a second or two once cached.
. "$S/tests/go/versions.env"

: "${MOKKA_GO_CACHE:=/var/cache/mokka/go}"
export GOMODCACHE=$MOKKA_GO_CACHE/mod GOCACHE=$MOKKA_GO_CACHE/build GOPROXY=off
export GOFLAGS="-buildvcs=false -mod=readonly" GOTOOLCHAIN=local
export CGO_CFLAGS="-O2 -Wno-deprecated-declarations"
NVBIN=$MOKKA_GO_CACHE/bin

# nv_go: the Go toolchain install-deps chose (Go >= 1.24; it links it as
# $MOKKA_GO_CACHE/go).
nv_go() {
	local g
	for g in "${MOKKA_GO:-}" "$MOKKA_GO_CACHE/go" /usr/local/go/bin/go "$(command -v go 2>/dev/null)"; do
		[ -n "$g" ] && [ -x "$g" ] && { echo "$g"; return 0; }
	done
	return 1
}

# nv_build PKG OUT: build tests/go/PKG (a harness of ours) into OUT.
nv_build() {
	local go
	go=$(nv_go) || die "no Go toolchain (scripts/install-deps.sh)"
	(cd "$S/tests/go" && nice -n 10 "$go" build -o "$2" "./$1") > "$T/gobuild.$1.log" 2>&1 ||
		{ sed 's/^/# /' "$T/gobuild.$1.log" | tail -20; die "go build ./tests/go/$1 failed"; }
}

# nv_need NAME: NVIDIA's program NAME as install-deps built it.
nv_need() {
	[ -x "$NVBIN/$1" ] || die "$NVBIN/$1 missing (scripts/install-deps.sh builds it)"
	echo "$NVBIN/$1"
}

# nv_mig_layouts PROFILE DIR SMALL MID LARGE: PROFILE with declared MIG
# layouts for the device plugin's and GFD's strategies: DIR/single.yaml
# (every GPU 7 x SMALL) and DIR/mixed.yaml (GPU 0: 3 x SMALL + 2 x MID,
# GPU 1: 2 x LARGE, the rest whole).
nv_mig_layouts() {
	/usr/bin/python3 - "$@" <<'PYEOF'
import sys, yaml
src, out, small, mid, large = sys.argv[1:6]
p = yaml.safe_load(open(src))
for d in p["devices"]:
    d["mig"] = {"mig-enabled": True, "mig-devices": {small: 7}}
yaml.safe_dump(p, open(out + "/single.yaml", "w"))
p = yaml.safe_load(open(src))
p["devices"][0]["mig"] = {"mig-enabled": True, "mig-devices": {small: 3, mid: 2}}
p["devices"][1]["mig"] = {"mig-enabled": True, "mig-devices": {large: 2}}
yaml.safe_dump(p, open(out + "/mixed.yaml", "w"))
PYEOF
}
