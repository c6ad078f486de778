#!/bin/bash
# NVIDIA's k8s-device-plugin (the release pinned in tests/go/versions.env,
# built by scripts/install-deps.sh) against a kubelet of ours:
# tests/go/kubeletharness serves the device-plugin Registration API
# (v1beta1) on a socket in a temp dir, dials the plugin back, follows
# ListAndWatch and calls Allocate.  The node: the supervisor's gpudriver
# (built-in profile, 8x H100) in a temp host root; the plugin loads the
# mock NVML from the staged driver root (--driver-root).  Its own socket is
# fixed at /var/lib/kubelet/device-plugins/, so it runs in a private mount
# namespace with that directory bound to the temp dir.
#  * it registers nvidia.com/gpu and advertises 8 healthy GPUs, IDs = the
#    profile's UUIDs;
#  * Allocate of GPUs 0 and 2 answers NVIDIA_VISIBLE_DEVICES=<uuid0>,<uuid2>
#    (the default envvar list strategy);
#  * `mokka-ctl --gpu 2 xid 79` makes it report GPU 2, and only GPU 2,
#    unhealthy within its health-check loop (NVML Xid events).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nvidia_stack_lib.sh"

[ "$(id -u)" -eq 0 ] || die "needs root"
command -v unshare >/dev/null || die "unshare missing"
DP=$(nv_need nvidia-device-plugin)
nv_build kubeletharness "$T/kubeletharness"

start_supervisor --simulators gpudriver --container-runtime none
wait_for 30 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"
DR=$ROOT$R/driver
mapfile -t UUIDS < <(sed -n 's/^ *uuid: *"\(GPU-[^"]*\)".*/\1/p' "$DR/config/config.yaml")
[ "${#UUIDS[@]}" -eq 8 ] || die "expected 8 GPU UUIDs in the staged config, got ${#UUIDS[@]}"

mkdir -p "$T/dp"
"$T/kubeletharness" -socket "$T/dp/kubelet.sock" -allocate "${UUIDS[0]},${UUIDS[2]}" \
	-until "unhealthy:${UUIDS[2]}" -timeout 90s -ready-file "$T/allocated" > "$T/harness.log" 2>&1 &
HPID=$!
wait_for 10 test -S "$T/dp/kubelet.sock" || die "the harness never listened"
cat > "$T/ns.sh" <<NSEOF
mkdir -p "$T/ov/up" "$T/ov/work"
mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$T/ov/up,workdir=$T/ov/work" /var/lib || exit 90
mkdir -p /var/lib/kubelet/device-plugins
mount --bind "$T/dp" /var/lib/kubelet/device-plugins || exit 91
exec env -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES LD_LIBRARY_PATH="$DR/usr/lib64" \
	"$DP" --driver-root="$DR" --fail-on-init-error=true --kubelet-socket="$T/dp/kubelet.sock"
NSEOF
unshare -m --propagation private bash "$T/ns.sh" > "$T/plugin.log" 2>&1 &
PPID_=$!
stop_all() {
	kill -TERM "$PPID_" "$HPID" 2>/dev/null
	wait "$PPID_" "$HPID" 2>/dev/null
}
if ! wait_for 60 test -e "$T/allocated"; then
	stop_all
	sed 's/^/#   /' "$T/harness.log"; tail -20 "$T/plugin.log" | sed 's/^/#   /'
	die "the plugin never registered and listed its devices"
fi
"$B/mokka-ctl" --host-root "$ROOT" --gpu 2 xid 79 > "$T/ctl.log" 2>&1 || fail "mokka-ctl xid 79: $(cat "$T/ctl.log")"
wait "$HPID"; hrc=$?
HPID=
stop_all
sed 's/^/#   /' "$T/harness.log"

all=$(printf '%s\n' "${UUIDS[@]}" | sort | paste -sd,)
check "registered nvidia.com/gpu over v1beta1 at nvidia-gpu.sock" \
	grep -qx 'register version=v1beta1 endpoint=nvidia-gpu.sock resource=nvidia.com/gpu' "$T/harness.log"
check "first ListAndWatch: 8 healthy GPUs, the profile's UUIDs" \
	grep -q "^devices nvidia.com/gpu healthy=8 unhealthy= total=8 ids=$all\$" "$T/harness.log"
check "Allocate(GPU 0, GPU 2) answers NVIDIA_VISIBLE_DEVICES=<uuid0>,<uuid2>" \
	grep -q "^allocate .*\"NVIDIA_VISIBLE_DEVICES\":\"${UUIDS[0]},${UUIDS[2]}\"" "$T/harness.log"
check "after xid 79 on GPU 2 the plugin reports exactly GPU 2 unhealthy" \
	sh -c "[ $hrc -eq 0 ] && grep -q '^devices nvidia.com/gpu healthy=7 unhealthy=${UUIDS[2]} total=8' '$T/harness.log'"
check "the plugin logged the Xid" grep -q 'Xid=79' "$T/plugin.log"
[ "$FAILS" -eq 0 ] || tail -30 "$T/plugin.log" | sed 's/^/#   /'
finish
