#!/bin/bash
# libibmocksys (+ the verbs API of libibmockverbs) with MOCK_IB=sysfs and no
# daemon: the real ibstat (all modes), ibstatus, ibv_devices and
# ibv_devinfo (-v) over a hand-made kernel-shaped tree, field by field;
# the /sys/devices rule (canonical paths land in the tree, shared
# directories stay the host's); MOCK_IB_ROOT=/ and MOCK_IB unset rewrite
# nothing.
. "$(dirname "$0")/../lib.sh"
. "$S/tests/ib_shims_lib.sh"

for t in ibstat ibstatus ibv_devices ibv_devinfo; do
	command -v $t > /dev/null || die "$t not installed (infiniband-diags, ibverbs-utils)"
done
ib_hand_tree "$T/ib"
export MOCK_IB=sysfs MOCK_IB_ROOT=$T/ib
pre() { LD_PRELOAD=$IB_PRELOAD "$@"; }

# ---- ibstat ----
cat > "$T/want" <<'X'
CA 'mlx5_0'
	CA type: MT4129
	Number of ports: 1
	Firmware version: 28.39.2048
	Hardware version: 0x0
	Node GUID: 0xa088c20300ab0000
	System image GUID: 0xa088c20300ab0000
	Port 1:
		State: Active
		Physical state: LinkUp
		Rate: 400
		Base lid: 257
		LMC: 0
		SM lid: 1
		Capability mask: 0xa651e848
		Port GUID: 0xa088c20300ab0001
		Link layer: InfiniBand
CA 'mlx5_1'
	CA type: MT4129
	Number of ports: 1
	Firmware version: 28.39.2048
	Hardware version: 0x0
	Node GUID: 0xa088c20300ab0002
	System image GUID: 0xa088c20300ab0002
	Port 1:
		State: Down
		Physical state: Polling
		Rate: 200
		Base lid: 0
		LMC: 0
		SM lid: 1
		Capability mask: 0xa651e848
		Port GUID: 0xa088c20300ab0003
		Link layer: InfiniBand
