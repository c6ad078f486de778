#!/bin/bash
# Chaos (issue 19), bounded: CHAOS_ROUNDS (default 20) random SIGKILLs of
# workers and daemons, CHAOS_BURST (default 2) at a time, while the
# profile flips between 8 and 4 GPUs every CHAOS_FLIP bursts (default 5),
# and CHAOS_SUP_KILLS (default 2) SIGKILLs of the supervisor itself, each
# followed by a restart on the same root.  Asserts: the supervisor
# survives every worker/daemon kill; a daemon keeps its PID unless it was
# killed itself (its worker's death changes nothing); /readyz comes back
# after each burst;
# no Apply follows a failed Stage (from the log); after a supervisor
# SIGKILL nothing of its tree outlives it (daemons counted by command
# line); teardown leaves the root as it was (types, modes, link targets,
# contents).  Prints kills, survivals and recovery times (worst, median);
# tests/bench/chaos.sh runs the long form.  CHAOS_SEED repeats a run.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
ROUNDS=${CHAOS_ROUNDS:-20}
BURST=${CHAOS_BURST:-2}
FLIP=${CHAOS_FLIP:-5}
SUP_KILLS=${CHAOS_SUP_KILLS:-2}
RECOVER_S=${CHAOS_RECOVER_S:-45}
SEED=${CHAOS_SEED:-$(( $(date +%s) % 32768 ))}
RANDOM=$SEED
PY=/usr/bin/python3
SIMS=gpudriver,pcibus,nvlink,fabricmanager,ib,kernellog
WORKERS=(gpudriver pcibus nvlink fabricmanager ib kernellog)
DAEMONS=(nv-fabricmanager mock-ib mokka-kernellog)
KLOG=$T/kmsg
: > "$KLOG"
note "seed $SEED (CHAOS_SEED=$SEED repeats this run), $ROUNDS rounds"
"$PY" -c 'import yaml' 2>/dev/null || { echo "FAIL: python3-yaml missing (scripts/install-deps.sh)"; exit 1; }

# The two profiles: 8 GPUs, and the first 4 of them.
cp "$S/etc/profiles/h100.yaml" "$T/a.yaml"
"$PY" - "$T/a.yaml" "$T/b.yaml" <<'PYEOF' || die "cannot cut the profile"
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
devs = sorted(doc["devices"], key=lambda e: e.get("index", 0))
gone = {e["pci"]["bus_id"].upper() for e in devs[4:]}
doc["devices"] = devs[:4]
for rc in (doc.get("pcie_topology") or {}).get("root_complexes") or []:
    rc["devices"] = [b for b in rc.get("devices") or [] if b.upper() not in gone]
yaml.safe_dump(doc, open(sys.argv[2], "w"), sort_keys=False)
PYEOF
mkdir -p "$T/cfg"
put() { cp "$1" "$T/cfg/.tmp" && mv -f "$T/cfg/.tmp" "$T/cfg/profile.yaml"; }
put "$T/a.yaml"

# Something of the host's own in the root, which must survive as it is.
mkdir -p "$ROOT/etc" "$ROOT/var/lib/other" "$ROOT/run"
echo node-c > "$ROOT/etc/hostname"
echo keep > "$ROOT/var/lib/other/data"
ln -s ../etc/hostname "$ROOT/var/lib/other/link"
tree_snapshot "$ROOT" > "$T/before"

