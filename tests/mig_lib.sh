# The common start of the MIG integration tests over a driver root staged by
# mokka-worker-gpudriver and the real nvidia-smi 535 (mig_nvidia_smi.sh,
# mig_layout.sh, mig_reset.sh): sourced, POSIX sh.
B=${MOKKA_BUILDDIR:?}
S=${MOKKA_SRCDIR:?}
CONSUMERS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
SMI_SRC=${MOKKA_NVIDIA_SMI:-$CONSUMERS/nvidia-smi/usr/bin/nvidia-smi}
WORKER=$B/mokka-worker-gpudriver
rc=0
fail() { echo "FAIL: $*"; rc=1; }
pass() { echo "ok: $*"; }
check() { _d=$1; shift; if "$@"; then pass "$_d"; else fail "$_d"; fi; }

# mig_start NAME: skips (77) only without root or nvidia-smi; exports the
# library and nvidia-smi the worker stages; makes $TMP (removed at exit)
# and enters it.
mig_start() {
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
	[ -x "$SMI_SRC" ] || { echo "SKIP: no nvidia-smi at $SMI_SRC (run scripts/fetch-consumers.sh)"; exit 77; }
	[ -x "$WORKER" ] || { echo "FAIL: $WORKER not built"; exit 1; }
	export MOKKA_PKGLIBDIR=${MOKKA_PKGLIBDIR:-$B/.libs} MOKKA_NVIDIA_SMI=$SMI_SRC
	TMP=$(mktemp -d "/tmp/mokka-$1-XXXXXX") || exit 1
	trap 'rm -rf "$TMP"' EXIT INT TERM
	cd "$TMP" || exit 1
}

# need_pyyaml: the profile edits use python3-yaml ($PY).
need_pyyaml() {
	"${PY:=/usr/bin/python3}" -c 'import yaml' 2>/dev/null ||
		{ echo "FAIL: python3-yaml missing (scripts/install-deps.sh)"; exit 1; }
}
