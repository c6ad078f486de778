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
#    unhealthy within its health-check loop (NVML Xid events);
#  * MIG (a100 with declared layouts, staged by gpudriver; the plugin reads
#    the MIG capability files under /proc/driver/nvidia, so the staged ones
#    are bound there): --mig-strategy=single with every GPU 7 x 1g.5gb
#    advertises 56 nvidia.com/gpu; --mig-strategy=mixed with GPU 0
#    {1g.5gb: 3, 2g.10gb: 2} and GPU 1 {3g.20gb: 2} advertises 6
#    nvidia.com/gpu, 3 nvidia.com/mig-1g.5gb, 2 mig-2g.10gb, 2 mig-3g.20gb,
#    all healthy (its health check finds each MIG device by its UUID).
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
stop_supervisor

# ---- MIG strategies over declared layouts
nv_mig_layouts "$S/etc/profiles/a100.yaml" "$T" 1g.5gb 2g.10gb 3g.20gb
mig_run() { # mig_run STRATEGY NRESOURCES: stage $T/STRATEGY.yaml, list what the plugin advertises
	local st=$1 h=$T/mig-$1 d=$T/dp-$1 dr
	dr=$h$R/driver
	mkdir -p "$h" "$d"
	MOKKA_PKGLIBDIR=$B/.libs "$B/mokka-worker-gpudriver" --host-root "$h" --config "$T/$st.yaml" stage \
		> "$T/stage-$st.log" 2>&1 || { sed 's/^/#   /' "$T/stage-$st.log"; fail "$st: staging"; return; }
	"$T/kubeletharness" -socket "$d/kubelet.sock" -list-only "$2" -timeout 60s > "$T/harness-$st.log" 2>&1 &
	HPID=$!
	wait_for 10 test -S "$d/kubelet.sock" || { fail "$st: the harness never listened"; return; }
	cat > "$T/ns-$st.sh" <<NSEOF
mkdir -p "$T/ov-$st/up" "$T/ov-$st/work"
mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$T/ov-$st/up,workdir=$T/ov-$st/work" /var/lib || exit 90
mkdir -p /var/lib/kubelet/device-plugins
mount --bind "$d" /var/lib/kubelet/device-plugins || exit 91
mount -t tmpfs none /proc/driver && mkdir /proc/driver/nvidia /proc/driver/nvidia-caps || exit 92
mount --bind "$dr/proc/driver/nvidia" /proc/driver/nvidia || exit 93
mount --bind "$dr/proc/driver/nvidia-caps" /proc/driver/nvidia-caps || exit 94
exec env -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES LD_LIBRARY_PATH="$dr/usr/lib64" \
	"$DP" --driver-root="$dr" --fail-on-init-error=true --kubelet-socket="$d/kubelet.sock" --mig-strategy=$st
NSEOF
	unshare -m --propagation private bash "$T/ns-$st.sh" > "$T/plugin-$st.log" 2>&1 &
	PPID_=$!
	wait "$HPID" || fail "$st: the harness: $(tail -1 "$T/harness-$st.log")"
	HPID=
	sleep 3		# the health check starts once the plugins serve: let it judge
	stop_all
	note "--mig-strategy=$st:"; sed 's/^/#   /' "$T/harness-$st.log"
	check "$st: no device marked unhealthy" sh -c "! grep -q 'marked unhealthy' '$T/plugin-$st.log'"
	[ "$FAILS" -eq 0 ] || grep -v '^ \|^[{}]' "$T/plugin-$st.log" | tail -15 | sed 's/^/#   /'
}
mig_run single 1
check "single: 56 healthy nvidia.com/gpu (8 GPUs x 7 x 1g.5gb)" \
	grep -qx 'devices nvidia.com/gpu healthy=56 total=56' "$T/harness-single.log"
mig_run mixed 4
for r in "gpu healthy=6 total=6" "mig-1g.5gb healthy=3 total=3" "mig-2g.10gb healthy=2 total=2" \
	"mig-3g.20gb healthy=2 total=2"; do
	check "mixed: nvidia.com/$r" grep -qx "devices nvidia.com/$r" "$T/harness-mixed.log"
done
finish