LOGS=()
start() {
	start_supervisor --config "$T/cfg/profile.yaml" --simulators "$SIMS" \
		--node-name node-c --kernel-log "$KLOG"
	LOGS+=("$T/sup.$SUP_PID.log")
}
save_log() { cp "$T/sup.log" "$T/sup.$SUP_PID.log"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# count NAME: processes whose argv[0] is NAME and that serve this root.
count() {
	local n=0 f a0
	for f in /proc/[0-9]*/cmdline; do
		{ IFS= read -r -d "" a0 < "$f"; } 2>/dev/null || continue
		[ "$a0" = "$1" ] || [ "${a0##*/}" = "$1" ] || continue
		tr '\0' ' ' < "$f" 2>/dev/null | grep -q -- "--host-root $ROOT " && n=$((n + 1))
	done
	echo "$n"
}
dpid() { pgrep -P "$SUP_PID" -f "^$1( |\$)" | head -1; }	# a daemon child
# Every daemon child has exec'd: /readyz counts a restarted daemon up once
# it is forked, and until its execve its command line is the supervisor's.
daemons_execd() {
	local d
	for d in "${DAEMONS[@]}"; do [ -n "$(dpid "$d")" ] || return 1; done
}
# alive PID...: which of these still run (zombies have exited)
alive() {
	local p
	for p in "$@"; do
		[ -e "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null && printf '%s ' "$p"
	done
}
# nothing_left PID...: none of them runs and no daemon serves this root
nothing_left() {
	local d
	[ -z "$(alive "$@")" ] || return 1
	for d in "${DAEMONS[@]}"; do [ "$(count "$d")" = 0 ] || return 1; done
}

start
wait_for 60 is_code /readyz 200 || die "not ready at start: $(cat "$T/body")"

kills=0; survived=0; kept=0; worker_kills=0; recovered=0; supkills=0; orphans=0; waits=0
times=()
sup_at=()
nrounds=$(( (ROUNDS + BURST - 1) / BURST ))
for k in $(seq "$SUP_KILLS"); do sup_at+=($(( nrounds * k / (SUP_KILLS + 1) ))); done
for round in $(seq "$nrounds"); do
	if [ $((round % FLIP)) = 0 ]; then
		if [ $(((round / FLIP) % 2)) = 1 ]; then put "$T/b.yaml"; else put "$T/a.yaml"; fi
		sleep 0.$((RANDOM % 5))	# kill in the middle of the pass, or after it
	fi
	declare -A before=() hit=()
	wait_for 10 daemons_execd || fail "round $round: a daemon not running 10s after /readyz: $(for d in "${DAEMONS[@]}"; do printf '%s=%s ' "$d" "$(dpid "$d")"; done)"
	for d in "${DAEMONS[@]}"; do before[$d]=$(dpid "$d"); done
	t0=$(now_ms)
	for _ in $(seq $((BURST * 4))); do
		[ "$kills" -lt "$ROUNDS" ] && [ "${#hit[@]}" -lt "$BURST" ] || break
		n=$((RANDOM % (${#WORKERS[@]} + ${#DAEMONS[@]})))
		if [ "$n" -lt "${#WORKERS[@]}" ]; then
			victim=${WORKERS[$n]}; pid=$(worker_pid "$victim")
		else
			victim=${DAEMONS[$((n - ${#WORKERS[@]}))]}; pid=$(dpid "$victim")
		fi
		[ -n "$pid" ] && [ -z "${hit[$victim]:-}" ] || continue
		hit[$victim]=1
		kill -KILL "$pid"; kills=$((kills + 1))
		[ "$n" -lt "${#WORKERS[@]}" ] && worker_kills=$((worker_kills + 1))
		sleep 0.05
		kill -0 "$SUP_PID" 2>/dev/null && survived=$((survived + 1))
	done
	[ "${#hit[@]}" -gt 0 ] || { sleep 0.2; continue; }
	waits=$((waits + 1))
	if wait_for "$RECOVER_S" is_code /readyz 200; then
		recovered=$((recovered + 1)); times+=($(( $(now_ms) - t0 )))
	else
		fail "round $round: /readyz not back ${RECOVER_S}s after killing ${!hit[*]}: $(head -c 300 "$T/body")"
	fi
	# A daemon not killed itself keeps its PID (its worker's death, a
	# Reload, another daemon's restart change nothing).
	for d in "${DAEMONS[@]}"; do
		[ -z "${hit[$d]:-}" ] || continue
		if [ "${before[$d]}" = "$(dpid "$d")" ]; then kept=$((kept + 1))
		else fail "round $round: $d changed PID (${before[$d]} -> $(dpid "$d")) after killing ${!hit[*]}"; fi
	done
	unset before hit
	for s in "${sup_at[@]}"; do
		[ "$s" = "$round" ] || continue
		tree=$(pgrep -P "$SUP_PID" | tr '\n' ' ')
		kill -KILL "$SUP_PID"; wait "$SUP_PID" 2>/dev/null; save_log; supkills=$((supkills + 1))
		# shellcheck disable=SC2086
		if wait_for 10 nothing_left $tree; then :; else
			orphans=$((orphans + 1))
			fail "round $round: outlived the killed supervisor: pids $(alive $tree); $(for d in "${DAEMONS[@]}"; do printf '%s=%s ' "$d" "$(count "$d")"; done)"
		fi
		start
		wait_for 60 is_code /readyz 200 || fail "round $round: not ready after the supervisor restart"
	done
done

# Teardown: exit 0, nothing left running, the root as it was.
tree=$(pgrep -P "$SUP_PID" | tr '\n' ' ')
kill -TERM "$SUP_PID"
wait_for 30 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit on SIGTERM"
wait "$SUP_PID"; rc=$?
save_log
SUP_PID=
check "teardown exit status 0 (got $rc)" [ "$rc" = 0 ]
# shellcheck disable=SC2086
check "nothing of the root runs after teardown" wait_for 10 nothing_left $tree
check_root_restored

# No Apply after a failed Stage of the same pass (attempts of a pass are
# told apart by their "stage" line).
for f in "${LOGS[@]}"; do
	awk '
	/reconcile: generation [0-9]+: stage$/ { failed = 0 }
	/reconcile: generation [0-9]+: stage .* failed/ { failed = 1 }
	/: apply: generation [0-9]+/ && failed { print "apply after a failed stage: " $0; bad = 1 }
	END { exit bad }' "$f" > "$T/apply.bad" || { fail "Apply followed a failed Stage ($f)"; sed 's/^/# /' "$T/apply.bad" | head; }
done
applies=$(cat "${LOGS[@]}" | grep -c ': apply: generation')
failed=$(cat "${LOGS[@]}" | grep -c 'stage .* failed')
check "the logs show Applies ($applies) and the check saw them" [ "$applies" -gt 0 ]

median=0; worst=0
if [ "${#times[@]}" -gt 0 ]; then
	sorted=($(printf '%s\n' "${times[@]}" | sort -n))
	median=${sorted[$(( ${#sorted[@]} / 2 ))]}; worst=${sorted[-1]}
fi
check "supervisor survived every worker/daemon kill ($survived/$kills)" [ "$survived" = "$kills" ]
check "/readyz came back after every burst of kills ($recovered/$waits)" [ "$recovered" = "$waits" ]
check "no orphans after $supkills supervisor SIGKILLs" [ "$orphans" = 0 ]
printf 'chaos: seed %s kills %d (workers %d) survived %d ready-again %d/%d daemon-pids-kept %d supervisor-kills %d orphans %d failed-stages %d recovery-ms median %d worst %d\n' \
	"$SEED" "$kills" "$worker_kills" "$survived" "$recovered" "$waits" "$kept" "$supkills" "$orphans" "$failed" "$median" "$worst" | tee "${CHAOS_REPORT:-/dev/null}"
[ "$FAILS" -eq 0 ] || { echo "# logs: ${LOGS[*]} (KEEP_T=1 keeps them)"; exit 1; }
