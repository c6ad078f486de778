# Shared by the pci_*.sh tests (sourced after ../lib.sh): a node staged by
# the pcibus, ib and gpudriver workers under $ROOT, mokka-pcifs serving it,
# and `x CMD...` running CMD through `mokka-ctl exec` (a private mount
# namespace with the node at the real paths; no LD_PRELOAD).
[ "$(id -u)" = 0 ] || { note "needs root (mounts, device nodes)"; exit 77; }
[ -e /dev/fuse ] || { echo "FAIL: /dev/fuse missing"; exit 1; }
for t in lspci driverctl busybox python3; do
	command -v "$t" >/dev/null || { echo "FAIL: $t missing (scripts/install-deps.sh)"; exit 1; }
done
NODE=$ROOT$R
VIEW=$NODE/run/pcifs
PCIFS_PID=

stage_node() { # stage_node [PROFILE]
	local p=${1:-$S/etc/profiles/h100.yaml} w
	for w in pcibus ib gpudriver; do
		MOKKA_PKGLIBDIR=$B/.libs "$B/mokka-worker-$w" --host-root "$ROOT" --config "$p" \
			--log-level warn stage > "$T/stage-$w.log" 2>&1 || die "$w stage: $(cat "$T/stage-$w.log")"
	done
	mkdir -p "$NODE/run"
}

mounted() { grep -q " $VIEW fuse" /proc/self/mounts; }

start_pcifs() {
	"$B/mokka-pcifs" --host-root "$ROOT" --mock-root "$R" >> "$T/pcifs.log" 2>&1 &
	PCIFS_PID=$!
	wait_for 20 sh -c "grep -q ' $VIEW fuse' /proc/self/mounts && [ -e '$VIEW/sys/bus/pci/devices' ]" ||
		die "mokka-pcifs did not mount $VIEW: $(tail -5 "$T/pcifs.log")"
}

stop_pcifs() {
	[ -n "$PCIFS_PID" ] || return 0
	kill -TERM "$PCIFS_PID" 2>/dev/null
	wait "$PCIFS_PID" 2>/dev/null
	PCIFS_PID=
}

pci_cleanup() {
	stop_pcifs
	# A test that failed half-way: never leave a mount in /tmp.
	mounted && umount -l "$VIEW"
	cleanup
}
trap pci_cleanup EXIT

x() { "$B/mokka-ctl" --host-root "$ROOT" exec -- "$@"; }

# The kernel's errno of one write, by name: werr FILE VALUE -> "ENODEV"/"OK".
werr() {
	x python3 -c '
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY)
    os.write(fd, sys.argv[2].encode()); print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])
' "$1" "$2"
}

drv_of() { # drv_of BDF -> driver name or "none"
	local l
	l=$(x readlink "/sys/bus/pci/devices/$1/driver") && echo "${l##*/}" || echo none
}

# GPUs the mock NVML shows (the real nvidia-smi gpudriver staged), or "" without it.
SMI=$NODE/driver/usr/bin/nvidia-smi
nvml_count() { x "$SMI" -L 2>/dev/null | grep -c '^GPU '; }
