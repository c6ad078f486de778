#!/bin/bash
# SR-IOV on a ConnectX HCA through mokka-pcifs (sriov_totalvfs /
# sriov_numvfs with the kernel's checks, VFs as PCI functions with physfn /
# virtfnN links, probed by mlx5_core), seen by lspci and by readers no
# LD_PRELOAD reaches: static busybox and a static raw-syscall reader (how
# Go reads files).  rdma-core's ibstat / ibv_devices see the HCAs' IB
# devices and the VFs' own (mlx5_8...) through `mokka-ctl exec`.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/pci_lib.sh"
RAW=$B/pci_rawread
[ -x "$RAW" ] || die "$RAW not built"
BB=$(command -v busybox)
file -L "$BB" | grep -q 'statically linked' || note "busybox is not static here"

H=0000:1b:00.0		# the first ConnectX-7 of h100.yaml
G=0000:1a:00.0
stage_node
start_pcifs
d=/sys/bus/pci/devices/$H

check "sriov_totalvfs 8" [ "$(x cat $d/sriov_totalvfs)" = 8 ]
check "sriov_numvfs 0" [ "$(x cat $d/sriov_numvfs)" = 0 ]
check "a GPU has no sriov_numvfs" sh -c "! '$B/mokka-ctl' --host-root '$ROOT' exec -- test -e /sys/bus/pci/devices/$G/sriov_numvfs"
check "numvfs above total: ERANGE" [ "$(werr $d/sriov_numvfs 9)" = ERANGE ]
check "numvfs garbage: EINVAL" [ "$(werr $d/sriov_numvfs four)" = EINVAL ]
check "enable 4 VFs" [ "$(werr $d/sriov_numvfs 4)" = OK ]
check "numvfs reads 4" [ "$(x cat $d/sriov_numvfs)" = 4 ]
check "changing 4 -> 2 without going to 0: EBUSY" [ "$(werr $d/sriov_numvfs 2)" = EBUSY ]
check "ibv_devices lists the VFs' IB devices mlx5_8..mlx5_11" [ "$(x ibv_devices | awk '$1 ~ /^mlx5_/ { print $1 }' | sort -V | tail -4 | tr '\n' ' ')" = "mlx5_8 mlx5_9 mlx5_10 mlx5_11 " ]
check "ibstat: mlx5_8 has an active port" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- ibstat mlx5_8 | grep -q 'State: Active'"
check "VF GUIDs are their own: ibv_devices shows 12 distinct node GUIDs" [ "$(x ibv_devices | awk '$1 ~ /^mlx5_/ { print $2 }' | sort -u | wc -l)" = 12 ]
pf_guid=$(x cat /sys/class/infiniband/mlx5_0/node_guid)
check "mlx5_8's node GUID: mlx5_0's with byte 4 = 0x80 | VF 0" [ "$(x cat /sys/class/infiniband/mlx5_8/node_guid)" = "${pf_guid:0:7}80${pf_guid:9}" ]
check "ibstat mlx5_8: port GUID = its node GUID | 1, system image GUID the PF's" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- ibstat mlx5_8 | grep -q 'Port GUID: 0x${pf_guid:0:4}${pf_guid:5:2}80${pf_guid:10:4}${pf_guid:15:3}1' && '$B/mokka-ctl' --host-root '$ROOT' exec -- ibstat mlx5_8 | grep -q 'System image GUID: 0x$(echo "$pf_guid" | tr -d :)'"
check "mlx5_9 (VF 1): byte 4 = 0x81" [ "$(x cat /sys/class/infiniband/mlx5_9/ports/1/gids/0 | cut -c21-29)" = "${pf_guid:0:7}81" ]
check "mlx5_8 is the first VF's" [ "$(x readlink -f /sys/class/infiniband/mlx5_8/device)" = "/sys/devices/pci0000:00/0000:00:05.0/0000:1b:00.1" ]
check "/dev/infiniband/uverbs8 for it (231:200)" [ "$(x stat -c '%t:%T' /dev/infiniband/uverbs8)" = "e7:c8" ]
check "lspci lists 4 virtual functions on mlx5_core" [ "$(x lspci -k -s 1b: 2>/dev/null | grep -c '^1b:.*Virtual Function')" = 4 ]
check "...each with Kernel driver in use: mlx5_core" [ "$(x lspci -k -s 1b: 2>/dev/null | grep -c 'Kernel driver in use: mlx5_core')" = 5 ]
check "lspci -vvv: the HCA's SR-IOV capability (8 VFs at offset 1, 4 enabled, VF id 101e)" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -vvv -s 1b:00.0 2>/dev/null | grep -A5 'Single Root I/O' | tr '\n' ' ' | grep -q 'Total VFs: 8, Number of VFs: 4,.*VF offset: 1, stride: 1, Device ID: 101e'"
check "/proc/bus/pci/devices lists the 4 VFs on mlx5_core" [ "$(x grep -c '^1b0[1-4]	15b3101e	.*mlx5_core$' /proc/bus/pci/devices)" = 4 ]
check "virtfn0 -> ../0000:1b:00.1" [ "$(x readlink $d/virtfn0)" = ../0000:1b:00.1 ]
check "VF physfn -> ../$H" [ "$(x readlink /sys/bus/pci/devices/0000:1b:00.1/physfn)" = "../$H" ]
check "VF device id is the ConnectX VF's (0x101e)" [ "$(x cat /sys/bus/pci/devices/0000:1b:00.1/device)" = 0x101e ]
check "VF has its own IOMMU group" x test -L /sys/bus/pci/devices/0000:1b:00.1/iommu_group
check "a VF goes to vfio-pci like any function" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- sh -c 'echo vfio-pci > /sys/bus/pci/devices/0000:1b:00.2/driver_override; echo 0000:1b:00.2 > /sys/bus/pci/drivers/mlx5_core/unbind; echo 0000:1b:00.2 > /sys/bus/pci/drivers_probe' && [ \"\$(readlink '$VIEW/sys/bus/pci/devices/0000:1b:00.2/driver')\" = ../../../../bus/pci/drivers/vfio-pci ]"

# Static readers, no shim anywhere.
check "busybox ls sees the VFs in the bus" [ "$(x "$BB" ls /sys/bus/pci/devices | grep -c '^0000:1b:')" = 5 ]
check "busybox readlink of a VF's driver" [ "$(x "$BB" readlink /sys/bus/pci/devices/0000:1b:00.1/driver)" = ../../../../bus/pci/drivers/mlx5_core ]
check "busybox writes unbind (kernel semantics for a static binary)" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- '$BB' sh -c 'echo 0000:1b:00.3 > /sys/bus/pci/drivers/mlx5_core/unbind' && [ ! -e '$VIEW/sys/bus/pci/devices/0000:1b:00.3/driver' ]"
check "raw syscalls: cat vendor" [ "$(x "$RAW" cat /sys/bus/pci/devices/$G/vendor)" = 0x10de ]
check "raw syscalls: readlink driver" [ "$(x "$RAW" readlink /sys/bus/pci/devices/$G/driver)" = ../../../../bus/pci/drivers/nvidia ]
check "raw syscalls: getdents64 of vfio-pci's directory" [ "$(x "$RAW" ls /sys/bus/pci/drivers/vfio-pci | sort | tr '\n' ' ')" = "0000:1b:00.2 bind new_id remove_id uevent unbind " ]
check "raw syscalls: a failing write returns ENODEV (19)" [ "$(x "$RAW" write /sys/bus/pci/drivers/nvidia/bind 0000:ff:00.0)" = "errno 19" ]
check "raw syscalls: /proc/bus/pci lists the HCA" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- '$RAW' cat /proc/bus/pci/devices | grep -q '^1b00	15b31021'"
check "raw syscalls: /dev/vfio lists vfio and the VF's group" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- '$RAW' ls /dev/vfio | grep -qx vfio"

check "disable: numvfs 0" [ "$(werr $d/sriov_numvfs 0)" = OK ]
check "the VFs are gone" sh -c "! '$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -s 1b: 2>/dev/null | grep -q 'Virtual Function'"
check "and their IB devices" [ "$(x ibv_devices | grep -c 'mlx5_')" = 8 ]
check "unbound PF: numvfs: ENOENT" [ "$(x sh -c "echo $H > /sys/bus/pci/drivers/mlx5_core/unbind"; werr $d/sriov_numvfs 2)" = ENOENT ]
x sh -c "echo $H > /sys/bus/pci/drivers/mlx5_core/bind"
check "PF back on mlx5_core" [ "$(drv_of $H)" = mlx5_core ]
check "unbinding the PF disables its VFs" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- sh -c 'echo 2 > $d/sriov_numvfs; echo $H > /sys/bus/pci/drivers/mlx5_core/unbind' && [ \"\$(cat '$VIEW$d/sriov_numvfs')\" = 0 ] && [ ! -e '$VIEW/sys/bus/pci/devices/0000:1b:00.1' ]"
x sh -c "echo $H > /sys/bus/pci/drivers/mlx5_core/bind"

# rdma-core over the IB tree.
check "ibstat -l lists mlx5_0..7" [ "$(x ibstat -l | wc -l)" = 8 ]
check "ibstat's mlx5_0 sits on $H" [ "$(x readlink -f /sys/class/infiniband/mlx5_0/device)" = "/sys/devices/pci0000:00/0000:00:05.0/$H" ]
finish
