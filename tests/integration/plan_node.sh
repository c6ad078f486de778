#!/bin/bash
# End to end (issue 14): the seed's example profile, inventory and policy
# -> mokka-plan -> a running mokka-supervisor on one planned Node
# (--state-source controlplane:DIR --node-name node-00001, the 8-GPU H100
# profile underneath, its identities pinned: a named node otherwise derives
# its own, profile/identity.h) -> the real nvidia-smi 535:
#   * GPUs 0-3 carry the plan's UUIDs and serials (GPUs 4-7 the profile's);
#   * the policy's GPU (logical Node 1, GPU 0) is lost, the others draw the
#     profile's defaults.runtime (350 W, 45 C);
#   * the policy edited (Healthy, drawMilliWatts: 0) and re-planned: within
#     a second nvidia-smi reads GPU 0 again, at 0.00 W;
#   * a node-local override (mokka-ctl's overrides.yaml) wins over the plan;
#   * a broken document keeps the last good plan in force;
#   * the policy moved to GPU 1 with Xid 48: GPU 1 lost, GPU 0 back to the
#     defaults, and a pynvml event waiter receives Xid 48 for GPU 1 once.
# Skips (77) only without root or the unpacked nvidia-smi.
. "$(dirname "$0")/../lib.sh"
PY=/usr/bin/python3
SMI_SRC=${MOKKA_NVIDIA_SMI:-}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -n "$SMI_SRC" ] && [ -x "$SMI_SRC" ] || { echo "SKIP: no nvidia-smi (run scripts/fetch-consumers.sh)"; exit 77; }
"$PY" -c 'import yaml' 2>/dev/null || die "python3-yaml missing (scripts/install-deps.sh)"
export MOKKA_PKGLIBDIR=${MOKKA_PKGLIBDIR:-$B/.libs}
E=$S/etc/examples
SMI=$ROOT$R/driver/usr/bin/nvidia-smi
OV=$ROOT$R/driver/config/overrides.yaml
cluster() { "$PY" "$S/tests/planner_cluster.py" "$@"; }
q() { "$SMI" -i "$1" --query-gpu="$2" --format=csv,noheader 2>&1; }

cluster --apply "$E"/*.yaml --nodes 2 --pool example > "$T/c1.yaml" || die "cluster"
"$B/mokka-plan" -o "$T/plan" "$T/c1.yaml" || die "mokka-plan"
DOC=$T/plan/nodes/node-00001.yaml
[ -s "$DOC" ] || die "no desired state for node-00001"
cp "$S/etc/profiles/h100.yaml" "$T/h100.yaml"
printf 'node_identity: pinned\n' >> "$T/h100.yaml"
start_supervisor --simulators gpudriver --state-source "controlplane:$T/plan/nodes" \
	--node-name node-00001 --config "$T/h100.yaml"
wait_for 60 test -x "$SMI" || die "driver root not staged"
wait_for 30 sh -c "'$SMI' -L 2>/dev/null | grep -q 'GPU 7'" || die "nvidia-smi -L: $("$SMI" -L 2>&1)"

"$SMI" -L > "$T/L.out" 2>&1
for i in 0 1 2 3; do
	uuid=$("$PY" -c "import yaml,sys; d=yaml.safe_load(open('$DOC')); print(d['spec']['gpus'][$i]['uuid'])")
	serial=$("$PY" -c "import yaml,sys; d=yaml.safe_load(open('$DOC')); print(d['spec']['gpus'][$i]['serial'])")
	check "GPU $i has the plan's UUID $uuid" grep -q "^GPU $i: .*(UUID: $uuid)" "$T/L.out"
	[ "$i" = 0 ] || check "GPU $i has the plan's serial" [ "$(q "$i" serial)" = "$serial" ]
done
check "GPU 4 keeps the profile's UUID" grep -q "^GPU 4: .*GPU-2330de10-0000-0000-0000-000000000004" "$T/L.out"
"$SMI" -q -i 0 > "$T/lost.out" 2>&1
check "the policy's GPU 0 is lost to NVML" grep -qi 'GPU is lost\|Unable to determine the device handle' "$T/lost.out"
check "GPU 1 draws the profile default (350 W)" [ "$(q 1 power.draw)" = "350.00 W" ]
check "GPU 1 at the profile default 45 C" [ "$(q 1 temperature.gpu)" = "45" ]

# edit the policy: healthy again, still drawing zero
sed -e 's/state: Failed/state: Healthy/' "$E/sgpu-runtime-policy.yaml" > "$T/policy.yaml"
cluster --apply "$E/sgpu-rack-profile.yaml" "$E/sgpu-inventory.yaml" "$T/policy.yaml" \
	--nodes 2 --pool example --applied "$T/plan" > "$T/c2.yaml"
"$B/mokka-plan" -o "$T/plan" "$T/c2.yaml" || fail "re-plan"
start=$(date +%s%N)	# the document is in place: from here to NVML
wait_for 5 sh -c "[ \"\$('$SMI' -i 0 --query-gpu=power.draw --format=csv,noheader 2>&1)\" = '0.00 W' ]"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "policy edit: GPU 0 back and at 0.00 W after ${ms} ms (want < 1000)" \
	[ "$(q 0 power.draw)" = "0.00 W" -a "$ms" -lt 1000 ]

# a node-local override wins over the plan
printf 'version: 1\ndevices:\n  "0":\n    power:\n      current_draw_mw: 123000\n' > "$OV.tmp" && mv "$OV.tmp" "$OV"
wait_for 3 sh -c "[ \"\$('$SMI' -i 0 --query-gpu=power.draw --format=csv,noheader 2>&1)\" = '123.00 W' ]"
check "node-local override wins over the plan" [ "$(q 0 power.draw)" = "123.00 W" ]
: > "$OV"

# a broken document: the last good plan stays
echo 'kind: [' > "$DOC.tmp" && mv "$DOC.tmp" "$DOC"
wait_for 5 grep -q "control plane: .*node-00001.yaml: .*keeping the last good plan" "$T/sup.log"
check "a broken document is reported" grep -q "keeping the last good plan" "$T/sup.log"
wait_for 3 sh -c "[ \"\$('$SMI' -i 0 --query-gpu=power.draw --format=csv,noheader 2>&1)\" = '0.00 W' ]"
check "the last good plan stays in force" [ "$(q 0 power.draw)" = "0.00 W" ]
check "the plan's UUIDs stay" sh -c "'$SMI' -L | grep -q \"^GPU 0: .*$(sed -n 's/^GPU 0: .*(UUID: \(GPU-[^)]*\)).*/\1/p' "$T/L.out")\""
# a policy that fails GPU 1 with Xid 48: an NVML process sees it lost and
# its event waiter (the device plugin's health-check shape) receives the
# Xid, through the real pynvml
cat > "$T/policy3.yaml" <<'YAML'
apiVersion: mokka.nvidia.com/v1alpha1
kind: SGPURuntimePolicy
metadata:
  name: example-node-1-failed
