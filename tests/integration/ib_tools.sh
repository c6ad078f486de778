#!/bin/bash
# Single-node acceptance test of the IB simulator with the unmodified Debian
# tools: mokka-worker-ib stages the tree for an 8-HCA h100 profile (traffic
# counters on every HCA, mlx5_1 down), mock-ib serves it, and every tool
# runs twice:
#   shims    LD_PRELOAD of libibmockumad, libibmockverbs and libibmocksys
#            (absolute paths), MOCK_IB_ROOT = the tree;
#   overlay  inside `unshare -m --propagation private` with the tree's sys
#            and dev overlaid on /sys and /dev, MOCK_IB_ROOT=/, only the
#            umad and verbs shims preloaded.
# Tools: ibstat (plain, -l, -p, -s, one CA, one port), ibstatus,
# ibv_devices, ibv_devinfo (-v), sminfo, smpquery nodeinfo (LID and DR)/
# portinfo/switchinfo, perfquery (-x, local and remote), saquery (NodeRecord
# table, NR by LID, -N by name, PathRecord, PortInfoRecord), ibaddr (local,
# remote), ibping by LID and by GUID against `ibping -S`, ibnetdiscover,
# iblinkinfo, ibhosts, ibswitches, `rdma dev`, `rdma link`.  Expected values
# come from the compiled state (mock-ib.json: GUIDs, LIDs, states,
# counters, node descriptions) and the fabric conventions (rail-optimised
# leaves, spines, switch LIDs/GUIDs/descriptions).

# ---- the tool runs (also the body of the namespace re-exec) ----

# IBT_* come from the outer run: ENV (MOCK_IB_ROOT value), PRELOAD, SOCKET,
# and the LIDs/GUIDs the commands name.
tool() { # tool OUT NAME COMMAND...: stdout, stderr and rc into OUT/NAME*
	local out=$1 name=$2 t0=$SECONDS
	shift 2
	env MOCK_IB=full MOCK_IB_ROOT="$IBT_ROOT" MOCK_IB_SOCKET="$IBT_SOCKET" \
		LD_PRELOAD="$IBT_PRELOAD" timeout 60 "$@" > "$out/$name" 2> "$out/$name.err"
	echo $? > "$out/$name.rc"
	echo "$name $((SECONDS - t0))s" >> "$out/times"
}

run_tools() { # run_tools OUT
	local o=$1 i srv
	tool "$o" ibstat ibstat
	tool "$o" ibstat_l ibstat -l
	tool "$o" ibstat_p ibstat -p
	tool "$o" ibstat_s ibstat -s
	tool "$o" ibstat_port ibstat mlx5_0 1
	for i in 0 1 2 3 4 5 6 7; do tool "$o" "ibstat_mlx5_$i" ibstat "mlx5_$i"; done
	tool "$o" ibstatus ibstatus
	tool "$o" ibv_devices ibv_devices
	tool "$o" ibv_devinfo ibv_devinfo
	tool "$o" ibv_devinfo_v ibv_devinfo -v
	tool "$o" sminfo sminfo -C mlx5_0 -P 1
	tool "$o" sminfo_any sminfo
	tool "$o" nodeinfo smpquery -C mlx5_0 nodeinfo "$IBT_LID2"
	tool "$o" nodeinfo_dr smpquery -C mlx5_0 -D nodeinfo 0,1
	tool "$o" portinfo smpquery -C mlx5_0 portinfo "$IBT_LID0" 1
	tool "$o" switchinfo smpquery -C mlx5_0 switchinfo 1
	tool "$o" perfquery perfquery -C mlx5_0 -P 1
	tool "$o" perfquery_x perfquery -C mlx5_0 -P 1 -x
	tool "$o" perfquery_remote perfquery -C mlx5_0 "$IBT_LID2" 1
	tool "$o" perfquery_remote_x perfquery -C mlx5_0 -x "$IBT_LID2" 1
	tool "$o" saquery saquery -C mlx5_0
	tool "$o" saquery_nr saquery -C mlx5_0 NR "$IBT_LID2"
	tool "$o" saquery_n saquery -C mlx5_0 -N "$IBT_DESC2"
	tool "$o" saquery_pr saquery -C mlx5_0 --src-to-dst "$IBT_LID0:$IBT_LID2"
	tool "$o" saquery_pir saquery -C mlx5_0 PIR "$IBT_LID2/1"
	tool "$o" ibaddr ibaddr -C mlx5_0
	tool "$o" ibaddr_remote ibaddr -C mlx5_0 "$IBT_LID3"
	# ibping server on mlx5_2; wait until it answers, then the real runs
	env MOCK_IB=full MOCK_IB_ROOT="$IBT_ROOT" MOCK_IB_SOCKET="$IBT_SOCKET" \
		LD_PRELOAD="$IBT_PRELOAD" timeout 120 ibping -S -C mlx5_2 -P 1 \
		> "$o/ibping_server" 2>&1 &
	srv=$!
	for i in $(seq 50); do
		tool "$o" ibping_probe ibping -C mlx5_0 -c 1 -t 200 "$IBT_LID2"
		[ "$(cat "$o/ibping_probe.rc")" = 0 ] && break
		sleep 0.1
	done
	tool "$o" ibping_lid ibping -C mlx5_0 -c 3 "$IBT_LID2"
	tool "$o" ibping_guid ibping -C mlx5_0 -c 2 -G "$IBT_PG2"
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	tool "$o" ibnetdiscover ibnetdiscover -C mlx5_0
	tool "$o" iblinkinfo iblinkinfo -C mlx5_0
	tool "$o" ibhosts ibhosts -C mlx5_0
	tool "$o" ibswitches ibswitches -C mlx5_0
	tool "$o" rdma_dev rdma dev
	tool "$o" rdma_link rdma link
}

