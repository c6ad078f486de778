#!/bin/bash
# One instance of each daemon, always (issue 19): the supervisor is
# SIGKILLed 10 times (in the middle of its first pass and once idle,
# alternately) and restarted on the same host root each time.  Its daemons
# die with it (parent-death signal), a new instance stops whatever a
# predecessor left (R/state/daemon.*.pid), and at the end exactly one of
# each daemon of this root runs.  A daemon planted as a leftover (a record
# matching a live process) is stopped by the next start.
. "$(dirname "$0")/../lib.sh"

SIMS=pcibus,fabricmanager,ib,kernellog
DAEMONS="nv-fabricmanager mock-ib mokka-kernellog"
KLOG=$T/kmsg
: > "$KLOG"

# count NAME: processes named NAME (argv[0]) serving this root (their
# command line carries --host-root $ROOT); zombies have no command line.
# (pgrep -x would miss nv-fabricmanager: comm keeps 15 characters.)
count() {
	local n=0 f a0
	for f in /proc/[0-9]*/cmdline; do
		{ IFS= read -r -d "" a0 < "$f"; } 2>/dev/null || continue
		[ "$a0" = "$1" ] || continue
		tr '\0' ' ' < "$f" 2>/dev/null | grep -q -- "--host-root $ROOT " && n=$((n + 1))
	done
	echo "$n"
}
daemons_up() { # every daemon of the root runs (at least once)
	local d
	for d in $DAEMONS; do [ "$(count "$d")" -ge 1 ] || return 1; done
}
start() { start_supervisor --simulators "$SIMS" --node-name node-k --kernel-log "$KLOG"; }
none_of() { [ "$(count "$1")" = 0 ]; }
first_daemon_up() { [ "$(count nv-fabricmanager)" != 0 ] || [ "$(count mock-ib)" != 0 ]; }

for round in $(seq 10); do
	start
	if [ $((round % 2)) = 1 ]; then
		# mid-pass: as soon as the first daemon is up, the rest still coming
		wait_for 30 first_daemon_up || true
	else
		wait_for 30 is_code /readyz 200 || fail "round $round: /readyz never 200: $(cat "$T/body")"
		wait_for 10 daemons_up || fail "round $round: daemons not all up"
	fi
	kill -KILL "$SUP_PID"
	wait "$SUP_PID" 2>/dev/null
	SUP_PID=
done
note "after 10 SIGKILLs: $(for d in $DAEMONS; do printf '%s=%s ' "$d" "$(count "$d")"; done)"
# The parent-death signal alone: nothing of this root may run now.
for d in $DAEMONS; do
	check "no $d outlives its supervisor" wait_for 3 none_of "$d"
done

# A leftover the parent-death signal did not take (e.g. an older build):
# a live process recorded as mock-ib is stopped by the next start.
sleep 300 &
stale=$!
wait_for 5 sh -c "readlink /proc/$stale/exe | grep -q sleep" || die "sleep did not start"
st=$(awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$stale/stat")
mkdir -p "$ROOT$R/state"
{ printf 'mokka-daemon 1\npid %d\nstart %s\nexe %s\ncmdline\n' "$stale" "$st" "$(readlink -f "/proc/$stale/exe")"
  tr -d '\n' < "/proc/$stale/cmdline"; } > "$ROOT$R/state/daemon.mock-ib.pid"

start
wait_for 30 is_code /readyz 200 || fail "final start: /readyz never 200: $(cat "$T/body")"
wait_for 10 daemons_up || fail "final start: daemons not all up"
sleep 1
for d in $DAEMONS; do
	n=$(count "$d")
	check "exactly one $d of this root ($n)" [ "$n" = 1 ]
done
check "the planted leftover was stopped" wait_for 3 sh -c "! kill -0 $stale 2>/dev/null || grep -q '^State:.*Z' /proc/$stale/status"
check "the log says so" grep -q "stopped mock-ib (pid $stale) left by a previous supervisor" "$T/sup.log"
kill "$stale" 2>/dev/null; wait "$stale" 2>/dev/null

# Teardown: every daemon goes, and with it its record.
kill -TERM "$SUP_PID"
wait_for 20 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit on SIGTERM"
SUP_PID=
for d in $DAEMONS; do
	check "no $d left after the teardown" wait_for 3 none_of "$d"
done
check "no daemon record left" sh -c "! ls '$ROOT$R/state'/daemon.*.pid 2>/dev/null | grep -q ."
finish
