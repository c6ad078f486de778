#!/bin/bash
# Other vendors' accelerators (etc/profiles/h100-amd-metax.yaml: two AMD
# Instinct, two MetaX beside eight H100): on the PCI bus for lspci and
# /proc/bus/pci through `mokka-ctl exec`, announced to NFD as
# pci-1002.present / pci-9999.present, never in NVML; an AMD card goes to
# vfio-pci and back with driverctl like a GPU.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/pci_lib.sh"
P=$S/etc/profiles/h100-amd-metax.yaml
A=0000:0c:00.0
stage_node "$P"
start_pcifs

check "lspci: 2 AMD Instinct on amdgpu" [ "$(x lspci -k -d 1002: 2>/dev/null | grep -c 'Kernel driver in use: amdgpu')" = 2 ]
check "lspci names the AMD card from pci.ids" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -s 0c:00.0 2>/dev/null | grep -q 'Instinct MI250X'"
check "lspci: 2 MetaX cards on metax" [ "$(x lspci -k -d 9999: 2>/dev/null | grep -c 'Kernel driver in use: metax')" = 2 ]
check "MetaX class: processing accelerator" [ "$(x cat /sys/bus/pci/devices/0000:8c:00.0/class)" = 0x120000 ]
check "MetaX sits on NUMA node 1" [ "$(x cat /sys/bus/pci/devices/0000:8c:00.0/numa_node)" = 1 ]
check "/proc/bus/pci lists them (lspci -A linux-proc)" [ "$(x lspci -A linux-proc -d 9999: 2>/dev/null | wc -l)" = 2 ]
check "the driver directories exist" x test -e /sys/bus/pci/drivers/amdgpu/$A
if [ -x "$SMI" ]; then
	check "NVML: the 8 H100 only" [ "$(nvml_count)" = 8 ]
	check "NVML: no AMD or MetaX bus id" sh -c "! '$B/mokka-ctl' --host-root '$ROOT' exec -- '$SMI' --query-gpu=pci.bus_id --format=csv,noheader | grep -qi -e '0C:00.0' -e '8C:00.0'"
fi
check "driverctl: the AMD card to vfio-pci" x driverctl --nosave set-override $A vfio-pci
check "lspci -k: vfio-pci" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -k -s 0c:00.0 2>/dev/null | grep -q 'Kernel driver in use: vfio-pci'"
check "driverctl: back to amdgpu" x driverctl --nosave unset-override $A
check "on amdgpu again" [ "$(drv_of $A)" = amdgpu ]
[ -x "$SMI" ] && check "NVML: still 8" [ "$(nvml_count)" = 8 ]

MOKKA_PKGLIBDIR=$B/.libs "$B/mokka-worker-pcibus" --host-root "$ROOT" --config "$P" --log-level warn apply ||
	fail "pcibus apply"
nfd=$ROOT/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features
check "NFD: pci-10de, pci-1002 and pci-9999 present" sh -c "grep -qx pci-10de.present=true '$nfd' && grep -qx pci-1002.present=true '$nfd' && grep -qx pci-9999.present=true '$nfd'"
check "NFD: the GPU count is NVIDIA's (8)" grep -qx mokka.gpu.count=8 "$nfd"
MOKKA_PKGLIBDIR=$B/.libs "$B/mokka-worker-pcibus" --host-root "$ROOT" --config "$P" --log-level warn revoke >/dev/null 2>&1
finish
