#!/bin/bash
# Fault injection against a running node: kill -9 of each worker while
# idle and of pcibus in the middle of Stage, kill -9 of the daemon; the
# supervisor survives, only the killed process changes PID, a half-staged
# pass never reaches Apply, and SIGTERM still restores the root exactly.
. "$(dirname "$0")/../lib.sh"

# Each Stage sleeps first, so there is a window to kill a worker mid-Stage.
export MOKKA_TEST_STAGE_DELAY_MS=3000

cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
nfd=$ROOT/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features
marker=$ROOT$R/fabric-state/fabricmanager.ready
tree_snapshot "$ROOT" > "$T/before"
start_supervisor --config "$T/profile.yaml" --node-name node-a

wait_for 20 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"
check "/healthz 200 after the first pass" is_code /healthz 200
check "fabric manager marker present" wait_for 5 test -e "$marker"

sup_alive() { kill -0 "$SUP_PID" 2>/dev/null; }
# Passes started (one log line each) vs passes finished (the metric): equal
# when no pass is in flight.
stage_lines() { grep -c 'reconcile: generation [0-9]*: stage$' "$T/sup.log"; }
idle() {
	local p
	p=$(metric mokka_passes_total)
	[ -n "$p" ] && [ "$(stage_lines)" -eq "$p" ] && is_code /healthz 200 && is_code /readyz 200
}
# PIDs of everything, as "pcibus=.. nvlink=.. fabricmanager=.. daemon=.."
pids_of() {
	echo "pcibus=$(worker_pid pcibus) nvlink=$(worker_pid nvlink)" \
	     "fabricmanager=$(worker_pid fabricmanager) daemon=$(daemon_pid)"
}
# pids_except NAME "$snapshot": the snapshot without NAME's entry
pids_except() { tr ' ' '\n' <<< "$2" | grep -v "^$1=" | tr '\n' ' '; }
new_pid() { # new_pid NAME OLDPID: a worker NAME runs with a PID other than OLDPID
	local p
	p=$(worker_pid "$1")
	[ -n "$p" ] && [ "$p" != "$2" ]
}
passes_above() { [ "$(metric mokka_passes_total)" -gt "$1" ] 2>/dev/null; }

# ---- kill -9 of each worker while idle ----
for w in pcibus nvlink fabricmanager; do
	wait_for 20 idle || fail "$w: node not idle before the kill"
	snap=$(pids_of)
	old=$(worker_pid "$w")
	r0=$(metric "mokka_worker_restarts_total{simulator=\"$w\"}")
	p0=$(metric mokka_passes_total)
	g0=$(metric mokka_generation)
	[ -n "$old" ] || { fail "$w: no worker process found"; continue; }
	kill -KILL "$old"
	wait_for 10 new_pid "$w" "$old" || fail "$w: worker did not come back with a new PID"
	check "$w: supervisor survived kill -9 of its worker" sup_alive
	check "$w: restart counted ($r0 -> $(metric "mokka_worker_restarts_total{simulator=\"$w\"}"))" \
		[ "$(metric "mokka_worker_restarts_total{simulator=\"$w\"}")" -eq $((r0 + 1)) ]
	wait_for 20 passes_above "$p0" || fail "$w: no pass ran after the restart"
	wait_for 20 idle || fail "$w: node did not settle after the restart: $(cat "$T/body")"
	check "$w: /healthz 200 after the restart" is_code /healthz 200
	check "$w: /readyz 200 after the restart" is_code /readyz 200
	g1=$(metric mokka_generation)
	check "$w: generation kept or raised ($g0 -> $g1)" [ "$g1" -ge "$g0" ]
	now=$(pids_of)
	check "$w: other workers and the daemon kept their PIDs ($snap / $now)" \
		[ "$(pids_except "$w" "$snap")" = "$(pids_except "$w" "$now")" ]
	check "$w: still exactly one daemon" [ "$(pgrep -c -P "$SUP_PID" -f '^nv-fabricmanager')" -eq 1 ]
done

# ---- kill -9 of pcibus in the middle of Stage ----
wait_for 20 idle || fail "node not idle before the mid-Stage kill"
check "NFD file carries the old driver version" grep -q '550\.163\.01' "$nfd"
cp "$nfd" "$T/nfd.before"
snap=$(pids_of)
old=$(worker_pid pcibus)
pf0=$(metric mokka_passes_failed_total)
g0=$(metric mokka_generation)
s0=$(stage_lines)
p0=$(grep -c 'reconcile: generation [0-9]*: parallel stage$' "$T/sup.log")
sed -i 's/^\(\s*driver_version:\).*/\1 "550.999.07"/' "$T/profile.yaml"
wait_for 5 sh -c "[ \$(grep -c 'reconcile: generation [0-9]*: stage\$' '$T/sup.log') -gt $s0 ]" \
	|| fail "the profile edit did not start a pass"
# The parallel Stage starts after the stage-first simulators (cri) staged.
wait_for 10 sh -c "[ \$(grep -c 'reconcile: generation [0-9]*: parallel stage\$' '$T/sup.log') -gt $p0 ]" \
	|| fail "the parallel Stage did not start"