if [ "${1:-}" = --inside ]; then
	# Re-executed by unshare -m: overlay the tree, then run the tools.
	mount -t overlay overlay -o "lowerdir=$2/sys:/sys" /sys || exit 10
	mount -t overlay overlay -o "lowerdir=$2/dev:/dev" /dev || exit 11
	run_tools "$3"
	exit 0
fi

. "$(dirname "$0")/../lib.sh"
. "$S/tests/ib_shims_lib.sh"

for t in ibstat ibstatus ibv_devices ibv_devinfo sminfo smpquery perfquery saquery ibaddr \
	ibping ibnetdiscover iblinkinfo ibhosts ibswitches rdma python3; do
	command -v $t > /dev/null || die "$t is not installed (scripts/install-deps.sh)"
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: device nodes and overlay mounts need root"; exit 77; }
[ -x "$B/mokka-worker-ib" ] && [ -x "$B/mock-ib" ] || die "mokka-worker-ib or mock-ib not built"
for so in "$IB_SYS" "$IB_UMAD" "$IB_VERBS"; do [ -f "$so" ] || die "$so not built"; done

cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
[ "$(grep '^[a-z]' "$T/profile.yaml" | tail -1)" = "infiniband:" ] ||
	die "h100.yaml: infiniband is no longer the last block; the appended keys would land elsewhere"
cat >> "$T/profile.yaml" <<'EOF'
  counters:
    port_xmit_data: 1000
    port_rcv_data: 2500
    port_xmit_packets: 30
    port_rcv_packets: 40
    symbol_error: 3
    link_downed: 2
    port_xmit_wait: 9
    unicast_xmit_packets: 21
    multicast_rcv_packets: 5
  hcas:
    - index: 1
      port_state: DOWN
      phys_state: Disabled
      counters:
        port_xmit_data: 7
    - index: 2
      counters:
        port_rcv_errors: 11
        port_xmit_data: 123456
EOF

"$B/mokka-worker-ib" --host-root "$ROOT" --config "$T/profile.yaml" --node-name node-a stage \
	> "$T/stage.log" 2>&1 || die "mokka-worker-ib stage: $(cat "$T/stage.log")"
M=$ROOT$R/ib
CONF=$R/ib/mock-ib.json
[ -f "$ROOT$CONF" ] || die "stage wrote no $CONF"

"$B/mock-ib" --config "$CONF" --host-root "$ROOT" > "$T/mock-ib.log" 2>&1 &
MIB=$!
trap '[ -n "$MIB" ] && kill -TERM $MIB 2>/dev/null && wait $MIB 2>/dev/null; cleanup' EXIT
SOCK=$ROOT$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ib"]["socket"])' "$ROOT$CONF")
wait_for 10 test -S "$SOCK" || die "mock-ib did not create $SOCK: $(cat "$T/mock-ib.log")"

