#!/bin/bash
# Ordering across the Publish barrier (SURFACES.md §7.6): shrinking the GPU
# count 8 -> 4 removes the spec entries (nvidia.yaml) and withdraws the NRI
# spec before gpudriver removes /dev/nvidia4..7; growing back 4 -> 8 names
# the new GPUs only once their nodes exist.  A poller watches the node and
# the specs the whole time (node first, then spec: a spec that still names
# a node already gone is a real violation).  cri's withdrawal (its
# Publish, after the barrier) is held 400 ms by a test hook, so without the
# publish-first order gpudriver's publish would prune while cri sleeps and
# this test fails.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
[ -x "${MOKKA_NVIDIA_SMI:-}" ] || { echo "SKIP: no nvidia-smi (scripts/fetch-consumers.sh)"; exit 77; }
/usr/bin/python3 -c 'import yaml' 2>/dev/null || die "python3-yaml missing (scripts/install-deps.sh)"

cut() { # cut N OUT: the H100 profile with its first N GPUs
	/usr/bin/python3 - "$S/etc/profiles/h100.yaml" "$1" "$2" <<'EOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
n = int(sys.argv[2])
devs = sorted(doc["devices"], key=lambda e: e.get("index", 0))
gone = {e["pci"]["bus_id"].upper() for e in devs[n:]}
doc["devices"] = devs[:n]
for rc in (doc.get("pcie_topology") or {}).get("root_complexes") or []:
    rc["devices"] = [b for b in rc.get("devices") or [] if b.upper() not in gone]
yaml.safe_dump(doc, open(sys.argv[3], "w"), sort_keys=False)
EOF
}

cat > "$T/poll.py" <<'EOF'
# poll.py SPEC NRI NODE MODE OUT: MODE shrink waits until the node is gone,
# grow until the spec names it.  Writes counts and first-seen times.
import os, sys, time
spec, nri, node, mode, out = sys.argv[1:6]
name = '"/dev/' + os.path.basename(node) + '"'
def names(p):
    try:
        return name in open(p).read()
    except FileNotFoundError:
        return False
polls = bad_spec = bad_nri = bad_grow = 0
t_spec = t_nri = t_node = None
end = time.monotonic() + 30
open(out + ".ready", "w").close()
while time.monotonic() < end:
    node_there = os.path.exists(node)	# node first, then the specs
    spec_named, nri_there = names(spec), os.path.exists(nri)
    now = time.monotonic()
    polls += 1
    if mode == "shrink":
        if not spec_named and t_spec is None: t_spec = now
        if not nri_there and t_nri is None: t_nri = now
        if not node_there:
            t_node = t_node or now
            bad_spec += spec_named
            bad_nri += nri_there and names(nri)
            if polls > 10: break
    else:
        if spec_named and not node_there: bad_grow += 1
        if spec_named and node_there: break
with open(out, "w") as f:
    f.write("polls=%d bad_spec=%d bad_nri=%d bad_grow=%d\n" % (polls, bad_spec, bad_nri, bad_grow))
    f.write("order_ok=%d\n" % (t_spec is not None and t_node is not None and t_nri is not None
                               and t_spec <= t_node and t_nri <= t_node))
EOF

cut 8 "$T/profile.yaml" && cut 4 "$T/profile4.yaml" && cp "$T/profile.yaml" "$T/profile8.yaml" ||
	die "cannot cut the profile"
export MOKKA_TEST_CRI_STAGE_DELAY_MS=400
start_supervisor --simulators gpudriver,pcibus,cri --container-runtime none --config "$T/profile.yaml"
wait_for 40 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"
SPEC=$ROOT/var/run/cdi/nvidia.yaml NRI=$ROOT/var/run/cdi/nvml-mock-nri.yaml
NODE=$ROOT$R/driver/dev/nvidia7
check "8 GPUs published" grep -q '"/dev/nvidia7"' "$SPEC"

watch() { # watch MODE: start the poller and wait until it runs
	/usr/bin/python3 "$T/poll.py" "$SPEC" "$NRI" "$NODE" "$1" "$T/poll.$1" &
	POLL=$!
	wait_for 5 test -e "$T/poll.$1.ready" || die "poller did not start"
}

watch shrink
cp "$T/profile4.yaml" "$T/profile.yaml.new" && mv "$T/profile.yaml.new" "$T/profile.yaml"
wait "$POLL"
note "shrink: $(tr '\n' ' ' < "$T/poll.shrink")"
check "shrink: the node went" test ! -e "$NODE"
check "shrink: nvidia.yaml never named a node that was gone" grep -q 'bad_spec=0 ' "$T/poll.shrink"
check "shrink: the NRI spec never named a node that was gone" grep -q 'bad_nri=0 ' "$T/poll.shrink"
check "shrink: spec entry and NRI spec went before the node" grep -qx 'order_ok=1' "$T/poll.shrink"
wait_for 20 sh -c "grep -q 'generation 2 published' '$T/sup.log'" || fail "generation 2 not published"
check "shrink: nvidia.yaml names nvidia0..3 only" \
	sh -c "[ \$(grep -c 'path: \"/dev/nvidia[0-9]\"' '$SPEC') -eq 12 ] && ! grep -q 'nvidia[4-7]' '$SPEC'"
check "shrink: the NRI spec is back after Apply, 4 GPUs" \
	sh -c "[ \$(grep -c '^- name: \"[0-9]\"' '$NRI') -eq 4 ]"

watch grow
cp "$T/profile8.yaml" "$T/profile.yaml.new" && mv "$T/profile.yaml.new" "$T/profile.yaml"
wait "$POLL"
note "grow: $(tr '\n' ' ' < "$T/poll.grow")"
check "grow: nvidia.yaml names nvidia7 again" grep -q '"/dev/nvidia7"' "$SPEC"
check "grow: the spec never named a node before it existed" grep -q 'bad_grow=0' "$T/poll.grow"
finish