X
pre ibstat > "$T/got" 2>&1
same "ibstat: both CAs, every field" "$T/want" "$T/got"
printf 'mlx5_0\nmlx5_1\n' > "$T/want"
pre ibstat -l > "$T/got" 2>&1
same "ibstat -l" "$T/want" "$T/got"
printf '0xa088c20300ab0001\n0xa088c20300ab0003\n' > "$T/want"
pre ibstat -p > "$T/got" 2>&1
same "ibstat -p: port GUIDs" "$T/want" "$T/got"
pre ibstat -s > "$T/got" 2>&1
check "ibstat -s: two CA headers, no Port blocks" \
	[ "$(grep -c "^CA '" "$T/got")" = 2 -a "$(grep -c 'Port 1:' "$T/got")" = 0 ]
grep -q 'Node GUID: 0xa088c20300ab0002' "$T/got" || fail "ibstat -s lacks mlx5_1's GUID"
cat > "$T/want" <<'X'
CA: 'mlx5_1'
Port 1:
State: Down
Physical state: Polling
Rate: 200
Base lid: 0
LMC: 0
SM lid: 1
Capability mask: 0xa651e848
Port GUID: 0xa088c20300ab0003
Link layer: InfiniBand
X
pre ibstat mlx5_1 1 > "$T/got" 2>&1
same "ibstat mlx5_1 1" "$T/want" "$T/got"

# ---- ibstatus (a dash script: cd, globs, [ -d ], cat children) ----
cat > "$T/want" <<'X'
Infiniband device 'mlx5_0' port 1 status:
	default gid:	 fe80:0000:0000:0000:a088:c203:00ab:0001
	base lid:	 0x101
	sm lid:		 0x1
	state:		 4: ACTIVE
	phys state:	 5: LinkUp
	rate:		 400 Gb/sec (4X NDR)
	link_layer:	 InfiniBand

Infiniband device 'mlx5_1' port 1 status:
	default gid:	 fe80:0000:0000:0000:a088:c203:00ab:0003
	base lid:	 0x0
	sm lid:		 0x1
	state:		 1: DOWN
	phys state:	 2: Polling
	rate:		 200 Gb/sec (4X HDR)
	link_layer:	 InfiniBand

X
pre ibstatus > "$T/got" 2>&1
same "ibstatus" "$T/want" "$T/got"

# ---- verbs: real device list (sysfs scan, netlink refused), mock open ----
pre ibv_devices > "$T/got" 2>&1
check "ibv_devices lists mlx5_0 a088c20300ab0000" grep -Eq '^ +mlx5_0[[:space:]]+a088c20300ab0000$' "$T/got"
check "ibv_devices lists mlx5_1 a088c20300ab0002" grep -Eq '^ +mlx5_1[[:space:]]+a088c20300ab0002$' "$T/got"
pre ibv_devinfo -l > "$T/got" 2>&1
check "ibv_devinfo -l: 2 HCAs found" grep -q '^2 HCAs found' "$T/got"
cat > "$T/want" <<'X'
hca_id:	mlx5_0
	transport:			InfiniBand (0)
	fw_ver:				28.39.2048
	node_guid:			a088:c203:00ab:0000
	sys_image_guid:			a088:c203:00ab:0000
	vendor_id:			0x02c9
	vendor_part_id:			4129
	hw_ver:				0x0
	board_id:			MT_0000000838
	phys_port_cnt:			1
		port:	1
			state:			PORT_ACTIVE (4)
			max_mtu:		4096 (5)
			active_mtu:		4096 (5)
			sm_lid:			1
			port_lid:		257
			port_lmc:		0x00
			link_layer:		InfiniBand

X
pre ibv_devinfo -d mlx5_0 > "$T/got" 2>&1
same "ibv_devinfo -d mlx5_0" "$T/want" "$T/got"
pre ibv_devinfo -v > "$T/got" 2>&1; rc=$?
check "ibv_devinfo -v exits 0" [ $rc -eq 0 ]
# the second device's port block
sed -n '/^hca_id:\tmlx5_1/,$p' "$T/got" > "$T/got1"
bad=0
while IFS='|' read -r key val; do
	grep -Pq "^\t+\Q$key\E:\t+\Q$val\E\$" "$T/got1" ||
		{ fail "ibv_devinfo -v mlx5_1: $key is not '$val'"; bad=1; }
done <<'X'
state|PORT_DOWN (1)
phys_state|POLLING (2)
port_lid|0
sm_lid|1
active_width|4X (2)
active_speed|50.0 Gbps (64)
port_cap_flags|0xa651e848
max_msg_sz|0x40000000
max_vl_num|4 (3)
pkey_tbl_len|2
gid_tbl_len|2
GID[  0]|fe80:0000:0000:0000:a088:c203:00ab:0003
vendor_part_id|4129
max_qp|131072
max_pkeys|128
atomic_cap|ATOMIC_HCA (1)
X
check "ibv_devinfo -v mlx5_1: every field as in its sysfs" [ $bad = 0 ]
check "ibv_devinfo -v mlx5_0: 400G 4X is NDR (128)" grep -Pq '^\t+active_speed:\t+100.0 Gbps \(128\)$' "$T/got"

# ---- paths ----
dev=/sys/devices/pci0000:00/0000:00:02.0/0000:03:00.0
out=$(pre realpath /sys/class/infiniband/mlx5_0)
check "realpath of a class entry is the canonical /sys/devices path ($out)" \
	[ "$out" = "$dev/infiniband/mlx5_0" ]
out=$(pre cat "$dev/infiniband/mlx5_0/node_guid")
check "a canonical /sys/devices path reads the tree ($out)" [ "$out" = a088:c203:00ab:0000 ]
out=$(pre cat /sys/class/infiniband/mlx5_0/device/vendor)
check "device link reaches the PCI function ($out)" [ "$out" = 0x15b3 ]
check "shared /sys/devices lists the host's entries" [ "$(pre ls /sys/devices)" = "$(ls /sys/devices)" ]
out=$(pre ls -l /sys/class/infiniband/ 2>&1 >/dev/null)
check "ls -l on the class dir prints no errors ($out)" [ -z "$out" ]
out=$(pre readlink /sys/class/infiniband_verbs/uverbs1)
check "readlink of uverbs1 ($out)" [ "$out" = ../../devices/pci0000:00/0000:00:03.0/0000:04:00.0/infiniband_verbs/uverbs1 ]
out=$(pre stat -c '%F %t:%T' /dev/infiniband/uverbs1)
check "/dev/infiniband/uverbs1 is char 231:193 ($out)" [ "$out" = "character special file e7:c1" ]
out=$(pre sh -c 'cd /sys/class/infiniband_mad && cat umad1/ibdev issm1/dev')
check "cd into a class dir, relative reads ($out)" [ "$out" = "mlx5_1
231:65" ]
want=$(ls /sys/class/infiniband 2>&1; echo "rc=$?")
out=$(MOCK_IB_ROOT=/ pre ls /sys/class/infiniband 2>&1; echo "rc=$?")
check "MOCK_IB_ROOT=/ rewrites nothing" [ "$out" = "$want" ]
out=$(env -u MOCK_IB LD_PRELOAD=$IB_PRELOAD ls /sys/class/infiniband 2>&1; echo "rc=$?")
check "MOCK_IB unset rewrites nothing" [ "$out" = "$want" ]

finish
