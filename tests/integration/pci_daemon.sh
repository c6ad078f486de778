#!/bin/bash
# mokka-pcifs under the supervisor: the pcibus row starts it (CAP_SYS_ADMIN
# only), it serves the published tree at R/run/pcifs in the supervisor's
# mount namespace, a SIGKILLed instance leaves no stale mount that blocks
# the next (the supervisor restarts it and the view answers again), a
# Reload keeps the bindings, and teardown unmounts and leaves the root as
# it was.  Then the same without the supervisor: kill -9, start again.
. "$(dirname "$0")/../lib.sh"
[ "$(id -u)" = 0 ] || { note "needs root"; exit 77; }
[ -e /dev/fuse ] || { echo "FAIL: /dev/fuse missing"; exit 1; }
VIEW=$ROOT$R/run/pcifs
G=0000:1a:00.0

cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
tree_snapshot "$ROOT" > "$T/before"
start_supervisor --config "$T/profile.yaml" --simulators pcibus,gpudriver,cri \
	--container-runtime none --node-name node-a
wait_for 30 is_code /readyz 200 || die "/readyz never 200: $(cat "$T/body")"
pcifs_pid() { pgrep -P "$SUP_PID" -f '^mokka-pcifs' | head -1; }
in_ns() { nsenter -t "$SUP_PID" -m -- "$@"; }
served() { in_ns sh -c "grep -q ' $VIEW fuse' /proc/self/mounts && [ -e '$VIEW/sys/bus/pci/devices/$G' ]"; }

check "mokka-pcifs runs under the supervisor" wait_for 10 sh -c "[ -n \"\$(pgrep -P $SUP_PID -f '^mokka-pcifs')\" ]"
p1=$(pcifs_pid)
check "capabilities: CAP_SYS_ADMIN only" [ "$(awk '/^CapEff/ { print $2 }' /proc/$p1/status)" = "$(printf '%016x' $(( (1<<21) & 16#$(awk '/^CapBnd/ { print $2 }' /proc/self/status) )))" ]
check "the view is mounted in the supervisor's namespace" wait_for 10 served
SPEC=$ROOT/var/run/cdi/nvidia.yaml
NFD=$ROOT/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features
# GPU 0's and 1's UUIDs as this node has them (the spec lists them in order).
wait_for 10 test -s "$SPEC" || fail "no CDI spec"
uuid0=$(grep -o '"GPU-[^"]*"' "$SPEC" | tr -d '"' | sed -n 1p)
uuid1=$(grep -o '"GPU-[^"]*"' "$SPEC" | tr -d '"' | sed -n 2p)
check "a write through it takes effect" in_ns sh -c "echo $G > '$VIEW/sys/bus/pci/drivers/nvidia/unbind' && [ ! -e '$VIEW/sys/bus/pci/devices/$G/driver' ]"
check "binding file: GPU 0 unbound" grep -qx "$G -" "$ROOT$R/driver/config/pci-drivers"
# The supervisor's next pass (SIGHUP from mokka-pcifs) re-renders the CDI
# spec and the NFD features without the GPU nvidia no longer holds, and the
# write returns only after it: checked at once, no waiting.
check "CDI spec dropped GPU 0 when unbind returned" sh -c "[ -n '$uuid0' ] && [ -s '$SPEC' ] && ! grep -q '$uuid0' '$SPEC' && grep -q '$uuid1' '$SPEC'"
check "NFD features: 7 GPUs when unbind returned" grep -qx mokka.gpu.count=7 "$NFD"
in_ns sh -c "echo $G > '$VIEW/sys/bus/pci/drivers/nvidia/bind' && grep -q '$uuid0' '$SPEC' && grep -qx mokka.gpu.count=8 '$NFD'" > "$T/bind.out" 2>&1
check "bind back: CDI spec has GPU 0, NFD 8 GPUs when bind returned" [ $? = 0 ]
in_ns sh -c "echo $G > '$VIEW/sys/bus/pci/drivers/nvidia/unbind'" || fail "unbind GPU 0 again"