# ---- expected facts from the compiled state ----
# hcas: name idx node_guid port_guid lid state phys "desc" then 21 counters
# switches: idx lid guid ports "desc" (rail leaves rail-major, then spines)
python3 - "$ROOT$CONF" "$T" <<'EOF' || die "mock-ib.json unreadable"
import json, sys, math, ipaddress
doc = json.load(open(sys.argv[1])); T = sys.argv[2]; ib = doc["ib"]
hcas = ib["hcas"]
with open(T + "/hcas", "w") as f:
    for h in hcas:
        ng, pg = int(h["node_guid"]), int(h["port_guid"])
        gid = ipaddress.IPv6Address((0xfe80 << 112) | pg)
        f.write("%s %d %016x %016x %d %d %d %s %s|%s\n" % (
            h["name"], h["index"], ng, pg, h["lid"], h["port_state"], h["phys_state"],
            gid.compressed, " ".join(str(int(c)) for c in h["counters"]), h["node_desc"]))
members, lp, spines = 1, ib["leaf_ports"], ib["spines"]
per_rail = math.ceil(members / lp)
nleaves = len(hcas) * per_rail
with open(T + "/switches", "w") as f:
    idx = 0
    for r in range(len(hcas)):
        for g in range(per_rail):
            f.write("%d %d %016x %d %s\n" % (idx, idx + 1, 0xb8cef60300000000 | (idx + 1) << 8,
                                            lp + spines, "MF0;leaf-r%d-g%d:MQM9700/U1" % (r, g)))
            idx += 1
    for s in range(spines):
        f.write("%d %d %016x %d %s\n" % (idx, idx + 1, 0xb8cef60300000000 | (idx + 1) << 8,
                                        nleaves, "MF0;spine-%d:MQM9700/U1" % s))
        idx += 1
EOF
[ "$(wc -l < "$T/hcas")" -eq 8 ] || die "expected 8 HCAs in the state"
# The state as bash arrays (the checks below fork as little as possible:
# they run hundreds of comparisons on a loaded machine).
NAME=() NG=() PG=() LID=() ST=() PH=() GID=() DESC=() CNT=()
while IFS='|' read -r a d; do
	set -- $a
	NAME+=("$1") NG+=("$3") PG+=("$4") LID+=("$5") ST+=("$6") PH+=("$7") GID+=("$8")
	shift 8
	CNT+=("$*") DESC+=("$d")
