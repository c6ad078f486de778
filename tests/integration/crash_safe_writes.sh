#!/bin/bash
# Crash-safe writes (issue 19): a writer killed mid-write leaves
# "<leaf>.mokka-tmp.<pid>" behind (host.c writes a temporary, then renames
# it).  The next Stage removes such a file (its pid no longer runs) from
# the shadow it stages into and from the directories it writes live, and
# teardown removes it from everything the simulators own, so the root is
# left exactly as it was.  The temporaries are planted as a SIGKILL leaves
# them (a dead writer's pid), in a shadow and in live directories, and the
# writers are then killed so that the restarted ones Stage again.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
SIMS=gpudriver,pcibus,kernellog,fabricmanager
KLOG=$T/kmsg
: > "$KLOG"
mkdir -p "$ROOT/etc"
echo node-w > "$ROOT/etc/hostname"
tree_snapshot "$ROOT" > "$T/before"

dead=$(sh -c 'echo $$')		# a pid that no longer runs
TMP=.mokka-tmp.$dead
temps() { find "$ROOT" -name "*.mokka-tmp.*" | sort; }
published() { grep -c "generation 1 published" "$T/sup.log"; }

start_supervisor --simulators "$SIMS" --node-name node-w --kernel-log "$KLOG"
wait_for 60 grep -q "generation 1 published" "$T/sup.log" || die "generation 1 never published"

# What a writer killed mid-Stage leaves: in the shadow of the next
# generation, and in live (non-generational) directories it owns.
S_DIR=$ROOT$R/.staged/pcibus/sys/devices/pci0000:00/0000:00:00.0
mkdir -p "$S_DIR"
: > "$S_DIR/config$TMP"
LIVE=()
for d in "$ROOT$R/kernellog" "$ROOT$R/fabric-state"; do
	[ -d "$d" ] || { fail "$d: not made by a good pass (test needs updating)"; continue; }
	: > "$d/devices$TMP"; LIVE+=("$d/devices$TMP")
done
: > "$ROOT$R/state/pcibus.stage.manifest$TMP"
note "planted: $(temps | sed "s|$ROOT||" | tr '\n' ' ')"

# Each writer killed: its restart Stages again.
n=$(published)
for w in pcibus kernellog fabricmanager; do
	p=$(worker_pid "$w"); [ -n "$p" ] && kill -KILL "$p"
done
wait_for 60 sh -c "[ \$(grep -c 'published in' '$T/sup.log') -gt $n ] && [ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 http://127.0.0.1:$PORT/healthz)\" = 200 ]" ||
	note "no new publish seen (the restarted workers may stage without one)"
check "the next Stage removed the shadow's temporary" wait_for 30 test ! -e "$S_DIR/config$TMP"
for f in "${LIVE[@]}"; do
	check "the next Stage removed ${f#"$ROOT"}" wait_for 30 test ! -e "$f"
done

# Teardown: temporaries of dead writers everywhere the simulators own,
# live surfaces included; SIGTERM; the root exactly as before.
for d in "$ROOT$R/sys/bus/pci/devices" "$ROOT$R/driver/proc" "$ROOT$R/driver/dev" "$ROOT$R/kernellog"; do
	[ -d "$d" ] && : > "$d/x$TMP"
done
: > "$ROOT$R/state/kernellog.stage.manifest$TMP"
note "planted before teardown: $(temps | wc -l)"
kill -TERM "$SUP_PID"
wait_for 30 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit on SIGTERM"
wait "$SUP_PID"; rc=$?
SUP_PID=
check "teardown exit status 0 (got $rc)" [ "$rc" = 0 ]
check "no temporary file left" [ -z "$(temps)" ]
check_root_restored

[ "$FAILS" -eq 0 ] || exit 1