spec:
  targetRef: {name: example, rackGroups: [gb200], rackIndexes: [0], nodeIndexes: [1], gpuIndexes: [1]}
  health: {state: Failed, xid: 48}
  telemetry: {drawMilliWatts: 0}
YAML
cluster --apply "$E/sgpu-rack-profile.yaml" "$E/sgpu-inventory.yaml" "$T/policy3.yaml" \
	--nodes 2 --pool example --applied "$T/plan" > "$T/c3.yaml"
"$B/mokka-plan" -o "$T/plan" "$T/c3.yaml" || fail "re-plan (Xid 48)"
wait_for 5 sh -c "'$SMI' -q -i 1 2>&1 | grep -qi 'GPU is lost\|Unable to determine the device handle'"
check "policy moved to GPU 1: GPU 1 lost" sh -c "'$SMI' -q -i 1 2>&1 | grep -qi 'lost\|Unable to determine'"
check "policy moved to GPU 1: GPU 0 back to the defaults (350 W)" [ "$(q 0 power.draw)" = "350.00 W" ]
PYNVML=$MOKKA_CONSUMERS/python3-pynvml/usr/lib/python3/dist-packages
if [ -d "$PYNVML" ]; then
	PYTHONPATH=$PYNVML LD_LIBRARY_PATH=$ROOT$R/driver/usr/lib64 timeout 20 "$PY" - > "$T/xid.out" 2>&1 <<'PYX'
import ctypes, time, pynvml as N
N.nvmlInit()
es = N.nvmlEventSetCreate()
addr = lambda h: ctypes.cast(h, ctypes.c_void_p).value
index = {}
for i in range(N.nvmlDeviceGetCount()):
    h = N.nvmlDeviceGetHandleByIndex(i)
    index[addr(h)] = i
    try:
        N.nvmlDeviceRegisterEvents(h, N.nvmlEventTypeXidCriticalError, es)
    except N.NVMLError as err:
        print("register", i, err, flush=True)
end = time.time() + 5
while time.time() < end:
    try:
        e = N.nvmlEventSetWait_v2(es, 200)
        print("xid", e.eventData, "index", index.get(addr(e.device), "?"), flush=True)
    except N.NVMLError as err:
        if err.value != N.NVML_ERROR_TIMEOUT:
            raise
PYX
	check "the failed GPU's Xid 48 reaches an NVML event waiter once ($(tr '\n' ' ' < "$T/xid.out"))" \
		[ "$(grep -c '^xid 48 index 1$' "$T/xid.out")" = 1 ]
else
	note "no pynvml under $MOKKA_CONSUMERS: Xid delivery not checked"
fi
finish
