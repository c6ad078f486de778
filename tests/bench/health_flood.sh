#!/bin/bash
# Benchmark, issue 20's shape: one local client keeps 1,000 connections to
# the health port open (idle, request heads that never end, or both) and
# reopens each one the moment it is dropped; probes ask /healthz meanwhile.
# Goal: >= 99 % answered, p99 < 100 ms (health_flood's exit status).
# PROBES (default 1000) per mode.
. "$(dirname "$0")/../lib.sh"
PROBES=${PROBES:-1000}

start_supervisor --simulators pcibus,nvlink --node-name node-f --log-level info
wait_for 30 is_code /healthz 200 || die "/healthz never became 200: $(cat "$T/body")"
for mode in idle partial mixed; do
	if "$B/health_flood" "$PORT" 1000 "$PROBES" "$mode" 99 100 > "$T/flood.txt"; then
		pass "$(cat "$T/flood.txt")"
	else
		fail "$(cat "$T/flood.txt")"
	fi
done
finish