sleep 0.5	# well inside the 3 s Stage
kill -KILL "$old"
# Until the pass is counted failed: the NFD file never changes, and we look
# for /healthz 503 naming pcibus.
saw503=no
nfd_kept=yes
end=$(( $(date +%s) + 15 ))
while [ "$(date +%s)" -lt $end ]; do
	cmp -s "$nfd" "$T/nfd.before" || nfd_kept=no
	if [ "$(http /healthz)" = 503 ] && grep -q pcibus "$T/body"; then saw503=yes; fi
	[ "$(metric mokka_passes_failed_total)" -gt "$pf0" ] 2>/dev/null && break
	sleep 0.1
done
check "supervisor survived kill -9 mid-Stage" sup_alive
check "the half-staged pass counted failed" [ "$(metric mokka_passes_failed_total)" -gt "$pf0" ]
check "NFD file unchanged while the pass was failing (no Apply)" [ "$nfd_kept" = yes ]
check "NFD file still old right after the failed pass" cmp -s "$nfd" "$T/nfd.before"
# /healthz 503 naming pcibus, or the log line (the retry may be quick).
for _ in $(seq 20); do
	[ "$saw503" = yes ] && break
	if [ "$(http /healthz)" = 503 ] && grep -q pcibus "$T/body"; then saw503=yes; fi
	sleep 0.1
done
check "failure reported (/healthz 503 naming pcibus: $saw503, or the log)" \
	sh -c "[ $saw503 = yes ] || grep -q 'stage pcibus failed' '$T/sup.log'"
check "log names the failed stage of pcibus" grep -q 'stage pcibus failed' "$T/sup.log"
wait_for 10 new_pid pcibus "$old" || fail "pcibus did not come back after the mid-Stage kill"
wait_for 30 grep -q '550\.999\.07' "$nfd" || fail "the next pass did not publish the new driver version"
wait_for 20 idle || fail "node did not settle after the mid-Stage kill: $(cat "$T/body")"
check "/healthz 200 after recovery" is_code /healthz 200
check "/readyz 200 after recovery" is_code /readyz 200
check "generation advanced ($g0 -> $(metric mokka_generation))" [ "$(metric mokka_generation)" -gt "$g0" ]
now=$(pids_of)
check "nvlink, fabricmanager and the daemon kept their PIDs ($snap / $now)" \
	[ "$(pids_except pcibus "$snap")" = "$(pids_except pcibus "$now")" ]
# Once the generation is published, nothing is left to retry: a retry timer
# armed by the failed pass must not run the same generation again.
sleep 1
g1=$(metric mokka_generation)
extra=$(awk -v p="reconcile: generation $g1 published" -v st="reconcile: generation $g1: stage" '
	index($0, p) { done = 1; next }
	done && index($0, st) { n++ } END { print n + 0 }' "$T/sup.log")
check "no redundant pass of generation $g1 after it was published ($extra)" [ "$extra" -eq 0 ]

# ---- kill -9 of the daemon ----
wait_for 20 idle || fail "node not idle before the daemon kill"
snap=$(pids_of)
dpid=$(daemon_pid)
dr0=$(metric 'mokka_daemon_restarts_total{daemon="mokka-fabricmanager"}')
mk0=$(stat -c '%i %y' "$marker" 2>/dev/null)
kill -KILL "$dpid"
t0=$(date +%s%N)
max=0
early=no
newd=
while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 4000 ]; do
	n=$(pgrep -c -P "$SUP_PID" -f '^nv-fabricmanager')
	[ "$n" -gt "$max" ] && max=$n
	p=$(daemon_pid)
	if [ -n "$p" ] && [ "$p" != "$dpid" ] && [ -z "$newd" ]; then
		newd=$p
		[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 500 ] && early=yes
	fi
	sleep 0.05
done
check "supervisor survived kill -9 of the daemon" sup_alive
check "daemon restarted with a new PID (${newd:-none}, was $dpid)" [ -n "$newd" ]
check "daemon restart waited for the backoff" [ "$early" = no ]
check "never two copies of nv-fabricmanager (max $max)" [ "$max" -le 1 ]
check "daemon restart counted" \
	[ "$(metric 'mokka_daemon_restarts_total{daemon="mokka-fabricmanager"}')" -eq $((dr0 + 1)) ]
check "marker re-created by the new daemon" \
	wait_for 5 sh -c "[ -e '$marker' ] && [ \"\$(stat -c '%i %y' '$marker')\" != '$mk0' ]"
now=$(pids_of)
check "workers kept their PIDs across the daemon restart ($snap / $now)" \
	[ "$(pids_except daemon "$snap")" = "$(pids_except daemon "$now")" ]
check "/healthz 200 after the daemon restart" wait_for 5 is_code /healthz 200
check "/readyz 200 after the daemon restart" wait_for 5 is_code /readyz 200

# ---- teardown: SIGTERM leaves the root exactly as it was ----
dpid=$(daemon_pid)
stop_and_check_teardown "$dpid"
finish