# A profile edit: new pass, Reload (SIGHUP), the binding survives.
sed -i 's/^\(\s*driver_version:\).*/\1 "550.999.01"/' "$T/profile.yaml"
wait_for 15 sh -c "[ \"\$(curl -s 127.0.0.1:$PORT/metrics | awk '\$1==\"mokka_generation\"{print \$2}')\" = 2 ]" || fail "no generation 2"
check "same mokka-pcifs after Reload" [ "$(pcifs_pid)" = "$p1" ]
check "the unbind survived the Reload" in_ns sh -c "[ ! -e '$VIEW/sys/bus/pci/devices/$G/driver' ] && [ -e '$VIEW/sys/bus/pci/devices/$G' ]"

# SIGKILL: no stale mount blocks the restarted instance.
kill -KILL "$p1"
check "the supervisor restarts mokka-pcifs" wait_for 15 sh -c "p=\$(pgrep -P $SUP_PID -f '^mokka-pcifs'); [ -n \"\$p\" ] && [ \"\$p\" != $p1 ]"
check "the new instance serves the view (no stale mount)" wait_for 10 served
check "exactly one mount at the view" [ "$(in_ns grep -c " $VIEW fuse" /proc/self/mounts)" = 1 ]

stop_and_check_teardown "$(pcifs_pid)"

# Without the supervisor: kill -9, then start again at once.
for w in pcibus gpudriver; do
	MOKKA_PKGLIBDIR=$B/.libs "$B/mokka-worker-$w" --host-root "$ROOT" --config "$T/profile.yaml" \
		--log-level warn stage > /dev/null 2>&1 || fail "$w stage"
done
mkdir -p "$ROOT$R/run"
# Twice: the new mount API, then mount(2) onto /proc/self/fd/N, what
# kernels before 5.2 get (the test hook takes that path on any kernel).
for old in 0 1; do
how=$([ $old = 1 ] && echo "mount(2) path" || echo "fsmount path")
MOKKA_TEST_PCIFS_OLD_MOUNT=$old unshare -m --propagation private bash -c '
	B=$1 ROOT=$2 R=$3 VIEW=$4
	up() { for i in $(seq 100); do grep -q " $VIEW fuse" /proc/self/mounts && [ -e "$VIEW/sys/bus/pci/devices" ] && return 0; sleep 0.1; done; return 1; }
	"$B/mokka-pcifs" --host-root "$ROOT" --mock-root "$R" 2>/dev/null & p=$!
	up || { echo "FAIL: first start"; exit 1; }
	kill -KILL $p; wait $p 2>/dev/null
	# The watcher (what auto_unmount was) detaches the dead daemon'"'"'s mount.
	for i in $(seq 50); do grep -q " $VIEW fuse" /proc/self/mounts || break; sleep 0.1; done
	! grep -q " $VIEW fuse" /proc/self/mounts || { echo "FAIL: mounted after kill -9"; exit 1; }
	"$B/mokka-pcifs" --host-root "$ROOT" --mock-root "$R" 2>/dev/null & p=$!
	up || { echo "FAIL: restart after kill -9"; exit 1; }
	# Kill the unmount watcher, then the daemon: the mount stays
	# behind, stale ("Transport endpoint is not connected").
	h=$(pgrep -P $p pcifs-unmount)
	[ -n "$h" ] || { echo "FAIL: no unmount watcher"; exit 1; }
	kill -KILL $h
	for i in $(seq 50); do [ -e /proc/$h ] || break; sleep 0.1; done
	kill -KILL $p; wait $p 2>/dev/null
	grep -q " $VIEW fuse" /proc/self/mounts || { echo "FAIL: no stale mount to test with"; exit 1; }
	"$B/mokka-pcifs" --host-root "$ROOT" --mock-root "$R" 2>/dev/null & p=$!
	up || { echo "FAIL: restart over a stale mount"; exit 1; }
	n=$(grep -c " $VIEW fuse" /proc/self/mounts)
	[ "$n" = 1 ] || { echo "FAIL: $n mounts"; exit 1; }
	# The view served what the pcibus worker staged.
	[ -e "$VIEW/sys/bus/pci/devices" ] || { echo "FAIL: not serving"; exit 1; }
	kill -TERM $p; wait $p
	! grep -q " $VIEW fuse" /proc/self/mounts || { echo "FAIL: mounted after SIGTERM"; exit 1; }
' _ "$B" "$ROOT" "$R" "$VIEW" && pass "stand-alone ($how): kill -9 unmounts (the watcher), a stale mount (watcher killed too) is detached at start, SIGTERM unmounts" || fail "stand-alone restart ($how)"
done
finish
