# Helpers for the IB shim tests (sourced after tests/lib.sh).

IBLIB=$B/.libs
IB_SYS=$IBLIB/libibmocksys.so
IB_UMAD=$IBLIB/libibmockumad.so
IB_VERBS=$IBLIB/libibmockverbs.so
# The chart's order: umad, verbs, then the path redirect.
IB_PRELOAD=$IB_UMAD:$IB_VERBS:$IB_SYS

# ib_hand_tree ROOT: a small kernel-shaped tree (IB.md §2.1), independent
# of the worker: mlx5_0 (ACTIVE, 400G NDR, LID 0x101) at 0000:03:00.0 and
# mlx5_1 (DOWN/Polling, 200G HDR, LID 0) at 0000:04:00.0.  Class entries
# are relative symlinks; /dev/infiniband holds real char nodes (root).
ib_hand_tree() {
	local R=$1 i bdf pci ib guid pguid lid state phys rate m v
	mkdir -p "$R"/sys/class/{infiniband,infiniband_mad,infiniband_verbs} "$R/dev/infiniband"
	echo 5 > "$R/sys/class/infiniband_mad/abi_version"
	echo 6 > "$R/sys/class/infiniband_verbs/abi_version"
	for i in 0 1; do
		bdf=0000:0$((3 + i)):00.0
		pci=sys/devices/pci0000:00/0000:00:0$((2 + i)).0/$bdf
		ib=$R/$pci/infiniband/mlx5_$i
		guid=a088:c203:00ab:000$((2 * i))
		pguid=a088:c203:00ab:000$((2 * i + 1))
		if [ "$i" = 0 ]; then
			lid=0x101 state="4: ACTIVE" phys="5: LinkUp" rate="400 Gb/sec (4X NDR)"
		else
			lid=0x0 state="1: DOWN" phys="2: Polling" rate="200 Gb/sec (4X HDR)"
		fi
		mkdir -p "$ib"/ports/1/{gids,pkeys,counters,gid_attrs/types} \
			"$R/$pci"/infiniband_mad/{umad$i,issm$i} "$R/$pci/infiniband_verbs/uverbs$i"
		echo 0x15b3 > "$R/$pci/vendor"
		echo 0x1021 > "$R/$pci/device"
		echo pci:v000015B3d00001021sv000015B3sd00000023bc02sc07i00 > "$R/$pci/modalias"
		printf '%s\n' "1: CA" > "$ib/node_type"
		echo $guid > "$ib/node_guid"
		echo $guid > "$ib/sys_image_guid"
		echo 28.39.2048 > "$ib/fw_ver"
		echo 0x0 > "$ib/hw_rev"
		echo MT4129 > "$ib/hca_type"
		echo MT_0000000838 > "$ib/board_id"
		echo "node1 mlx5_$i" > "$ib/node_desc"
		ln -s ../../../$bdf "$ib/device"
		printf '%s\n' "$state" > "$ib/ports/1/state"
		printf '%s\n' "$phys" > "$ib/ports/1/phys_state"
		printf '%s\n' "$rate" > "$ib/ports/1/rate"
		echo $lid > "$ib/ports/1/lid"
		echo 0 > "$ib/ports/1/lid_mask_count"
		echo 0x1 > "$ib/ports/1/sm_lid"
		echo 0 > "$ib/ports/1/sm_sl"
		echo 0xa651e848 > "$ib/ports/1/cap_mask"
		echo InfiniBand > "$ib/ports/1/link_layer"
		echo fe80:0000:0000:0000:$pguid > "$ib/ports/1/gids/0"
		echo 0000:0000:0000:0000:0000:0000:0000:0000 > "$ib/ports/1/gids/1"
		echo 0xffff > "$ib/ports/1/pkeys/0"
		echo 0x0000 > "$ib/ports/1/pkeys/1"
		echo "IB/RoCE v1" > "$ib/ports/1/gid_attrs/types/0"
		echo 0 > "$ib/ports/1/counters/port_xmit_data"
		m=$R/$pci/infiniband_mad
		echo mlx5_$i > "$m/umad$i/ibdev"; echo 1 > "$m/umad$i/port"; echo 231:$i > "$m/umad$i/dev"
		echo mlx5_$i > "$m/issm$i/ibdev"; echo 1 > "$m/issm$i/port"; echo 231:$((64 + i)) > "$m/issm$i/dev"
		v=$R/$pci/infiniband_verbs/uverbs$i
		echo mlx5_$i > "$v/ibdev"; echo 1 > "$v/abi_version"; echo 231:$((192 + i)) > "$v/dev"
		ln -s ../../devices/${pci#sys/devices/}/infiniband/mlx5_$i "$R/sys/class/infiniband/mlx5_$i"
		ln -s ../../devices/${pci#sys/devices/}/infiniband_mad/umad$i "$R/sys/class/infiniband_mad/umad$i"
		ln -s ../../devices/${pci#sys/devices/}/infiniband_mad/issm$i "$R/sys/class/infiniband_mad/issm$i"
		ln -s ../../devices/${pci#sys/devices/}/infiniband_verbs/uverbs$i "$R/sys/class/infiniband_verbs/uverbs$i"
		mknod "$R/dev/infiniband/umad$i" c 231 $i
		mknod "$R/dev/infiniband/issm$i" c 231 $((64 + i))
		mknod "$R/dev/infiniband/uverbs$i" c 231 $((192 + i))
	done
}

# same NAME EXPECTED-FILE ACTUAL-FILE: exact comparison with a diff on failure.
same() {
	if diff -u "$2" "$3" > "$T/same.diff"; then
		pass "$1"
	else
		fail "$1"
		sed 's/^/# /' "$T/same.diff" | head -40
	fi
}
