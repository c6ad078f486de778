#!/bin/bash
# A failed pass publishes nothing (issue 20, the partial-publish
# reproduction in-tree): a profile edit that renames the GPUs while
# pcibus's Stage cannot succeed (a file planted where it needs a
# directory) must leave what nvidia-smi shows, through R/driver and through
# the /run/nvidia/driver mount, and config.yaml exactly as generation 1
# published them.  Once the obstacle goes, the automatic retry publishes
# generation 2 everywhere at once.  The same for nvlink's topology
# documents (generation 3 changes only them), and imex's channel nodes,
# which live inside gpudriver's dev generation, stay through every swap.
# Teardown leaves the root as it was.  (The channel count is a flag, fixed
# for a supervisor's life: imex.sh fails a count change stand-alone.)
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes, mounts)"; exit 77; }
[ -x "${MOKKA_NVIDIA_SMI:-}" ] || { echo "SKIP: no nvidia-smi (scripts/fetch-consumers.sh)"; exit 77; }

OLD="NVIDIA H100 80GB HBM3"
NEW="REJECTED PROFILE GPU"
cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
grep -q "^  name: \"$OLD\"" "$T/profile.yaml" || die "h100.yaml no longer names '$OLD'"
topo() { # topo CLIQUE: a ComputeDomain topology document
	cat <<TOPO
version: 1
domains:
- name: demo
  uuid: "00000000-0000-0000-0000-0000000000ab"
  cliques:
  - id: $1
    nodes: [node-a, node-b]
TOPO
}
topo 7 > "$T/topology.yaml"
cp "$T/topology.yaml" "$T/topology.gen1"
TOPO1=$ROOT$R/topology/topology.yaml
TOPO2=$ROOT$R/driver/config/topology.yaml
CH=$ROOT$R/driver/dev/nvidia-caps-imex-channels
channels() { (cd "$CH" 2>/dev/null && stat -c '%n %F %t:%T' channel*) | sort; }
tree_snapshot "$ROOT" > "$T/before"
start_supervisor --config "$T/profile.yaml" --topology "$T/topology.yaml" --node-name node-a \
	--imex-channels --imex-channel-count 4
wait_for 30 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"

# GPU 0's name as nvidia-smi -L prints it: from R/driver (the $ORIGIN run
# path), and from /run/nvidia/driver inside the supervisor's mount
# namespace (the bind mount lives there).
smi_name() {
	env -u LD_PRELOAD "$1" -L 2>&1 | sed -n '1s/^GPU 0: \(.*\) (UUID.*/\1/p'
}
via_r() { smi_name "$ROOT$R/driver/usr/bin/nvidia-smi"; }
via_run() {
	nsenter -t "$SUP_PID" -m -- env -u LD_PRELOAD \
		"$ROOT/run/nvidia/driver/usr/bin/nvidia-smi" -L 2>&1 |
		sed -n '1s/^GPU 0: \(.*\) (UUID.*/\1/p'
}
check "generation 1: nvidia-smi via R/driver names '$OLD' (got '$(via_r)')" [ "$(via_r)" = "$OLD" ]
check "generation 1: nvidia-smi via /run/nvidia/driver names '$OLD' (got '$(via_run)')" \
	[ "$(via_run)" = "$OLD" ]
check "generation 1: nvlink published both topology documents" \
	sh -c "cmp -s '$T/topology.gen1' '$TOPO1' && cmp -s '$T/topology.gen1' '$TOPO2'"
channels > "$T/channels.gen1"
check "generation 1: 4 IMEX channels in the driver's dev ($(wc -l < "$T/channels.gen1"))" \
	[ "$(wc -l < "$T/channels.gen1")" -eq 4 ]
cp "$ROOT$R/driver/config/config.yaml" "$T/config.gen1"
ls "$ROOT$R/driver/dev" > "$T/dev.gen1"

