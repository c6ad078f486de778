#!/bin/bash
# The NRI staging gate (issue 18), through the supervisor (gpudriver + cri)
# into a temp host root: /stagedz is 200 once a pass published the driver
# tree; while a later pass stages and publishes (held open by cri's test
# delay) /stagedz says "staging" and the staging lock under the root is
# held exclusively (flock -s -n fails), released when the pass ends; an
# empty --staging-lock-path makes no lock file; the lock and the
# directories made for it go at exit.  NRI is on by default: without a
# flag the supervisor runs mokka-nri (cri's daemon) with every path under
# the host root and the gate at its own health listener;
# --nri-plugin=false makes neither the lock nor the plugin.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v flock > /dev/null || die "flock missing (util-linux)"
LOCK=$ROOT/run/nvml-mock/nri-staging.lock
cp "$S/etc/profiles/h100.yaml" "$T/p.yaml"

nri_pid() { pgrep -P "$SUP_PID" -f '^mokka-nri ' | head -1; }
start_supervisor --simulators gpudriver,cri --container-runtime none --config "$T/p.yaml"
wait_for 30 grep -q 'generation 1 published' "$T/sup.log" || die "no first pass"
check "/stagedz 200 once the tree is published" wait_for 10 is_code /stagedz 200
check "/stagedz names the generation" grep -qx 'staged: generation 1' "$T/body"
check "the lock file exists under the root" test -f "$LOCK"
check "the lock is free between passes (flock -s -n)" flock -s -n "$LOCK" true
check "no flag: the supervisor runs mokka-nri" wait_for 10 test -n "$(nri_pid)"
tr '\0' ' ' < "/proc/$(nri_pid)/cmdline" > "$T/nri.cmd" 2>/dev/null
note "mokka-nri: $(cat "$T/nri.cmd")"
check "mokka-nri: host paths under the host root, the gate at the health listener" \
	grep -q -- "--host-root $ROOT --socket-path /var/run/nri/nri.sock .*--staging-lock-path /run/nvml-mock/nri-staging.lock --stagedz-addr 127.0.0.1:$PORT " "$T/nri.cmd"
wait_for 5 grep -q "$ROOT/var/run/nri/nri.sock: No such file" "$T/sup.log"
sleep 1.5	# a retry or two later
check "mokka-nri waits for containerd's socket under the root, saying so once" \
	[ "$(grep -c "$ROOT/var/run/nri/nri.sock: No such file" "$T/sup.log")" -eq 1 ]
# Killed, not stopped: the lock stays behind, listing the directories made
# for it; the next supervisor adopts them and removes them at its exit.
kill -KILL "$SUP_PID"; wait "$SUP_PID" 2>/dev/null; SUP_PID=
check "a killed supervisor's lock lists the directories made for it" grep -qx "$ROOT/run/nvml-mock" "$LOCK"

# A second pass held open: cri's publish waits MOKKA_TEST_CRI_STAGE_DELAY_MS.
export MOKKA_TEST_CRI_STAGE_DELAY_MS=3000
start_supervisor --simulators gpudriver,cri --container-runtime none --nri-plugin --config "$T/p.yaml"
wait_for 30 grep -q 'generation 1 published' "$T/sup.log" || die "no first pass (delayed)"
wait_for 10 is_code /stagedz 200 || fail "not staged after the first pass"
sed 's/^\(\s*driver_version:\).*/\1 "550.999.01"/' "$T/p.yaml" > "$T/p2.yaml"
mv "$T/p2.yaml" "$T/p.yaml"
wait_for 20 grep -q 'generation 2: stage' "$T/sup.log" || fail "no second pass"
check "during the pass: /stagedz 503 staging" sh -c "[ \"\$(curl -s -o '$T/b2' -w '%{http_code}' \
	http://127.0.0.1:$PORT/stagedz)\" = 503 ] && grep -qx staging '$T/b2'"
check "during the pass: the lock is held exclusively" sh -c "! flock -s -n '$LOCK' true"
wait_for 30 grep -q 'generation 2 published' "$T/sup.log" || fail "generation 2 not published"
check "after it: /stagedz 200, generation 2" \
	wait_for 10 sh -c "[ \"\$(curl -s http://127.0.0.1:$PORT/stagedz)\" = 'staged: generation 2' ]"
check "after it: the lock is free" wait_for 5 flock -s -n "$LOCK" true
stop_supervisor
check "at exit the lock and its directories went (those of the killed one too)" test ! -e "$ROOT/run/nvml-mock"
unset MOKKA_TEST_CRI_STAGE_DELAY_MS

rm -f "$LOCK"
start_supervisor --simulators gpudriver --nri-plugin --staging-lock-path "" --config "$T/p.yaml"
wait_for 30 grep -q 'generation 1 published' "$T/sup.log" || die "no first pass (no lock)"
check "--staging-lock-path '': /stagedz still works" wait_for 10 is_code /stagedz 200
check "--staging-lock-path '': no lock file" test ! -e "$LOCK"
stop_supervisor

start_supervisor --simulators gpudriver,cri --container-runtime none --nri-plugin=false \
	--config "$T/p.yaml"
wait_for 30 grep -q 'generation 1 published' "$T/sup.log" || die "no first pass (opted out)"
check "--nri-plugin=false: /stagedz still works" wait_for 10 is_code /stagedz 200
check "--nri-plugin=false: no lock file" test ! -e "$LOCK"
check "--nri-plugin=false: no mokka-nri" test -z "$(nri_pid)"
finish
