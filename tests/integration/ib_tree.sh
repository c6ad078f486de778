#!/bin/bash
# The IB tree mokka-worker-ib stages, read by the unmodified Debian tools
# with no shim: inside a private mount namespace the tree's sys and dev are
# overlaid on /sys and /dev (IB.md §3.3); ibstat (plain, -l, -p, -s, one
# port), ibstatus, ibv_devices and `ibv_devinfo -l` are checked field by
# field against the profile and the compiled identities (mock-ib.json).
# prometheus-node-exporter's infiniband collector reads the tree through
# --path.sysfs.  Finally discard leaves the host root as it was.
. "$(dirname "$0")/../lib.sh"

for tool in ibstat ibstatus ibv_devices ibv_devinfo prometheus-node-exporter python3 curl; do
	command -v "$tool" >/dev/null || die "$tool is not installed (scripts/install-deps.sh)"
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: overlay mounts need root"; exit 77; }

# h100 with traffic on every HCA and mlx5_1 down.
cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
cat >> "$T/profile.yaml" <<'EOF'
  counters:
    port_xmit_data: 1000
    port_rcv_data: 2500
    port_xmit_packets: 30
    port_rcv_packets: 40
    symbol_error: 3
  hcas:
    - index: 1
      port_state: DOWN
      phys_state: Disabled
      counters:
        port_xmit_data: 7
EOF
[ "$(grep '^[a-z]' "$S/etc/profiles/h100.yaml" | tail -1)" = "infiniband:" ] ||
	die "h100.yaml: infiniband is no longer the last block; the appended keys would land elsewhere"

tree_snapshot "$ROOT" > "$T/before"
w() { "$B/mokka-worker-ib" --host-root "$ROOT" --config "$T/profile.yaml" --node-name node-a "$@"; }
w stage > "$T/stage.log" 2>&1 || die "mokka-worker-ib stage: $(cat "$T/stage.log")"
M=$ROOT$R/ib
[ -f "$M/mock-ib.json" ] || die "stage wrote no mock-ib.json"

# Expected identities, one line per HCA from the compiled state:
#   name node_guid(16 hex) port_guid(16 hex) lid(dec) port_state phys_state
#   xmit_data rcv_data xmit_pkts rcv_pkts symbol_error
python3 - "$M/mock-ib.json" > "$T/hcas" <<'EOF' || die "mock-ib.json unreadable"
import json, sys
doc = json.load(open(sys.argv[1]))
names = None
for h in doc["ib"]["hcas"]:
    c = [int(x) for x in h["counters"]]
    # counters[] order = state_ib_counter_names: 0 symbol_error,
    # 12 port_xmit_data, 13 port_rcv_data, 14 port_xmit_packets, 15 port_rcv_packets
    print(h["name"], "%016x" % int(h["node_guid"]), "%016x" % int(h["port_guid"]),
          h["lid"], h["port_state"], h["phys_state"], c[12], c[13], c[14], c[15], c[0])
EOF
n=$(wc -l < "$T/hcas")
check "8 HCAs compiled ($n)" [ "$n" -eq 8 ]
check "mlx5_1 is down in the state" grep -q '^mlx5_1 .* 1 3 7 2500 30 40 3$' "$T/hcas"
check "mlx5_0 carries the base counters" grep -q '^mlx5_0 .* 4 5 1000 2500 30 40 3$' "$T/hcas"

# ---- the tools, inside a private mount namespace with overlays ----
# NETLINK_RDMA open means ib_core is loaded: libibverbs then asks the
# kernel, never sysfs, and sees the host's devices instead of ours.
nl_rdma=$(python3 -c 'import socket
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 20); print("yes")
except OSError:
    print("no")')
mkdir -p "$T/out"
unshare -m --propagation private bash -s "$M" "$T/out" > "$T/ns.log" 2>&1 <<'EOF'
M=$1 O=$2
mount -t overlay overlay -o "lowerdir=$M/sys:/sys" /sys || exit 10
mount -t overlay overlay -o "lowerdir=$M/dev:/dev" /dev || exit 11
run() { local name=$1; shift; "$@" > "$O/$name" 2> "$O/$name.err"; echo $? > "$O/$name.rc"; }
run ibstat ibstat
run ibstat_l ibstat -l
run ibstat_p ibstat -p
run ibstat_s ibstat -s
run ibstat_port ibstat mlx5_0 1
for i in 0 1 2 3 4 5 6 7; do run "ibstat_mlx5_$i" ibstat "mlx5_$i"; done
run ibstatus ibstatus
run ibv_devices ibv_devices
run ibv_devinfo_l ibv_devinfo -l
exit 0
EOF
rc=$?
[ "$rc" -eq 0 ] || die "namespace setup failed ($rc): $(cat "$T/ns.log")"

