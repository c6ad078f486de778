#!/bin/bash
# The GPU passthrough flow of a Kubernetes GPU module (seed 003) against
# mokka-pcifs, through `mokka-ctl exec` (no LD_PRELOAD): driver_override,
# unbind from nvidia, drivers_probe into vfio-pci, check, roll back when
# the bind fails; lspci -k / -vv before and after each transition; the
# card leaves NVML (real nvidia-smi) while on vfio-pci and comes back;
# /dev/vfio/<group> and the IOMMU group; a GPU with processes or MIG
# instances refuses to leave nvidia (EBUSY); driverctl set/unset-override;
# remove + rescan.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/pci_lib.sh"

G=0000:1a:00.0		# GPU 0 of h100.yaml
G2=0000:2a:00.0		# GPU 1
stage_node
start_pcifs

# The job's switch script (seed 003), run inside the view as-is.
cat > "$T/switch.sh" <<'SH'
#!/bin/sh
# switch.sh BDF DRIVER: override, unbind, probe, verify; roll back on failure.
d=/sys/bus/pci/devices/$1
cur=$(basename "$(readlink "$d/driver")" 2>/dev/null)
rollback() {
	echo > "$d/driver_override"
	[ -L "$d/driver" ] && echo "$1" > "$d/driver/unbind"
	echo "$1" > /sys/bus/pci/drivers_probe
	echo "rolled back to $(basename "$(readlink "$d/driver")")"
	exit 1
}
echo "$2" > "$d/driver_override" || exit 1
if [ -L "$d/driver" ]; then echo "$1" > "$d/driver/unbind" || rollback "$1"; fi
echo "$1" > /sys/bus/pci/drivers_probe
[ "$(basename "$(readlink "$d/driver")")" = "$2" ] || rollback "$1"
echo "switched $1 from $cur to $2"
SH
chmod +x "$T/switch.sh"