done < "$T/hcas"
SWI=() SWLID=() SWG=() SWP=() SWD=()
while read -r a b c d e; do SWI+=("$a") SWLID+=("$b") SWG+=("$c") SWP+=("$d") SWD+=("$e"); done < "$T/switches"
NSW=${#SWI[@]}
NLEAVES=0
for d in "${SWD[@]}"; do [[ $d == *";leaf-"* ]] && NLEAVES=$((NLEAVES + 1)); done
LEAF_PORTS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ib"]["leaf_ports"])' "$ROOT$CONF")
# One member: one leaf per rail, so CA i hangs off switch i, port 1.
[ "$NLEAVES" -eq 8 ] || die "expected one leaf per rail ($NLEAVES)"
check "state: mlx5_1 down/disabled, the others active/LinkUp" \
	[ "${ST[*]}/${PH[*]}" = "4 1 4 4 4 4 4 4/5 3 5 5 5 5 5 5" ]
cnt() { local c=(${CNT[$1]}); C=${c[$2]}; }	# cnt HCA N -> $C
g4() { G4="${1:0:4}:${1:4:4}:${1:8:4}:${1:12:4}"; }	# 16 hex -> $G4 xxxx:xxxx:xxxx:xxxx

export IBT_SOCKET=$SOCK IBT_LID0=${LID[0]} IBT_LID2=${LID[2]} IBT_LID3=${LID[3]}
export IBT_PG2=0x${PG[2]} IBT_DESC2=${DESC[2]}

# ---- mode shims ----
mkdir -p "$T/shims" "$T/overlay"
IBT_ROOT=$M IBT_PRELOAD=$IB_PRELOAD run_tools "$T/shims"
# ---- mode overlay ----
IBT_ROOT=/ IBT_PRELOAD=$IB_UMAD:$IB_VERBS unshare -m --propagation private \
	bash "$0" --inside "$M" "$T/overlay" > "$T/ns.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] || fail "overlay namespace setup failed ($rc): $(cat "$T/ns.log")"

# ---- fork-free helpers over one mode's outputs ($O) ----
declare -A LOADED=()
has() { # has FILE LINE: an exact line of $O/FILE
	declare -gA "L_$1"
	local -n set=L_$1
	local l
	if [ -z "${LOADED[$O/$1]:-}" ]; then
		set=()
		while IFS= read -r l || [ -n "$l" ]; do set["x$l"]=1; done < "$O/$1"
		LOADED[$O/$1]=1
	fi
	[ -n "${set["x$2"]:-}" ]
}
slurp() { # slurp FILE -> $TXT, trailing newlines cut (like $(cat))
	TXT=
	IFS= read -r -d '' TXT < "$O/$1"
	while [[ $TXT == *$'\n' ]]; do TXT=${TXT%$'\n'}; done
}
block() { # block FILE FIRST-LINE STOP-PREFIX -> $TXT: FIRST-LINE up to the next STOP
	local l on=0
	TXT=
	while IFS= read -r l || [ -n "$l" ]; do
		if [ "$l" = "$2" ]; then on=1
		elif [ $on = 1 ] && [[ $l == "$3"* ]]; then break
		fi
		[ $on = 1 ] && TXT+=$l$'\n'
	done < "$O/$1"
	while [[ $TXT == *$'\n' ]]; do TXT=${TXT%$'\n'}; done
}
count() { # count FILE PREFIX -> $N lines starting with PREFIX
	local l
	N=0
	while IFS= read -r l || [ -n "$l" ]; do [[ $l == "$2"* ]] && N=$((N + 1)); done < "$O/$1"
}
kv() { # kv NAME VALUE -> $KV, libibmad's "Name:....value" (value at column 33)
	KV="$1:"
	while [ ${#KV} -lt 33 ]; do KV+=.; done
	KV+=$2
}
expect() { # expect LABEL FILE LINE...: every LINE is in FILE
	local label=$1 f=$2 l bad=0
	shift 2
	for l in "$@"; do
		has "$f" "$l" || { fail "$MODE $label: missing line [$l]"; bad=1; }
	done
	[ $bad = 0 ] && pass "$MODE $label"
}
TAB=$'\t' TT=$'\t\t'
state_name=([1]=Down [4]=Active) phys_name=([3]=Disabled [5]=LinkUp)
kstate=([1]="1: DOWN" [4]="4: ACTIVE") kphys=([3]="3: Disabled" [5]="5: LinkUp")
vstate=([1]="PORT_DOWN (1)" [4]="PORT_ACTIVE (4)") vphys=([3]="DISABLED (3)" [5]="LINK_UP (5)")
rstate=([1]=DOWN [4]=ACTIVE) rphys=([3]=DISABLED [5]=LINK_UP)
HOSTSTR="$(hostname).$(cat /proc/sys/kernel/domainname)"
PC_NAMES=(SymbolErrorCounter LinkErrorRecoveryCounter LinkDownedCounter PortRcvErrors
	PortRcvRemotePhysicalErrors PortRcvSwitchRelayErrors PortXmitDiscards
	PortXmitConstraintErrors PortRcvConstraintErrors LocalLinkIntegrityErrors
	ExcessiveBufferOverrunErrors VL15Dropped PortXmitData PortRcvData PortXmitPkts
	PortRcvPkts PortXmitWait)
PCX_NAMES=([12]=PortXmitData [13]=PortRcvData [14]=PortXmitPkts [15]=PortRcvPkts
	[17]=PortUnicastXmitPkts [18]=PortUnicastRcvPkts [19]=PortMulticastXmitPkts
	[20]=PortMulticastRcvPkts)
ACTIVE=(0 2 3 4 5 6 7)

check_sysfs_tools() {
	local i want
	slurp ibstat_l
	check "$MODE ibstat -l lists mlx5_0..7" [ "$TXT" = "$(printf '%s\n' "${NAME[@]}")" ]
	slurp ibstat_p
	check "$MODE ibstat -p lists every port GUID" [ "$TXT" = "$(printf '0x%s\n' "${PG[@]}")" ]
	count ibstat "CA '"
	check "$MODE ibstat shows 8 CAs ($N)" [ "$N" -eq 8 ]
	count ibstat_s "CA '"; local n=$N
	count ibstat_s $'\tPort 1:'
	check "$MODE ibstat -s: 8 CAs, no port blocks ($n, $N)" [ "$n" -eq 8 -a "$N" -eq 0 ]
	for i in 0 1 2 3 4 5 6 7; do
		want="CA '${NAME[i]}'
${TAB}CA type: MT4129
${TAB}Number of ports: 1
${TAB}Firmware version: 28.39.2048
${TAB}Hardware version: 0x0
${TAB}Node GUID: 0x${NG[i]}
${TAB}System image GUID: 0x${NG[i]}
${TAB}Port 1:
${TT}State: ${state_name[ST[i]]}
${TT}Physical state: ${phys_name[PH[i]]}
${TT}Rate: 400
${TT}Base lid: ${LID[i]}
${TT}LMC: 0
${TT}SM lid: 1
${TT}Capability mask: 0xa651e848
${TT}Port GUID: 0x${PG[i]}
${TT}Link layer: InfiniBand"
		slurp "ibstat_mlx5_$i"
		check "$MODE ibstat ${NAME[i]}: every field" [ "$TXT" = "$want" ]
		block ibstat "CA '${NAME[i]}'" "CA '"
		check "$MODE plain ibstat: the same ${NAME[i]} block" [ "$TXT" = "$want" ]
		g4 "${PG[i]}"
		block ibstatus "Infiniband device '${NAME[i]}' port 1 status:" "Infiniband device"
		want="Infiniband device '${NAME[i]}' port 1 status:
${TAB}default gid:${TAB} fe80:0000:0000:0000:$G4
${TAB}base lid:${TAB} $(printf '0x%x' "${LID[i]}")
${TAB}sm lid:${TT} 0x1
${TAB}state:${TT} ${kstate[ST[i]]}
${TAB}phys state:${TAB} ${kphys[PH[i]]}
${TAB}rate:${TT} 400 Gb/sec (4X NDR)
${TAB}link_layer:${TAB} InfiniBand"
		check "$MODE ibstatus ${NAME[i]}: every field" [ "$TXT" = "$want" ]
	done
	slurp ibstat_port
	check "$MODE ibstat mlx5_0 1: the port alone" [ "$TXT" = "CA: 'mlx5_0'
Port 1:
State: Active
Physical state: LinkUp
Rate: 400
Base lid: ${LID[0]}
LMC: 0
SM lid: 1
Capability mask: 0xa651e848
Port GUID: 0x${PG[0]}
Link layer: InfiniBand" ]
}

check_verbs() {
	local i want bad w k v
	count ibv_devices "    mlx5_"
	check "$MODE ibv_devices lists exactly 8 ($N)" [ "$N" -eq 8 ]
	for i in 0 1 2 3 4 5 6 7; do
		check "$MODE ibv_devices: ${NAME[i]} ${NG[i]}" has ibv_devices "    ${NAME[i]}          ${TAB}${NG[i]}"
		g4 "${NG[i]}"
		block ibv_devinfo "hca_id:${TAB}${NAME[i]}" "hca_id:"
		want="hca_id:${TAB}${NAME[i]}
${TAB}transport:${TT}${TAB}InfiniBand (0)
${TAB}fw_ver:${TT}${TT}28.39.2048
${TAB}node_guid:${TT}${TAB}$G4
${TAB}sys_image_guid:${TT}${TAB}$G4
${TAB}vendor_id:${TT}${TAB}0x02c9
${TAB}vendor_part_id:${TT}${TAB}4129
${TAB}hw_ver:${TT}${TT}0x0
${TAB}board_id:${TT}${TAB}MT_0000000838
${TAB}phys_port_cnt:${TT}${TAB}1
${TT}port:${TAB}1
${TT}${TAB}state:${TT}${TAB}${vstate[ST[i]]}
${TT}${TAB}max_mtu:${TT}4096 (5)
${TT}${TAB}active_mtu:${TT}4096 (5)
${TT}${TAB}sm_lid:${TT}${TAB}1
${TT}${TAB}port_lid:${TT}${LID[i]}
${TT}${TAB}port_lmc:${TT}0x00
${TT}${TAB}link_layer:${TT}InfiniBand"
		check "$MODE ibv_devinfo ${NAME[i]}: every field" [ "$TXT" = "$want" ]
		block ibv_devinfo_v "hca_id:${TAB}${NAME[i]}" "hca_id:"
		g4 "${PG[i]}"
		bad=0
		for w in "vendor_part_id|4129" "phys_port_cnt|1" "max_qp|131072" "max_pkeys|128" \
			"node_guid|${NG[i]:0:4}:${NG[i]:4:4}:${NG[i]:8:4}:${NG[i]:12:4}" \
			"state|${vstate[ST[i]]}" "phys_state|${vphys[PH[i]]}" "port_lid|${LID[i]}" \
			"port_cap_flags|0xa651e848" "active_width|4X (2)" "active_speed|100.0 Gbps (128)" \
			"max_vl_num|4 (3)" "GID[  0]|fe80:0000:0000:0000:$G4"; do
			k=${w%%|*} v=${w#*|}
			[[ $TXT =~ (^|$'\n')$'\t'+"$k:"$'\t'+"$v"($'\n'|$) ]] ||
				{ fail "$MODE ibv_devinfo -v ${NAME[i]}: $k is not '$v'"; bad=1; }
		done
		[ $bad = 0 ] && pass "$MODE ibv_devinfo -v ${NAME[i]}: device and port fields"
	done
}

check_smp() {
	local KVS=() k
	check "$MODE sminfo: SM at LID 1 with switch 0's GUID, MASTER" \
		has sminfo "sminfo: sm lid 1 sm guid 0x${SWG[0]}, activity count 4096 priority 15 state 3 SMINFO_MASTER"
	slurp sminfo; local a=$TXT
	slurp sminfo_any
	check "$MODE sminfo without -C: the same SM" [ "$TXT" = "$a" ]
	for k in "NodeType|Channel Adapter" "NumPorts|1" "SystemGuid|0x${NG[2]}" "Guid|0x${NG[2]}" \
		"PortGuid|0x${PG[2]}" "DevId|0x1021" "LocalPort|1" "VendorId|0x0002c9"; do
		kv "${k%%|*}" "${k#*|}"; KVS+=("$KV")
	done
	expect "smpquery nodeinfo of mlx5_2 by LID" nodeinfo "# Node info: Lid ${LID[2]}" "${KVS[@]}"
	KVS=()
	for k in "NodeType|Switch" "NumPorts|${SWP[0]}" "Guid|0x${SWG[0]}" "DevId|0xd2f2" \
		"LocalPort|1" "VendorId|0x0002c9"; do
		kv "${k%%|*}" "${k#*|}"; KVS+=("$KV")
	done
	expect "smpquery -D nodeinfo 0,1: leaf-r0, entered on port 1" nodeinfo_dr "${KVS[@]}"
	KVS=()
	for k in "Lid|${LID[0]}" "SMLid|1" "CapMask|0xa651e848" "LocalPort|1" "LinkWidthActive|4X" \
		"LinkState|Active" "PhysLinkState|LinkUp" "NeighborMTU|4096" \
		"LinkSpeedExtActive|106.25 Gbps"; do
		kv "${k%%|*}" "${k#*|}"; KVS+=("$KV")
	done
	expect "smpquery portinfo of mlx5_0" portinfo "# Port info: Lid ${LID[0]} port 1" "${KVS[@]}"
	kv EnhancedPort0 1
	expect "smpquery switchinfo of LID 1" switchinfo "# Switch info: Lid 1" "$KV"
}

check_pma() {
	local i f n bad
	for i in 0 2; do
		f=perfquery; [ $i = 2 ] && f=perfquery_remote
		bad=0
		has $f "# Port counters: Lid ${LID[i]} port 1 (CapMask: 0x1300)" || { fail "$MODE $f header"; bad=1; }
		for n in "${!PC_NAMES[@]}"; do
			cnt $i $n; kv "${PC_NAMES[n]}" "$C"
			has $f "$KV" || { fail "$MODE $f ${NAME[i]}: ${PC_NAMES[n]} is not $C"; bad=1; }
		done
		[ $bad = 0 ] && pass "$MODE $f ${NAME[i]}: all ${#PC_NAMES[@]} PortCounters as compiled"
		bad=0
		for n in "${!PCX_NAMES[@]}"; do
			cnt $i $n; kv "${PCX_NAMES[n]}" "$C"
			has ${f}_x "$KV" || { fail "$MODE ${f}_x ${NAME[i]}: ${PCX_NAMES[n]} is not $C"; bad=1; }
		done
		[ $bad = 0 ] && pass "$MODE ${f}_x ${NAME[i]}: PortCountersExtended as compiled"
	done
}

check_sa() {
	local i f
	count saquery "NodeRecord dump:"
	check "$MODE saquery: one NodeRecord per active CA and switch ($N = 7 + $NSW)" [ "$N" -eq $((7 + NSW)) ]
	for i in "${ACTIVE[@]}"; do
		block saquery "${TT}lid.....................${LID[i]}" "NodeRecord dump:"
		[[ $TXT == *$'\n'"${TT}node_guid...............0x${NG[i]}"$'\n'* &&
		   $TXT == *$'\n'"${TT}port_guid...............0x${PG[i]}"$'\n'* &&
		   $TXT == *$'\n'"${TT}NodeDescription.........${DESC[i]}" ]]
		check "$MODE saquery NodeRecord at LID ${LID[i]}: ${NAME[i]}'s GUIDs and description" [ $? = 0 ]
	done
	has saquery "${TT}node_guid...............0x${NG[1]}"
	check "$MODE saquery: no NodeRecord for the down mlx5_1" [ $? != 0 ]
	for f in saquery_nr saquery_n; do
		expect "$f: mlx5_2's NodeRecord" $f "NodeRecord dump:" "${TT}lid.....................${LID[2]}" \
			"${TT}node_type...............Channel Adapter" "${TT}node_guid...............0x${NG[2]}" \
			"${TT}port_guid...............0x${PG[2]}" "${TT}device_id...............0x1021" \
			"${TT}vendor_id...............0x2C9" "${TT}NodeDescription.........${DESC[2]}"
		count $f "NodeRecord dump:"
		check "$MODE $f: exactly one record ($N)" [ "$N" -eq 1 ]
	done
	expect "saquery PathRecord mlx5_0 -> mlx5_2" saquery_pr \
		"${TT}dgid....................${GID[2]}" "${TT}sgid....................${GID[0]}" \
		"${TT}dlid....................${LID[2]}" "${TT}slid....................${LID[0]}" \
		"${TT}pkey....................0xFFFF" "${TT}mtu.....................0x85" \
		"${TT}rate....................0x95"
	kv Lid "${LID[2]}"; local a="$TT$KV"
	kv LinkState Active; local b="$TT$KV"
	kv CapMask 0xa651e848
	expect "saquery PortInfoRecord of mlx5_2" saquery_pir "${TT}EndPortLid..............${LID[2]}" \
		"$a" "$b" "$TT$KV"
}

check_addr_ping() {
	slurp ibaddr
	check "$MODE ibaddr: mlx5_0's GID and LID ($TXT)" [ "$TXT" = \
		"GID ${GID[0]} LID start $(printf '0x%x' "${LID[0]}") end $(printf '0x%x' "${LID[0]}")" ]
	slurp ibaddr_remote
	check "$MODE ibaddr of mlx5_3's LID ($TXT)" [ "$TXT" = \
		"GID ${GID[3]} LID start $(printf '0x%x' "${LID[3]}") end $(printf '0x%x' "${LID[3]}")" ]
	local f want n l
	for f in ibping_lid:3 ibping_guid:2; do
		n=0
		while IFS= read -r l; do
			[[ $l =~ ^"Pong from $HOSTSTR (Lid ${LID[2]}): time "[0-9.]+" ms"$ ]] && n=$((n + 1))
		done < "$O/${f%:*}"
		check "$MODE ${f%:*}: ${f#*:} pongs from mlx5_2's server ($HOSTSTR, LID ${LID[2]}) ($n)" [ $n = "${f#*:}" ]
		slurp "${f%:*}"
		[[ $TXT == *$'\n'"${f#*:} packets transmitted, ${f#*:} received, 0% packet loss, time "* ]]
		check "$MODE ${f%:*}: 0% loss" [ $? = 0 ]
	done
}

check_walks() {
	local i s bad=0 sg slid sdesc
	for i in "${!SWI[@]}"; do
		has ibnetdiscover "Switch${TAB}${SWP[i]} \"S-${SWG[i]}\"${TT}# \"${SWD[i]}\" enhanced port 0 lid ${SWLID[i]} lmc 0" ||
			{ fail "$MODE ibnetdiscover: switch ${SWD[i]} (lid ${SWLID[i]})"; bad=1; }
		has ibswitches "Switch${TAB}: 0x${SWG[i]} ports ${SWP[i]} \"${SWD[i]}\" enhanced port 0 lid ${SWLID[i]} lmc 0" ||
			{ fail "$MODE ibswitches: ${SWD[i]}"; bad=1; }
		has iblinkinfo "Switch: 0x${SWG[i]} ${SWD[i]}:" || { fail "$MODE iblinkinfo: ${SWD[i]}"; bad=1; }
	done
	[ $bad = 0 ] && pass "$MODE ibnetdiscover/ibswitches/iblinkinfo: all $NSW switches' GUIDs, ports, descriptions, LIDs"
	count ibnetdiscover "Switch"
	check "$MODE ibnetdiscover: $NSW switches ($N)" [ "$N" -eq "$NSW" ]
	count ibswitches "Switch"
	check "$MODE ibswitches: $NSW switches ($N)" [ "$N" -eq "$NSW" ]
	count ibnetdiscover "Ca${TAB}"
	check "$MODE ibnetdiscover: 7 CAs, mlx5_1 is down ($N)" [ "$N" -eq 7 ]
	count ibhosts "Ca"
	check "$MODE ibhosts: 7 CAs ($N)" [ "$N" -eq 7 ]
	local lre
	for i in "${ACTIVE[@]}"; do
		sg=${SWG[i]} slid=${SWLID[i]} sdesc=${SWD[i]}
		bad=0
		has ibnetdiscover "Ca${TAB}1 \"H-${NG[i]}\"${TT}# \"${DESC[i]}\"" || bad=1
		has ibnetdiscover "[1](${PG[i]}) ${TAB}\"S-$sg\"[1]${TT}# lid ${LID[i]} lmc 0 \"$sdesc\" lid $slid 4xNDR" || bad=1
		has ibnetdiscover "[1]${TAB}\"H-${NG[i]}\"[1](${PG[i]}) ${TT}# \"${DESC[i]}\" lid ${LID[i]} 4xNDR" || bad=1
		has ibhosts "Ca${TAB}: 0x${NG[i]} ports 1 \"${DESC[i]}\"" || bad=1
		has iblinkinfo "CA: ${DESC[i]}:" || bad=1
		lre="^ +0x${PG[i]} +${LID[i]} +1\[  \] ==\( +4X +106\.25 Gbps Active/ +LinkUp\)==> +$slid +1\[  \] \"$sdesc\" \( \)\$"
		grep -Eq "$lre" "$O/iblinkinfo" || bad=1
		check "$MODE walk: ${NAME[i]} (${DESC[i]}) on $sdesc port 1, 4X NDR, both directions" [ $bad = 0 ]
	done
	grep -Eq "^ +${SWLID[1]} +1\[  \] ==\( +Down/ *(Polling|Disabled)\)==>" "$O/iblinkinfo"
	check "$MODE iblinkinfo: ${SWD[1]} port 1 (mlx5_1's) is down" [ $? = 0 ]
	bad=0
	for i in $(seq 0 $((NLEAVES - 1))); do
		for s in $(seq "$NLEAVES" $((NSW - 1))); do
			has ibnetdiscover "[$((LEAF_PORTS + 1 + s - NLEAVES))]${TAB}\"S-${SWG[s]}\"[$((i + 1))]${TT}# \"${SWD[s]}\" lid ${SWLID[s]} 4xNDR" || bad=1
		done
	done
	check "$MODE ibnetdiscover: each leaf's uplinks reach every spine at port leaf+1" [ $bad = 0 ]
}

check_rdma() {
	local i
	for i in 0 1 2 3 4 5 6 7; do
		g4 "${NG[i]}"
		check "$MODE rdma dev: ${NAME[i]}" \
			has rdma_dev "$i: ${NAME[i]}: node_type ca fw 28.39.2048 node_guid $G4 sys_image_guid $G4 "
		check "$MODE rdma link: ${NAME[i]}/1" has rdma_link \
			"link ${NAME[i]}/1 subnet_prefix fe80:0000:0000:0000 lid ${LID[i]} sm_lid 1 lmc 0 state ${rstate[ST[i]]} physical_state ${rphys[PH[i]]} "
	done
	count rdma_dev ""
	check "$MODE rdma dev: exactly 8 devices ($N)" [ "$N" -eq 8 ]
}

check_mode() {
	MODE=$1 O=$T/$1
	local f bad=0
	for f in ibstat ibstat_l ibstat_p ibstat_s ibstat_port ibstatus ibv_devices ibv_devinfo \
		ibv_devinfo_v sminfo sminfo_any nodeinfo nodeinfo_dr portinfo switchinfo perfquery \
		perfquery_x perfquery_remote perfquery_remote_x saquery saquery_nr saquery_n \
		saquery_pr saquery_pir ibaddr ibaddr_remote ibping_lid ibping_guid ibnetdiscover \
		iblinkinfo ibhosts ibswitches rdma_dev rdma_link; do
		[ "$(< "$O/$f.rc")" = 0 ] || { fail "$MODE $f exits $(< "$O/$f.rc"): $(head -c 300 "$O/$f.err")"; bad=1; }
	done
	[ $bad = 0 ] && pass "$MODE: every tool exits 0"
	check_sysfs_tools
	check_verbs
	check_smp
	check_pma
	check_sa
	check_addr_ping
	check_walks
	check_rdma
}

check_mode shims
check_mode overlay
check "mock-ib still running (same PID) after both modes" kill -0 $MIB
kill -TERM $MIB; wait $MIB; rc=$?
MIB=
check "mock-ib exits 0 on SIGTERM (got $rc)" [ $rc -eq 0 ]
finish
