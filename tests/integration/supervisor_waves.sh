#!/bin/bash
# The three-simulator node through stage -> barrier -> daemon -> apply ->
# teardown, checking each wave's semantics and /healthz, /readyz flips.
. "$(dirname "$0")/../lib.sh"

cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
cat > "$T/topology.yaml" <<TOPO
version: 1
domains:
- name: demo
  uuid: "00000000-0000-0000-0000-0000000000ab"
  cliques:
  - id: 7
    nodes: [node-a, node-b]
TOPO
tree_snapshot "$ROOT" > "$T/before"
start_supervisor --config "$T/profile.yaml" --topology "$T/topology.yaml" --node-name node-a

wait_for 15 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"
check "/healthz 200 after the first pass" is_code /healthz 200

# Stage: pcibus tree, nvlink documents, fabric state dir.
n=$(ls "$ROOT$R/sys/bus/pci/devices" | wc -l)
check "pcibus staged 8 GPUs + 8 HCAs + 16 root ports ($n entries)" [ "$n" -eq 32 ]
check "nvlink staged R/topology/topology.yaml" cmp -s "$T/topology.yaml" "$ROOT$R/topology/topology.yaml"
check "nvlink staged R/driver/config/topology.yaml" cmp -s "$T/topology.yaml" "$ROOT$R/driver/config/topology.yaml"
# Apply: NFD feature file (published only after the barrier).
nfd=$ROOT/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features
check "pcibus applied the NFD feature file" grep -qx 'pci-10de.present=true' "$nfd"
# Daemon: exactly one nv-fabricmanager, child of the supervisor, marker kept.
dpid=$(daemon_pid)
check "nv-fabricmanager runs under the supervisor" [ -n "$dpid" ]
check "exactly one nv-fabricmanager" [ "$(pgrep -P "$SUP_PID" -f '^nv-fabricmanager' | wc -l)" -eq 1 ]
check "fabric manager marker present" wait_for 5 test -e "$ROOT$R/fabric-state/fabricmanager.ready"
check "metrics: generation 1" [ "$(metric mokka_generation)" = 1 ]

# Reload on profile edit: new generation, same daemon PID, reload counted.
sed -i 's/^\(\s*driver_version:\).*/\1 "550.999.01"/' "$T/profile.yaml"
wait_for 10 sh -c "[ \"\$(curl -s 127.0.0.1:$PORT/metrics | awk '\$1==\"mokka_generation\"{print \$2}')\" = 2 ]" \
	|| fail "profile edit did not produce generation 2"
check "daemon kept its PID across Reload" [ "$(daemon_pid)" = "$dpid" ]
check "reload counted" [ "$(metric mokka_reloads_total)" -ge 1 ]

# Stage failures: every one collected, named in /healthz, no Apply, last
# publish kept.
mv "$ROOT$R/proc" "$T/proc.saved"
echo blocker > "$ROOT$R/proc"		# a file where pcibus needs a directory
mv "$ROOT$R/topology" "$T/topology.saved"
echo blocker > "$ROOT$R/topology"	# and one where nvlink needs one
cp "$nfd" "$T/nfd.before"
sed -i 's/^\(\s*driver_version:\).*/\1 "550.999.02"/' "$T/profile.yaml"
wait_for 10 is_code /healthz 503 || fail "/healthz did not turn 503 on a failed Stage"
check "/healthz names pcibus" grep -q pcibus "$T/body"
check "/healthz names nvlink too (all Stage errors collected)" grep -q nvlink "$T/body"
check "no Apply after the failed Stage (NFD file unchanged)" cmp -s "$nfd" "$T/nfd.before"
check "metrics count the failed pass" [ "$(metric mokka_passes_failed_total)" -ge 1 ]
rm -f "$ROOT$R/proc" "$ROOT$R/topology"
mv "$T/proc.saved" "$ROOT$R/proc"
mv "$T/topology.saved" "$ROOT$R/topology"
wait_for 40 is_code /healthz 200 || fail "/healthz did not recover once the cause went away"
# /healthz turns 200 at the barrier; Publish and Apply follow.
check "NFD file republished for the new generation" wait_for 10 grep -q '550.999.02' "$nfd"

# An Apply failure: Stage is fine (/healthz stays 200), the pass fails and
# is reported, and the retry publishes once the cause is gone.
failed_before=$(metric mokka_passes_failed_total)
fdir=$(dirname "$nfd")
mv "$fdir" "$T/features.saved"
echo blocker > "$fdir"			# NFD's directory is a file
sed -i 's/^\(\s*driver_version:\).*/\1 "550.999.03"/' "$T/profile.yaml"
wait_for 10 sh -c "[ \"\$(curl -s 127.0.0.1:$PORT/metrics | awk '\$1==\"mokka_passes_failed_total\"{print \$2}')\" -gt $failed_before ]" \
	|| fail "an Apply failure did not fail the pass"
check "Apply failure logged with its surface" grep -q 'apply pcibus failed' "$T/sup.log"
check "/healthz stays 200 on an Apply failure (Stage was fine)" is_code /healthz 200
rm -f "$fdir"
mv "$T/features.saved" "$fdir"
wait_for 40 grep -q '550.999.03' "$nfd" || fail "Apply was not retried once the cause went away"
check "daemon still the one started at the first barrier" [ "$(daemon_pid)" = "$dpid" ]

# Teardown: SIGTERM leaves the root exactly as it was.
stop_and_check_teardown "$dpid"
finish