# Generation 2: new GPU name, and pcibus's Stage fails.
mv "$ROOT$R/proc" "$T/proc.saved"
echo blocker > "$ROOT$R/proc"
sed -i "s/^  name: \"$OLD\"/  name: \"$NEW\"/" "$T/profile.yaml"
wait_for 20 grep -q 'generation 2 failed' "$T/sup.log" || die "generation 2 did not fail"
check "log: generation 2 failed, generation 1 kept" \
	grep -q 'generation 2 failed; keeping what generation 1 published' "$T/sup.log"
check "gpudriver's own Stage succeeded (only pcibus failed)" \
	sh -c "! grep -q 'stage gpudriver failed' '$T/sup.log'"
check "/healthz 503" is_code /healthz 503
check "mokka_generation still 1" [ "$(metric mokka_generation)" = 1 ]
check "nvidia-smi via R/driver still names '$OLD' (got '$(via_r)')" [ "$(via_r)" = "$OLD" ]
check "nvidia-smi via /run/nvidia/driver still names '$OLD' (got '$(via_run)')" \
	[ "$(via_run)" = "$OLD" ]
check "config.yaml is generation 1's, byte for byte" \
	cmp -s "$T/config.gen1" "$ROOT$R/driver/config/config.yaml"
check "config.yaml does not name '$NEW'" sh -c "! grep -q '$NEW' '$ROOT$R/driver/config/config.yaml'"
ls "$ROOT$R/driver/dev" > "$T/dev.now"
check "device nodes are generation 1's" cmp -s "$T/dev.gen1" "$T/dev.now"
channels > "$T/channels.now"
check "the IMEX channels are generation 1's" cmp -s "$T/channels.gen1" "$T/channels.now"

# The obstacle goes; the retry publishes generation 2 everywhere.
rm -f "$ROOT$R/proc"
mv "$T/proc.saved" "$ROOT$R/proc"
wait_for 40 sh -c "[ \"\$(curl -s 127.0.0.1:$PORT/metrics | awk '\$1==\"mokka_generation\"{print \$2}')\" = 2 ]" \
	|| fail "the retry did not publish generation 2"
check "generation 2: nvidia-smi via R/driver names '$NEW' (got '$(via_r)')" [ "$(via_r)" = "$NEW" ]
check "generation 2: nvidia-smi via /run/nvidia/driver names '$NEW' (got '$(via_run)')" \
	[ "$(via_run)" = "$NEW" ]
check "/healthz 200 again" is_code /healthz 200
channels > "$T/channels.gen2"
check "gpudriver's new dev carries imex's channels" cmp -s "$T/channels.gen1" "$T/channels.gen2"

# Generation 3: a new topology document while pcibus's Stage fails again:
# nvlink's Stage succeeds, but neither document changes until the pass
# does; then both do.
mv "$ROOT$R/proc" "$T/proc.saved"
echo blocker > "$ROOT$R/proc"
topo 9 > "$T/topology.new" && mv "$T/topology.new" "$T/topology.yaml"
wait_for 20 grep -q 'generation 3 failed' "$T/sup.log" || die "generation 3 did not fail"
check "nvlink's own Stage succeeded (only pcibus failed)" \
	sh -c "! grep -q 'stage nvlink failed' '$T/sup.log'"
check "R/topology/topology.yaml is generation 1's" cmp -s "$T/topology.gen1" "$TOPO1"
check "R/driver/config/topology.yaml is generation 1's" cmp -s "$T/topology.gen1" "$TOPO2"
channels > "$T/channels.now"
check "the IMEX channels are unchanged" cmp -s "$T/channels.gen1" "$T/channels.now"
rm -f "$ROOT$R/proc"
mv "$T/proc.saved" "$ROOT$R/proc"
generation_is() { [ "$(metric mokka_generation)" = "$1" ]; }
wait_for 40 generation_is 3 || fail "the retry did not publish generation 3"
check "generation 3: both topology documents are the new one" \
	sh -c "cmp -s '$T/topology.yaml' '$TOPO1' && cmp -s '$T/topology.yaml' '$TOPO2'"
channels > "$T/channels.now"
check "generation 3: still the 4 IMEX channels" cmp -s "$T/channels.gen1" "$T/channels.now"

stop_and_check_teardown "$(daemon_pid)"
finish