check "lspci -k: GPU 0 on nvidia" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -k -s ${G#0000:} 2>/dev/null | grep -q 'Kernel driver in use: nvidia'"
check "lspci -vv reads the GPU through the view" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -vv -s ${G#0000:} 2>/dev/null | grep -q 'LnkCap:'"
check "vfio-pci driver directory exists, no devices" [ "$(x ls /sys/bus/pci/drivers/vfio-pci | tr '\n' ' ')" = "bind new_id remove_id uevent unbind " ]
check "driver_override reads (null)" [ "$(x cat /sys/bus/pci/devices/$G/driver_override)" = "(null)" ]
check "IOMMU on: kernel command line has intel_iommu=on iommu=pt" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- cat /proc/cmdline | grep -q 'intel_iommu=on iommu=pt'"
grp=$(x readlink /sys/bus/pci/devices/$G/iommu_group); grp=${grp##*/}
check "iommu_group link names a group ($grp) listing the GPU" [ "$(x readlink /sys/kernel/iommu_groups/$grp/devices/$G)" = "../../../../devices/pci0000:00/0000:00:01.0/$G" ]
check "/dev/vfio/vfio is char 10:196, no group node yet" sh -c "[ \"\$('$B/mokka-ctl' --host-root '$ROOT' exec -- stat -c '%F %t:%T' /dev/vfio/vfio)\" = 'character special file a:c4' ] && ! '$B/mokka-ctl' --host-root '$ROOT' exec -- test -e /dev/vfio/$grp"
n0=
if [ -x "$SMI" ]; then
	n0=$(nvml_count)
	check "NVML sees 8 GPUs before" [ "$n0" = 8 ]
else
	note "no staged nvidia-smi (scripts/fetch-consumers.sh): NVML checks read the binding file only"
fi

# --- to vfio-pci and back ---
check "switch GPU 0 to vfio-pci" x "$T/switch.sh" $G vfio-pci
check "lspci -k: GPU 0 on vfio-pci" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -k -s ${G#0000:} 2>/dev/null | grep -q 'Kernel driver in use: vfio-pci'"
check "vfio-pci lists GPU 0, nvidia does not" sh -c "[ -L '$VIEW/sys/bus/pci/drivers/vfio-pci/$G' ] && [ ! -e '$VIEW/sys/bus/pci/drivers/nvidia/$G' ]"
check "/dev/vfio/$grp appeared (char)" x test -c /dev/vfio/$grp
check "binding file says vfio-pci" grep -qx "$G vfio-pci" "$NODE/driver/config/pci-drivers"
if [ -n "$n0" ]; then
	check "NVML: 7 GPUs while GPU 0 is on vfio-pci" [ "$(nvml_count)" = 7 ]
	check "NVML: GPU 0's bus id gone" sh -c "! '$B/mokka-ctl' --host-root '$ROOT' exec -- '$SMI' --query-gpu=pci.bus_id --format=csv,noheader | grep -qi '1A:00.0'"
fi
check "bind to nvidia while on vfio-pci: ENODEV (override names vfio-pci)" [ "$(werr /sys/bus/pci/drivers/nvidia/bind $G)" = ENODEV ]
check "switch GPU 0 back to nvidia" x "$T/switch.sh" $G nvidia
check "lspci -k: GPU 0 on nvidia again" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -k -s ${G#0000:} 2>/dev/null | grep -q 'Kernel driver in use: nvidia'"
check "/dev/vfio/$grp gone" sh -c "! '$B/mokka-ctl' --host-root '$ROOT' exec -- test -e /dev/vfio/$grp"
[ -n "$n0" ] && check "NVML: 8 GPUs again" [ "$(nvml_count)" = 8 ]

# --- the kernel's errnos ---
check "bind while bound: EBUSY" [ "$(x sh -c "echo > /sys/bus/pci/devices/$G/driver_override"; werr /sys/bus/pci/drivers/nvidia/bind $G)" = EBUSY ]
check "bind of an unknown device: ENODEV" [ "$(werr /sys/bus/pci/drivers/nvidia/bind 0000:ff:00.0)" = ENODEV ]
check "unbind from a driver not holding it: ENODEV" [ "$(werr /sys/bus/pci/drivers/vfio-pci/unbind $G)" = ENODEV ]
check "vfio-pci bind without override or id: ENODEV" [ "$(x sh -c "echo $G > /sys/bus/pci/drivers/nvidia/unbind"; werr /sys/bus/pci/drivers/vfio-pci/bind $G)" = ENODEV ]
check "a card driverless after unbind shows no driver" [ "$(drv_of $G)" = none ]
[ -n "$n0" ] && check "NVML: a driverless GPU is not listed" [ "$(nvml_count)" = 7 ]
check "new_id makes vfio-pci take the card" [ "$(werr /sys/bus/pci/drivers/vfio-pci/new_id '10de 2330')" = OK ] 
check "...every unbound H100 (GPU 0)" [ "$(drv_of $G)" = vfio-pci ]
check "new_id twice: EEXIST" [ "$(werr /sys/bus/pci/drivers/vfio-pci/new_id '10de 2330')" = EEXIST ]
check "remove_id" [ "$(werr /sys/bus/pci/drivers/vfio-pci/remove_id '10de 2330')" = OK ]
check "remove_id again: ENODEV" [ "$(werr /sys/bus/pci/drivers/vfio-pci/remove_id '10de 2330')" = ENODEV ]
x sh -c "echo $G > /sys/bus/pci/drivers/vfio-pci/unbind; echo $G > /sys/bus/pci/drivers/nvidia/bind"
check "bind back to nvidia by hand" [ "$(drv_of $G)" = nvidia ]
check "new_id with one field: EINVAL" [ "$(werr /sys/bus/pci/drivers/vfio-pci/new_id '10de')" = EINVAL ]
check "reset 2: EINVAL" [ "$(werr /sys/bus/pci/devices/$G/reset 2)" = EINVAL ]
check "reset 1: OK" [ "$(werr /sys/bus/pci/devices/$G/reset 1)" = OK ]
check "drivers_probe of an unknown device: ENODEV" [ "$(werr /sys/bus/pci/drivers_probe 0000:ff:00.0)" = ENODEV ]
check "write to a read-only attribute: EACCES" [ "$(werr /sys/bus/pci/devices/$G/vendor 0x1234)" = EACCES ]

# --- rollback: no IOMMU, vfio-pci's probe fails (EINVAL) ---
echo IOMMU=off > "$NODE/run/pcifs.conf"
kill -HUP "$PCIFS_PID"
check "IOMMU off: no iommu_group link" wait_for 5 sh -c "! '$B/mokka-ctl' --host-root '$ROOT' exec -- test -e /sys/bus/pci/devices/$G/iommu_group"
check "IOMMU off: the kernel command line is the host's" [ "$(x cat /proc/cmdline)" = "$(cat /proc/cmdline)" ]
out=$(x "$T/switch.sh" $G vfio-pci); st=$?
check "switch fails and rolls back ($out)" [ $st -ne 0 ] && [ "$out" = "rolled back to nvidia" ]
check "after the rollback GPU 0 is on nvidia" [ "$(drv_of $G)" = nvidia ]
check "explicit bind to vfio-pci: EINVAL (probe error)" [ "$(x sh -c "echo vfio-pci > /sys/bus/pci/devices/$G2/driver_override; echo $G2 > /sys/bus/pci/drivers/nvidia/unbind"; werr /sys/bus/pci/drivers/vfio-pci/bind $G2)" = EINVAL ]
x sh -c "echo > /sys/bus/pci/devices/$G2/driver_override; echo $G2 > /sys/bus/pci/drivers_probe"
check "rolled back GPU 1 by hand" [ "$(drv_of $G2)" = nvidia ]
[ -n "$n0" ] && check "NVML: 8 GPUs after the rollbacks" [ "$(nvml_count)" = 8 ]
echo IOMMU=on > "$NODE/run/pcifs.conf"
kill -HUP "$PCIFS_PID"
wait_for 5 x test -e /sys/bus/pci/devices/$G/iommu_group || fail "IOMMU back on"

# --- a GPU with processes open: nvidia holds it ---
cat > "$NODE/driver/config/overrides.yaml" <<'YAML'
version: 1
devices:
  "1":
    processes:
      - {pid: 4242, name: "python3", used_memory_mib: 1024, type: "C"}
YAML
check "unbind of a GPU with processes: EBUSY" [ "$(werr /sys/bus/pci/drivers/nvidia/unbind $G2)" = EBUSY ]
check "remove of a GPU with processes: EBUSY" [ "$(werr /sys/bus/pci/devices/$G2/remove 1)" = EBUSY ]
check "the job's switch fails, card stays on nvidia" sh -c "! '$B/mokka-ctl' --host-root '$ROOT' exec -- '$T/switch.sh' $G2 vfio-pci >/dev/null && [ \"\$(readlink '$VIEW/sys/bus/pci/devices/$G2/driver')\" = ../../../../bus/pci/drivers/nvidia ]"
rm -f "$NODE/driver/config/overrides.yaml"
x sh -c "echo > /sys/bus/pci/devices/$G2/driver_override"

# --- a GPU with MIG instances (created by the real nvidia-smi): nvidia holds it ---
G3=0000:3a:00.0
if [ -x "$SMI" ]; then
	x "$SMI" -i 2 -mig 1 >/dev/null 2>&1
	x "$SMI" mig -i 2 -cgi 19 -C >/dev/null 2>&1 || fail "nvidia-smi mig -cgi"
	check "unbind of a GPU with MIG instances: EBUSY" [ "$(werr /sys/bus/pci/drivers/nvidia/unbind $G3)" = EBUSY ]
	x "$SMI" mig -i 2 -dci >/dev/null 2>&1
	x "$SMI" mig -i 2 -dgi >/dev/null 2>&1
	check "without instances the unbind goes through" [ "$(werr /sys/bus/pci/drivers/nvidia/unbind $G3)" = OK ]
	x sh -c "echo $G3 > /sys/bus/pci/drivers/nvidia/bind"
	x "$SMI" -i 2 -mig 0 >/dev/null 2>&1
fi

# --- driverctl (Debian), unmodified ---
check "driverctl set-override vfio-pci" x driverctl --nosave set-override $G2 vfio-pci
check "driverctl: GPU 1 on vfio-pci, override set" sh -c "[ \"\$('$B/mokka-ctl' --host-root '$ROOT' exec -- cat /sys/bus/pci/devices/$G2/driver_override)\" = vfio-pci ]" 
check "lspci -k after driverctl: vfio-pci" sh -c "'$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -k -s ${G2#0000:} 2>/dev/null | grep -q 'Kernel driver in use: vfio-pci'"
check "driverctl unset-override" x driverctl --nosave unset-override $G2
check "driverctl: back on nvidia, override cleared" sh -c "[ \"\$('$B/mokka-ctl' --host-root '$ROOT' exec -- cat /sys/bus/pci/devices/$G2/driver_override)\" = '(null)' ] && [ \"\$(readlink '$VIEW/sys/bus/pci/devices/$G2/driver')\" = ../../../../bus/pci/drivers/nvidia ]"

# --- remove and rescan ---
check "remove GPU 0" [ "$(werr /sys/bus/pci/devices/$G/remove 1)" = OK ]
check "lspci no longer lists it" sh -c "! '$B/mokka-ctl' --host-root '$ROOT' exec -- lspci -s ${G#0000:} 2>/dev/null | grep -q ."
check "its directory and bus link are gone" sh -c "[ ! -e '$VIEW/sys/bus/pci/devices/$G' ] && [ ! -e '$VIEW/sys/devices/pci0000:00/0000:00:01.0/$G' ]"
[ -n "$n0" ] && check "NVML: 7 GPUs with GPU 0 removed" [ "$(nvml_count)" = 7 ]
check "rescan" [ "$(werr /sys/bus/pci/rescan 1)" = OK ]
check "rescan brings GPU 0 back on nvidia" [ "$(drv_of $G)" = nvidia ]
check "rescan garbage: EINVAL" [ "$(werr /sys/bus/pci/rescan x)" = EINVAL ]

# --- teardown ---
stop_pcifs
check "SIGTERM unmounts the view" sh -c "! grep -q ' $VIEW fuse' /proc/self/mounts"
check "and removes the binding file" [ ! -e "$NODE/driver/config/pci-drivers" ]
finish
