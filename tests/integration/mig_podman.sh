#!/bin/bash
# A MIG device through CDI to real podman 4.3 (runc), as cri_podman.sh does
# for whole GPUs: the supervisor runs gpudriver, pcibus and cri into a temp
# host root; the real nvidia-smi on the node enables MIG on GPU 0 and
# creates two 1g instances with compute instances; gpudriver notices (its
# watcher) and publishes /var/run/cdi/mokka-mig.yaml with "0:0", "0:1" and
# MIG- UUID entries.  podman run --device nvidia.com/gpu=0:1 gets
# /dev/nvidia0 and exactly that MIG device's two nvidia-cap nodes (char
# devices of the nvidia-caps major), and nvidia-smi -L inside lists that
# MIG device (its UUID) and not the other.  A gpudriver worker killed
# with SIGKILL comes back and the instances, the spec and the watching
# survive; destroying the instances withdraws the entries; Revoke removes
# the spec and Discard the store.
#
# Skips (77) only without root, podman/runc/busybox (scripts/install-deps.sh)
# or the unpacked nvidia-smi (scripts/fetch-consumers.sh).
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in podman runc conmon busybox unshare; do
	command -v "$t" >/dev/null || { echo "SKIP: $t missing (scripts/install-deps.sh)"; exit 77; }
done
: "${MOKKA_NVIDIA_SMI:=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}/nvidia-smi/usr/bin/nvidia-smi}"
export MOKKA_NVIDIA_SMI
[ -x "$MOKKA_NVIDIA_SMI" ] || { echo "SKIP: no nvidia-smi (scripts/fetch-consumers.sh)"; exit 77; }
grep -qw overlay /proc/filesystems || { echo "SKIP: no overlayfs"; exit 77; }

mkdir -p "$ROOT/var"
ln -s /run "$ROOT/var/run"
export GPU_COUNT=2
start_supervisor --simulators gpudriver,pcibus,cri --container-runtime none
wait_for 30 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"

DR=$ROOT/var/lib/nvml-mock/driver
SMI=$DR/usr/bin/nvidia-smi
MIGSPEC=$ROOT/run/cdi/mokka-mig.yaml
(cd "$T" && "$SMI" -i 0 -mig 1 && "$SMI" mig -i 0 -cgi 19,19 -C) > "$T/create.log" 2>&1 ||
	die "nvidia-smi could not create the instances: $(cat "$T/create.log")"
check "the MIG CDI spec appears with 0:0 and 0:1" \
	wait_for 15 sh -c "grep -q 'name: \"0:1\"' '$MIGSPEC' && grep -q 'name: \"0:0\"' '$MIGSPEC'"
check "the MIG CDI spec is cdiVersion 0.5.0 (podman 4.3)" grep -qx 'cdiVersion: "0.5.0"' "$MIGSPEC"
(cd "$T" && "$SMI" -L) > "$T/list" 2>&1
MIG1=$(grep 'Device  1:' "$T/list" | sed 's/.*UUID: \(MIG-[^)]*\)).*/\1/')
MIG0=$(grep 'Device  0:' "$T/list" | sed 's/.*UUID: \(MIG-[^)]*\)).*/\1/')
[ -n "$MIG1" ] && [ -n "$MIG0" ] || die "nvidia-smi -L shows no two MIG devices: $(cat "$T/list")"
check "the spec names $MIG1 too" grep -q "name: $MIG1" "$MIGSPEC"
CAPS=$(grep -A6 'name: "0:1"' "$MIGSPEC" | sed -n 's|.*path: /dev/nvidia-caps/nvidia-cap\([0-9]*\),.*|\1|p' | tr '\n' ' ')
set -- $CAPS
[ $# -eq 2 ] || die "0:1 has no two cap nodes: $(cat "$MIGSPEC")"
GIMIN=$1 CIMIN=$2
check "the cap nodes exist on the node" test -c "$DR/dev/nvidia-caps/nvidia-cap$CIMIN"
check "mig-minors names them" grep -qx "gpu0/gi[0-9]*/ci0/access $CIMIN" "$DR/proc/driver/nvidia-caps/mig-minors"
check "capabilities/gpu0/mig/gi*/ci0/access says the minor" \
	sh -c "cat '$DR'/proc/driver/nvidia/capabilities/gpu0/mig/gi*/ci0/access | grep -qx 'DeviceFileMinor: $CIMIN'"

. "$(dirname "$0")/../podman_lib.sh"
podman_image mokka-mig-test "sh ls cat echo stat grep" "" "$MOKKA_NVIDIA_SMI"
podman_in_ns <<EOF
\$P run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 \\
	--device nvidia.com/gpu=0:1 localhost/mokka-mig-test sh -c '
	echo "nodes: \$(ls /dev | grep "^nvidia[0-9]" | tr "\n" " ")"
	echo "caps: \$(ls /dev/nvidia-caps | tr "\n" " ")"
	for n in /dev/nvidia-caps/*; do echo "cap: \$n \$(stat -c "%F" \$n)"; done
	/usr/bin/nvidia-smi -L
' > "$T/out.mig" 2>&1
echo "rc=\$?" >> "$T/out.mig"
EOF
note "--device nvidia.com/gpu=0:1:"; sed 's/^/#   /' "$T/out.mig"
check "=0:1: container ran" grep -qx 'rc=0' "$T/out.mig"
check "=0:1: /dev/nvidia0 only" grep -qx 'nodes: nvidia0 ' "$T/out.mig"
check "=0:1: exactly its two cap nodes" grep -qx "caps: nvidia-cap$GIMIN nvidia-cap$CIMIN " "$T/out.mig"
check "=0:1: they are char devices" [ "$(grep -c 'character special file' "$T/out.mig")" -eq 2 ]
check "=0:1: nvidia-smi inside lists that MIG device" grep -q "UUID: $MIG1" "$T/out.mig"
check "=0:1: and not the other one" sh -c "! grep -q 'UUID: $MIG0' '$T/out.mig'"

# A gpudriver worker killed and restarted by the supervisor: the store and
# the instances survive, and the new worker follows changes again.
gd_worker() {
	local p
	for p in $(pgrep -P "$SUP_PID"); do
		tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q 'mokka-worker-gpudriver' && echo "$p"
	done
}
old_gd=$(gd_worker)
[ -n "$old_gd" ] && kill -KILL "$old_gd"
new_gd() { local p; p=$(gd_worker); [ -n "$p" ] && [ "$p" != "$old_gd" ]; }
check "the killed gpudriver worker is restarted" wait_for 30 new_gd
check "its MIG devices survive the restart" sh -c "cd '$T' && '$SMI' -L | grep -q 'UUID: $MIG1'"
check "so does the MIG CDI spec" grep -q "name: $MIG1" "$MIGSPEC"
(cd "$T" && "$SMI" mig -i 0 -dci && "$SMI" mig -i 0 -dgi) > "$T/destroy.log" 2>&1
check "destroyed instances leave the spec (no MIG device: no spec)" wait_for 15 test ! -e "$MIGSPEC"
check "and their cap nodes" wait_for 5 test ! -e "$DR/dev/nvidia-caps/nvidia-cap$CIMIN"
(cd "$T" && "$SMI" mig -i 0 -cgi 19 -C) > "$T/create2.log" 2>&1
check "a new instance brings the spec back" wait_for 15 test -e "$MIGSPEC"
kill -TERM "$SUP_PID"
wait_for 20 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit"
SUP_PID=
check "Revoke removed the MIG CDI spec" test ! -e "$MIGSPEC"
check "Discard removed the device state store" test ! -e "$DR/config/state"
finish
