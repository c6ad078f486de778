#!/bin/bash
# Health that tells the truth, and a node that never gives up (issues 19,
# 20): a worker killed past its restart limit (5 crashes in 60 s) makes
# /healthz and /readyz 503 naming it ("restarting after 5 crashes in 60 s,
# next try in N s", down since when), the metrics agree, and it is retried
# at the longest backoff until the node is ready again, without a profile
# edit.  A killed daemon makes /readyz 503 naming it until it is back.
# The longest backoff is lowered to 3 s for the test (a build-tree run).
. "$(dirname "$0")/../lib.sh"

export MOKKA_TEST_RESTART_CAP_MS=3000
tree_snapshot "$ROOT" > "$T/before"
start_supervisor --simulators pcibus,nvlink,fabricmanager --node-name node-r
wait_for 30 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"
g0=$(metric mokka_generation)

# ---- a worker past its restart limit ----
old=
for k in 1 2 3 4 5; do
	wait_for 15 sh -c "p=\$(pgrep -P $SUP_PID -f 'mokka-worker-nvlink\$'); [ -n \"\$p\" ] && [ \"\$p\" != '$old' ]" \
		|| die "kill $k: no new nvlink worker"
	# Killed idle, after its re-stage: a kill mid-write is another test's.
	wait_for 15 is_code /readyz 200 || die "kill $k: node not settled: $(cat "$T/body")"
	old=$(worker_pid nvlink)
	kill -KILL "$old"
	# Down at once: no "ok" while it waits for its restart.
	if [ "$k" = 1 ]; then
		# (its restart waits at least 1 s)
		check "/healthz 503 while nvlink is in backoff" wait_for 2 is_code /healthz 503
		check "/healthz names nvlink, restarting, down since" \
			grep -Eq '^nvlink: restarting, next try in [0-9]+ s; down since [0-9T:-]+Z \(worker exited on signal 9\)$' "$T/body"
		sed 's/^/# healthz: /' "$T/body"
	fi
done
# Everything read at once, inside the throttled wait (about 3 s): from
# its first throttled answer (the crash may still be on its way to the
# supervisor, or, slow under a sanitizer, the throttled restart already
# starting, when the loop above ends).
throttled_now() { is_code /healthz 503 && grep -q '^nvlink: restarting after 5 crashes' "$T/body"; }
wait_for 5 throttled_now
cp "$T/body" "$T/healthz"
code=$(http /readyz); cp "$T/body" "$T/readyz"
curl -s --max-time 2 "http://127.0.0.1:$PORT/metrics" | grep 'simulator="nvlink"' > "$T/metrics"
sed 's/^/# healthz: /' "$T/healthz"
m() { awk -v k="$1{simulator=\"nvlink\"}" '$1 == k { print $2 }' "$T/metrics"; }
check "throttle line in the log" grep -q 'worker nvlink: 5 crashes within 60 s; retrying every [0-9]* s' "$T/sup.log"
check "/healthz says restarting after 5 crashes, next try, since when" \
	grep -Eq '^nvlink: restarting after 5 crashes in 60 s, next try in [0-9]+ s; down since [0-9T:-]+Z' "$T/healthz"
check "/readyz 503 naming nvlink (got $code)" grep -q '^nvlink: restarting after 5 crashes' "$T/readyz"
check "metrics: nvlink throttled" [ "$(m mokka_worker_throttled)" = 1 ]
check "metrics: nvlink not up" [ "$(m mokka_worker_up)" = 0 ]
check "metrics: nvlink stage_ok 0 while down" [ "$(m mokka_stage_ok)" = 0 ]
check "metrics: nvlink not failed for good" [ "$(m mokka_worker_failed)" = 0 ]

# ---- it comes back on its own ----
if wait_for 20 is_code /readyz 200; then
	pass "node ready again without a profile edit"
else
	fail "node not ready again: $(cat "$T/body")"
fi
check "/healthz 200 again" is_code /healthz 200
check "same generation (no state change): $g0 -> $(metric mokka_generation)" \
	[ "$(metric mokka_generation)" = "$g0" ]
check "metrics: nvlink up, stage ok, not throttled" sh -c \
	"[ \"\$(curl -s http://127.0.0.1:$PORT/metrics | grep -E '^mokka_(worker_up|stage_ok|worker_throttled)\\{simulator=\"nvlink\"\\}' | tr '\n' ' ')\" = \
	'mokka_stage_ok{simulator=\"nvlink\"} 1 mokka_worker_up{simulator=\"nvlink\"} 1 mokka_worker_throttled{simulator=\"nvlink\"} 0 ' ]"

# ---- a daemon down: /readyz says so at once ----
dpid=$(daemon_pid)
[ -n "$dpid" ] || die "no nv-fabricmanager"
kill -KILL "$dpid"
t0=$(date +%s%N)
wait_for 3 sh -c "[ \"\$(curl -s -o '$T/body' -w '%{http_code}' --max-time 2 http://127.0.0.1:$PORT/readyz)\" = 503 ]"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
sed 's/^/# readyz: /' "$T/body"
check "/readyz 503 within 1 s of the daemon kill (${ms} ms)" [ "$ms" -lt 1000 ]
check "/readyz names the daemon, since when, and why" \
	grep -Eq '^mokka-fabricmanager: restarting, next try in [0-9]+ s; down since [0-9T:-]+Z \(died on signal 9\)$' "$T/body"
check "metrics: daemon down" [ "$(metric 'mokka_daemon_up{daemon="mokka-fabricmanager"}')" = 0 ]
check "/healthz stays 200 (liveness is the simulators')" is_code /healthz 200
check "/readyz 200 once the daemon is back" wait_for 10 is_code /readyz 200

# ---- teardown: the root as it was (no daemon record left) ----
stop_and_check_teardown "$(daemon_pid)"
finish
