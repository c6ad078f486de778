#!/bin/bash
# Real podman 4.3 (runc, CONSUMERS.md §1) consumes the CDI spec cri
# publishes.  The supervisor runs gpudriver, pcibus and cri into a temp
# host root whose /var/run is a link to /run (the spec must land in
# <root>/run/cdi, never in this machine's /run/cdi).  podman's spec
# directories are fixed to /etc/cdi and /var/run/cdi, so it runs in a
# private mount namespace where /etc, /run and /var/lib are overlays (its
# writes land in $T) with the staged spec directory and the mock tree bound
# where the spec's host paths point.  A busybox image that also carries
# lspci and glibc runs with --device nvidia.com/gpu=0, =all and =<UUID>:
# /dev/nvidia<minor> is the right char device, the real nvidia-smi mounted
# over the mounted mock library lists exactly the requested GPUs, and
# lspci sees the GPUs through the sysfs mounts.
#
# Skips (77) only without root, podman/runc/busybox (scripts/install-deps.sh)
# or the unpacked nvidia-smi (scripts/fetch-consumers.sh).
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in podman runc conmon busybox lspci unshare; do
	command -v "$t" >/dev/null || { echo "SKIP: $t missing (scripts/install-deps.sh)"; exit 77; }
done
[ -x "${MOKKA_NVIDIA_SMI:-}" ] || { echo "SKIP: no nvidia-smi (scripts/fetch-consumers.sh)"; exit 77; }
grep -qw overlay /proc/filesystems || { echo "SKIP: no overlayfs"; exit 77; }

