#!/bin/bash
# A fabric of 64 mock-ib members, each in its own network namespace
# (10.78.0.0/16 on a bridge), one HCA each.  Every member is given the
# same two seeds and the network (ib.peers "10.78.0.1,10.78.0.2,
# 10.78.0.0/16") and learns the other 61 by gossip.  Checks: every member
# converges to 64 members and walks all 64 CAs (ib_client's DR walk over
# the relay); in a quiet fabric a member sends well under one control
# frame a second (the old relay: a REGISTER to every member every second);
# a killed member vanishes everywhere and comes back when restarted;
# ibnetdiscover through the shims from one member lists all 64 CAs.
if [ -z "${MOKKA_IB_FABRIC_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: network namespaces need root"; exit 77; }
	MOKKA_IB_FABRIC_INNER=1 exec unshare -m -n --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/../lib.sh"
. "$S/tests/ib_fabric_lib.sh"

for tool in ip nsenter jq; do
	command -v "$tool" >/dev/null || die "$tool is not installed"
done
[ -x "$B/mock-ib" ] && [ -x "$B/ib_client" ] || die "mock-ib or ib_client not built"
N=${IB_FABRIC_N:-64}
trap 'fab_teardown; cleanup' EXIT

cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
[ "$(grep '^[a-z]' "$T/profile.yaml" | tail -1)" = "infiniband:" ] || die "h100.yaml: infiniband is not the last block"
printf '  hca_count: 1\n  fabric:\n    leaf_ports: 8\n    spines: 2\n' >> "$T/profile.yaml"

fab_net $N
for i in $(seq 0 $((N - 1))); do fab_config "$i" "$T/profile.yaml"; done
t0=$(date +%s%N)
for i in $(seq 0 $((N - 1))); do fab_start "$i" ${FAB_DEBUG:+--log-level debug}; done
wait_for 60 fab_all_see $N || {
	for i in $(seq 0 $((N - 1))); do echo "member $i: $(fab_members "$i")"; done | sort -k3 | head
	die "the fabric did not converge to $N members"
}
conv=$(( ($(date +%s%N) - t0) / 1000000 ))
check "all $N members see $N members (converged in $conv ms)" fab_all_see $N
check "a member heard of most of the fabric by gossip, not from ib.peers" \
	grep -q 'listed [0-9]* member' "$T/fab/40.log"

walk() { "$B/ib_client" discover "$(fab_sock "$1")" 0 2>&1 | sed 's/ links.*//'; }
# Four walks at a time: they wait on the relay more than on a CPU.
for i in $(seq 0 $((N - 1))); do
	(w=$(walk "$i"); [ "${w%% switches*}" = "cas $N" ] || echo "$i($w)") > "$T/walk$i" &
	wpids="${wpids:-} $!"
	[ $((i % 4)) = 3 ] && { wait $wpids; wpids=; }
done
[ -z "${wpids:-}" ] || wait $wpids
bad=$(cat "$T"/walk* | tr '\n' ' ')
check "every member's walk finds all $N CAs${bad:+ (not:$bad)}" [ -z "$bad" ]

# Quiet fabric: per-member control traffic (REGISTER, MEMBERS, DIGEST).
fab_counters > "$T/c1"
sleep 3
fab_counters > "$T/c2"
rate=$(paste "$T/c1" "$T/c2" | awk '{ f += $6 - $1; b += $7 - $2; ms += $10 - $5 }
	END { printf "%.2f %.0f", f * 1000 / ms, b * 1000 / ms }')
note "quiet fabric: $rate (control frames, bytes) per member per second"
check "a quiet member sends under 1 control frame a second (${rate% *})" \
	awk -v r="${rate% *}" 'BEGIN { exit !(r < 1) }'

# A member killed: gone everywhere within seconds; restarted: back.
kill -KILL "${FPID[37]}"; wait "${FPID[37]}" 2>/dev/null; FPID[37]=
wait_for 20 fab_all_see $((N - 1)) || fail "member 37 did not vanish everywhere"
check "killed member 37 vanished from all $((N - 1)) others" fab_all_see $((N - 1))
fab_start 37
wait_for 30 fab_all_see $N || fail "member 37 did not come back everywhere"
check "restarted member 37 is back in all $N fabrics" fab_all_see $N
check "member 37's walk finds all $N CAs again" [ "$(walk 37 | sed 's/ switches.*//')" = "cas $N" ]

# The unmodified ibnetdiscover through the shims, from member 5.
LIBS=$B/.libs
if [ -f "$LIBS/libibmockumad.so" ] && [ -f "$LIBS/libibmocksys.so" ] && [ -f "$LIBS/libibmockverbs.so" ] &&
	[ -x "$B/mokka-worker-ib" ] && command -v ibnetdiscover > /dev/null; then
	MOKKA_PKGLIBDIR=$LIBS "$B/mokka-worker-ib" --host-root "$(fab_root 5)" --config "$T/profile.yaml" \
		--node-name node005 stage > "$T/stage.out" 2>&1 || die "stage: $(tail -3 "$T/stage.out")"
	fab_ns 5 env MOCK_IB=full MOCK_IB_ROOT="$(fab_root 5)$R/ib" MOCK_IB_SOCKET="$(fab_sock 5)" \
		LD_PRELOAD="$LIBS/libibmockumad.so:$LIBS/libibmockverbs.so:$LIBS/libibmocksys.so" \
		timeout 60 ibnetdiscover > "$T/disc" 2> "$T/disc.err"
	check "ibnetdiscover from member 5 lists $N CAs ($(grep -c '^Ca' "$T/disc"))" \
		[ "$(grep -c '^Ca' "$T/disc")" = $N ]
else
	note "shims, mokka-worker-ib or infiniband-diags missing: ibnetdiscover skipped"
	[ -n "${CI:-}" ] && fail "CI must run ibnetdiscover"
fi
for i in $(seq 0 $((N - 1))); do
	kill -0 "${FPID[$i]}" 2>/dev/null || fail "member $i is not running"
done
finish