out() { cat "$T/out/$1"; }
rc_of() { cat "$T/out/$1.rc"; }
has() { grep -qxF -- "$2" "$T/out/$1"; }	# has FILE LINE: an exact line

for f in ibstat ibstat_l ibstat_p ibstat_s ibstat_port ibstatus; do
	check "$f exits 0 ($(rc_of $f): $(head -c 200 "$T/out/$f.err"))" [ "$(rc_of $f)" -eq 0 ]
done

check "ibstat -l lists mlx5_0..7" [ "$(out ibstat_l)" = "$(awk '{ print $1 }' "$T/hcas" | sort)" ]
check "ibstat -p lists every port GUID" \
	[ "$(out ibstat_p)" = "$(awk '{ print "0x" $3 }' "$T/hcas" | sort)" ]
check "ibstat shows 8 CAs" [ "$(grep -c "^CA '" "$T/out/ibstat")" -eq 8 ]
check "ibstat -s shows 8 CAs without ports" \
	[ "$(grep -c "^CA '" "$T/out/ibstat_s")" -eq 8 -a "$(grep -c 'Port 1:' "$T/out/ibstat_s")" -eq 0 ]

state_name() { case $1 in 1) echo Down ;; 2) echo Initializing ;; 3) echo Armed ;; 4) echo Active ;; *) echo "?" ;; esac; }
phys_name() { case $1 in 3) echo Disabled ;; 5) echo LinkUp ;; 2) echo Polling ;; *) echo "?" ;; esac; }
kstate() { case $1 in 1) echo "1: DOWN" ;; 4) echo "4: ACTIVE" ;; *) echo "?" ;; esac; }
kphys() { case $1 in 3) echo "3: Disabled" ;; 5) echo "5: LinkUp" ;; *) echo "?" ;; esac; }
g4() { echo "${1:0:4}:${1:4:4}:${1:8:4}:${1:12:4}"; }	# 16 hex -> xxxx:xxxx:xxxx:xxxx

while read -r name ng pg lid ps phs xd rd xp rp se; do
	f=ibstat_$name
	[ "$(rc_of "$f")" -eq 0 ] || { fail "ibstat $name exits $(rc_of "$f")"; continue; }
	want=$(printf '%s\n' "CA '$name'" \
		$'\tCA type: MT4129' $'\tNumber of ports: 1' $'\tFirmware version: 28.39.2048' \
		$'\tHardware version: 0x0' $'\tNode GUID: 0x'"$ng" $'\tSystem image GUID: 0x'"$ng" \
		$'\tPort 1:' $'\t\tState: '"$(state_name "$ps")" \
		$'\t\tPhysical state: '"$(phys_name "$phs")" $'\t\tRate: 400' \
		$'\t\tBase lid: '"$lid" $'\t\tLMC: 0' $'\t\tSM lid: 1' \
		$'\t\tCapability mask: 0xa651e848' $'\t\tPort GUID: 0x'"$pg" \
		$'\t\tLink layer: InfiniBand')
	if [ "$(out "$f")" = "$want" ]; then
		pass "ibstat $name: every field as compiled"
	else
		fail "ibstat $name"; diff <(echo "$want") "$T/out/$f" | sed 's/^/# /'
	fi
	grep -qxF "CA '$name'" "$T/out/ibstat" || fail "plain ibstat lacks $name"
	# ibstatus prints the raw sysfs text.
	blk=$(awk -v d="Infiniband device '$name' port 1 status:" '$0 == d { on = 1; next } /^Infiniband device/ { on = 0 } on' "$T/out/ibstatus")
	want=$(printf '%s\n' $'\tdefault gid:\t fe80:0000:0000:0000:'"$(g4 "$pg")" \
		$'\tbase lid:\t 0x'"$(printf '%x' "$lid")" $'\tsm lid:\t\t 0x1' \
		$'\tstate:\t\t '"$(kstate "$ps")" $'\tphys state:\t '"$(kphys "$phs")" \
		$'\trate:\t\t 400 Gb/sec (4X NDR)' $'\tlink_layer:\t InfiniBand' '')
	if [ "$blk" = "$want" ]; then
		pass "ibstatus $name: every field as compiled"
	else
		fail "ibstatus $name"; diff <(echo "$want") <(echo "$blk") | sed 's/^/# /'
	fi
