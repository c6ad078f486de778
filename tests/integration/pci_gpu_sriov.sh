#!/bin/bash
# SR-IOV on GPUs whose board has it (l40s.yaml: pcie_topology.gpu_sriov,
# 32 VFs at offset 4, stride 1, the PF's device id): sriov_* files with the
# kernel's errnos (ERANGE, EBUSY on a non-zero -> non-zero change, ENOENT
# off nvidia), VFs as PCI functions probed by nvidia with virtfnN/physfn,
# seen by lspci through sysfs and through /proc/bus/pci (lspci -A
# linux-proc), never by NVML; the PF's SR-IOV capability in lspci -vvv
# with the live NumVFs; removed functions leave /proc/bus/pci.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/pci_lib.sh"

G=0000:17:00.0		# l40s.yaml's GPU 0
d=/sys/bus/pci/devices/$G
stage_node "$S/etc/profiles/l40s.yaml"
start_pcifs

check "sriov_totalvfs 32" [ "$(x cat $d/sriov_totalvfs)" = 32 ]
check "sriov_numvfs 0" [ "$(x cat $d/sriov_numvfs)" = 0 ]
check "sriov_offset 4, sriov_stride 1" [ "$(x cat $d/sriov_offset $d/sriov_stride | tr '\n' ' ')" = "4 1 " ]
check "sriov_vf_device 26b9 (no 0x, as the kernel prints it)" [ "$(x cat $d/sriov_vf_device)" = 26b9 ]
check "numvfs 33: ERANGE" [ "$(werr $d/sriov_numvfs 33)" = ERANGE ]
check "enable 4 VFs" [ "$(werr $d/sriov_numvfs 4)" = OK ]
check "changing 4 -> 8 without going to 0: EBUSY" [ "$(werr $d/sriov_numvfs 8)" = EBUSY ]
check "lspci -vvv: the PF's SR-IOV capability, 4 of 32 VFs enabled" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -vvv -s 17:00.0 2>/dev/null | grep -A5 'Single Root I/O Virtualization' > '$T/iov' && grep -q 'IOVCtl:.*Enable+' '$T/iov' && grep -q 'Total VFs: 32, Number of VFs: 4,' '$T/iov' && grep -q 'VF offset: 4, stride: 1, Device ID: 26b9' '$T/iov'"
check "the VFs have no SR-IOV capability" sh -c "! '$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -vvv -s 17:00.4 2>/dev/null | grep -q 'SR-IOV'"
check "virtfn0 -> ../0000:17:00.4 (offset 4)" [ "$(x readlink $d/virtfn0)" = ../0000:17:00.4 ]
check "virtfn3 -> ../0000:17:00.7" [ "$(x readlink $d/virtfn3)" = ../0000:17:00.7 ]
check "VF physfn -> ../$G" [ "$(x readlink /sys/bus/pci/devices/0000:17:00.5/physfn)" = "../$G" ]
check "a VF has no sriov_* files of its own" sh -c "! '$B/mokka-ctl' --host-root '$ROOT' exec -- test -e /sys/bus/pci/devices/0000:17:00.4/sriov_totalvfs"
check "VF device id 0x26b9" [ "$(x cat /sys/bus/pci/devices/0000:17:00.4/device)" = 0x26b9 ]
check "lspci -k: 5 functions on bus 17, all on nvidia" [ "$(x lspci -k -s 17: 2>/dev/null | grep -c 'Kernel driver in use: nvidia')" = 5 ]
check "/proc/bus/pci/devices lists the VFs (1704 10de26b9 nvidia)" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- cat /proc/bus/pci/devices | grep -q '^1704	10de26b9	0.*	nvidia\$'"
check "/proc/bus/pci/17 holds 00.0 and the 4 VFs" [ "$(x ls /proc/bus/pci/17 | tr '\n' ' ')" = "00.0 00.4 00.5 00.6 00.7 " ]
check "a VF's proc config reads its device id" [ "$(x od -An -tx2 -j2 -N2 /proc/bus/pci/17/00.4 | tr -d ' ')" = 26b9 ]
check "lspci -A linux-proc sees the GPU and its 4 VFs" [ "$(x lspci -A linux-proc -n -s 17: 2>/dev/null | grep -c '10de:26b9')" = 5 ]
if [ -x "$SMI" ]; then
	check "NVML: still 8 GPUs (VFs are no NVML devices)" [ "$(nvml_count)" = 8 ]
fi
check "a removed VF leaves /proc/bus/pci" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- sh -c 'echo 1 > /sys/bus/pci/devices/0000:17:00.7/remove' && ! '$B/mokka-ctl' --host-root '$ROOT' exec -- grep -q '^1707' /proc/bus/pci/devices && [ ! -e '$VIEW/proc/bus/pci/17/00.7' ]"
check "disable: numvfs 0" [ "$(werr $d/sriov_numvfs 0)" = OK ]
check "lspci -A linux-proc -vvv: Number of VFs: 0, VF Enable off" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -A linux-proc -vvv -s 17:00.0 2>/dev/null | grep -A4 'SR-IOV' | tr '\n' ' ' | grep -q 'Enable-.*Number of VFs: 0,'"
check "the VFs left /proc/bus/pci" [ "$(x ls /proc/bus/pci/17 | tr '\n' ' ')" = "00.0 " ]
check "unbinding the PF disables its VFs" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- sh -c 'echo 2 > $d/sriov_numvfs; echo $G > /sys/bus/pci/drivers/nvidia/unbind' && [ \"\$(cat '$VIEW$d/sriov_numvfs')\" = 0 ] && [ ! -e '$VIEW/sys/bus/pci/devices/0000:17:00.4' ]"
check "/proc/bus/pci/devices: the unbound GPU's driver field is empty" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- cat /proc/bus/pci/devices | grep '^1700	' | grep -q '	\$'"
check "vfio-pci holds it: numvfs: ENOENT (no enable_sriov)" [ "$(x sh -c "echo vfio-pci > $d/driver_override; echo $G > /sys/bus/pci/drivers_probe"; werr $d/sriov_numvfs 2)" = ENOENT ]
check "the GPU in /proc/bus/pci names vfio-pci" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- cat /proc/bus/pci/devices | grep '^1700	' | grep -q 'vfio-pci\$'"
finish