NGPU=4
mkdir -p "$ROOT/var"
ln -s /run "$ROOT/var/run"
real_cdi_before=$(ls -la /run/cdi /etc/cdi 2>&1)
cgroups_before=$(ls -d /sys/fs/cgroup/*/libpod_parent 2>/dev/null)
export GPU_COUNT=$NGPU
start_supervisor --simulators gpudriver,pcibus,cri --container-runtime none
wait_for 30 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"

SPEC=$ROOT/run/cdi/nvidia.yaml
check "nvidia.yaml written through <root>/var/run -> /run into <root>/run/cdi" test -f "$SPEC"
check "nvml-mock-nri.yaml written beside it" test -f "$ROOT/run/cdi/nvml-mock-nri.yaml"
check "this machine's /run/cdi and /etc/cdi untouched" [ "$(ls -la /run/cdi /etc/cdi 2>&1)" = "$real_cdi_before" ]
check "cdiVersion 0.5.0 (podman 4.3 refuses 0.6.0)" grep -qx 'cdiVersion: "0.5.0"' "$SPEC"
check "no host path carries the host-root prefix" sh -c "! grep -q '$ROOT' '$ROOT'/run/cdi/*.yaml"
UUID2=$(awk '/name: "GPU-/ { gsub(/"/, "", $3); print $3 }' "$SPEC" | sed -n 3p)
MINOR2=$(grep -A4 "name: \"$UUID2\"" "$SPEC" | sed -n 's|.*path: "/dev/nvidia\([0-9]*\)".*|\1|p' | head -1)
[ -n "$UUID2" ] && [ -n "$MINOR2" ] || die "no UUID entry for the third GPU in $SPEC"

# The image: busybox, lspci and the glibc pieces lspci and nvidia-smi need.
. "$(dirname "$0")/../podman_lib.sh"
podman_image mokka-cri-test "sh ls cat echo head true stat grep wc readlink env" \
	"$(command -v lspci)" "$MOKKA_NVIDIA_SMI"
podman_in_ns <<EOF
run() { # run NAME DEVICE
	\$P run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 \\
		--device "\$2" localhost/mokka-cri-test sh -c '
		echo "nodes: \$(ls /dev | grep "^nvidia[0-9]" | sort | tr "\n" " ")"
		for n in /dev/nvidia[0-9]*; do echo "node: \$n \$(stat -c "%F %t:%T" \$n)"; done
		/usr/bin/nvidia-smi -L
		echo "lspci: \$(lspci -n -d 10de: | wc -l)"
		echo "pcidevs: \$(ls /sys/bus/pci/devices | wc -l)"
		echo "modules: \$(ls /sys/module | tr "\n" " ")"
	' > "$T/out.\$1" 2>&1
	echo "rc=\$?" >> "$T/out.\$1"
}
run gpu0 nvidia.com/gpu=0
run all nvidia.com/gpu=all
run uuid "nvidia.com/gpu=$UUID2"
\$P --log-level debug run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 \\
	--device nvidia.com/gpu=9 localhost/mokka-cri-test true > "$T/out.missing" 2>&1
echo "rc=\$?" >> "$T/out.missing"
EOF

show() { sed 's/^/#   /' "$T/out.$1"; }

note "--device nvidia.com/gpu=0:"; show gpu0
check "=0: container ran" grep -qx 'rc=0' "$T/out.gpu0"
check "=0: only /dev/nvidia0" grep -qx 'nodes: nvidia0 ' "$T/out.gpu0"
check "=0: /dev/nvidia0 is char 195:0" grep -qx 'node: /dev/nvidia0 character special file c3:0' "$T/out.gpu0"
check "=0: nvidia-smi lists exactly one GPU" [ "$(grep -c '^GPU [0-9]' "$T/out.gpu0")" -eq 1 ]
UUID0=$(awk '/name: "GPU-/ { gsub(/"/, "", $3); print $3; exit }' "$SPEC")
check "=0: it is GPU 0 ($UUID0)" grep -q "UUID: $UUID0" "$T/out.gpu0"
check "=0: lspci sees the $NGPU GPUs through the sysfs mounts" grep -qx "lspci: $NGPU" "$T/out.gpu0"
check "=0: /sys/module shows the nvidia modules" grep -q 'modules: nvidia nvidia_drm nvidia_modeset nvidia_uvm' "$T/out.gpu0"

note "--device nvidia.com/gpu=all:"; show all
check "=all: container ran" grep -qx 'rc=0' "$T/out.all"
check "=all: nvidia-smi lists all $NGPU GPUs" [ "$(grep -c '^GPU [0-9]' "$T/out.all")" -eq "$NGPU" ]
check "=all: $NGPU GPU nodes" [ "$(grep -c '^node: /dev/nvidia[0-9]* character special file c3:' "$T/out.all")" -eq "$NGPU" ]

note "--device nvidia.com/gpu=$UUID2:"; show uuid
check "=UUID: container ran" grep -qx 'rc=0' "$T/out.uuid"
check "=UUID: only /dev/nvidia$MINOR2" grep -qx "nodes: nvidia$MINOR2 " "$T/out.uuid"
check "=UUID: /dev/nvidia$MINOR2 is char 195:$MINOR2" \
	grep -qx "node: /dev/nvidia$MINOR2 character special file c3:$(printf %x "$MINOR2")" "$T/out.uuid"
check "=UUID: nvidia-smi lists exactly that GPU" \
	sh -c "[ \$(grep -c '^GPU [0-9]' '$T/out.uuid') -eq 1 ] && grep -q 'UUID: $UUID2' '$T/out.uuid'"
check "an unknown device is refused (=9)" sh -c "! grep -qx 'rc=0' '$T/out.missing' && grep -q 'unresolvable CDI devices nvidia.com/gpu=9' '$T/out.missing'"
check "podman loaded the spec without complaint" sh -c "! grep -q 'failed to load CDI Spec\|refreshing the CDI registry' '$T/out.missing'"
check "no libpod cgroups left behind" sh -c "[ \"\$(ls -d /sys/fs/cgroup/*/libpod_parent 2>/dev/null)\" = '$cgroups_before' ]"

kill -TERM "$SUP_PID"
wait_for 20 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit"
SUP_PID=
check "Revoke removed nvidia.yaml" test ! -e "$SPEC"
check "Revoke removed nvml-mock-nri.yaml" test ! -e "$ROOT/run/cdi/nvml-mock-nri.yaml"
finish