done < "$T/hcas"

read -r _ ng0 pg0 lid0 _ < "$T/hcas"
want=$(printf '%s\n' "CA: 'mlx5_0'" "Port 1:" "State: Active" "Physical state: LinkUp" "Rate: 400" \
	"Base lid: $lid0" "LMC: 0" "SM lid: 1" "Capability mask: 0xa651e848" "Port GUID: 0x$pg0" \
	"Link layer: InfiniBand")
check "ibstat mlx5_0 1: the port alone" [ "$(out ibstat_port)" = "$want" ]

if [ "$nl_rdma" = yes ]; then
	note "NETLINK_RDMA is available (ib_core loaded): libibverbs asks the kernel, not sysfs; ibv_* checks skipped"
else
	check "ibv_devices exits 0" [ "$(rc_of ibv_devices)" -eq 0 ]
	while read -r name ng _; do
		check "ibv_devices lists $name $ng" \
			grep -qE "^[[:space:]]+$name[[:space:]]+$ng\$" "$T/out/ibv_devices"
		check "ibv_devinfo -l lists $name" has ibv_devinfo_l $'\t'"$name"
	done < "$T/hcas"
	check "ibv_devices lists exactly 8" [ "$(grep -c 'mlx5_' "$T/out/ibv_devices")" -eq 8 ]
	check "ibv_devinfo -l: 8 HCAs found" has ibv_devinfo_l "8 HCAs found:"
fi

# ---- prometheus-node-exporter's infiniband collector ----
NPORT=$(free_port)
timeout 60 prometheus-node-exporter --web.listen-address="127.0.0.1:$NPORT" \
	--path.sysfs="$M/sys" --collector.disable-defaults --collector.infiniband \
	> "$T/node-exporter.log" 2>&1 &
NE=$!
scrape() { curl -s --max-time 2 "http://127.0.0.1:$NPORT/metrics" > "$T/metrics" && grep -q node_infiniband "$T/metrics"; }
wait_for 15 scrape || fail "node-exporter served no infiniband metrics: $(tail -5 "$T/node-exporter.log")"
kill "$NE" 2>/dev/null; wait "$NE" 2>/dev/null
m() { awk -v k="$1" '$1 == k { print $2 }' "$T/metrics"; }
check "collector succeeded" [ "$(m 'node_scrape_collector_success{collector="infiniband"}')" = 1 ]
while read -r name ng pg lid ps phs xd rd xp rp se; do
	l="{device=\"$name\",port=\"1\"}"
	check "$name: info labels" [ "$(m "node_infiniband_info{board_id=\"MT_0000000838\",device=\"$name\",firmware_version=\"28.39.2048\",hca_type=\"MT4129\"}")" = 1 ]
	check "$name: state_id $ps" [ "$(m "node_infiniband_state_id$l")" = "$ps" ]
	check "$name: physical_state_id $phs" [ "$(m "node_infiniband_physical_state_id$l")" = "$phs" ]
	check "$name: rate 5e+10 bytes/s" [ "$(m "node_infiniband_rate_bytes_per_second$l")" = 5e+10 ]
	check "$name: data transmitted = $xd x 4" \
		[ "$(m "node_infiniband_port_data_transmitted_bytes_total$l")" = "$((xd * 4))" ]
	check "$name: data received = $rd x 4" \
		[ "$(m "node_infiniband_port_data_received_bytes_total$l")" = "$((rd * 4))" ]
	check "$name: packets transmitted $xp" \
		[ "$(m "node_infiniband_port_packets_transmitted_total$l")" = "$xp" ]
	check "$name: packets received $rp" [ "$(m "node_infiniband_port_packets_received_total$l")" = "$rp" ]
	check "$name: symbol errors $se" [ "$(m "node_infiniband_symbol_error_total$l")" = "$se" ]
done < "$T/hcas"

# ---- discard: exactly what stage made goes ----
w discard > "$T/discard.log" 2>&1 || fail "discard: $(cat "$T/discard.log")"
rmdir "$ROOT$R" "$ROOT/var/lib" "$ROOT/var" 2>/dev/null	# R is the supervisor's, not a worker's
check_root_restored
finish
