#!/bin/bash
# A node of its own (issue 15): two supervisors run the same shipped
# profile (etc/profiles/h100.yaml, unmodified) as NODE_NAME=node-a and
# NODE_NAME=node-b, as the DaemonSet names them, each in its own temp
# root, mount namespace and network namespace (mock-ib's relay port is
# per node).  The real nvidia-smi 535 (-L, --query-gpu=uuid,serial) and
# the real ibstat (through the IB shims) show disjoint GPU UUIDs, serials
# and node/port/system image GUIDs, RFC 4122-shaped UUIDs, 13-digit
# serials, NVIDIA's OUI kept; DCGM-style label sets (gpu, UUID, serial,
# pci_bus_id, modelName, Hostname) differ only in the identity labels.
# node-a stopped and started again shows the same ones.  A copy of the
# profile that says `node_identity: pinned` keeps the profile's literal
# UUIDs under the same NODE_NAME; with --state-source controlplane: the
# plan's GPU identity wins over the derived one.  Named by --node-name
# alone (no $NODE_NAME; NVIDIA's node programs take either), node-b gets the
# same identities as under NODE_NAME=node-b: the supervisor and a worker
# staging standalone (mokka-worker-gpudriver --node-name).
# Skips (77) only without root or the unpacked nvidia-smi.
if [ -z "${MOKKA_NODE_IDENTITY_INNER:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: network namespaces need root"; exit 77; }
	MOKKA_NODE_IDENTITY_INNER=1 exec unshare -m -n --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/../lib.sh"
. "$S/tests/ib_shims_lib.sh"

SMI_SRC=${MOKKA_NVIDIA_SMI:-}
[ -n "$SMI_SRC" ] && [ -x "$SMI_SRC" ] || { echo "SKIP: no nvidia-smi (run scripts/fetch-consumers.sh)"; exit 77; }
for t in ibstat nsenter; do
	command -v $t >/dev/null || die "$t not installed (scripts/install-deps.sh)"
done
for s in "$IB_SYS" "$IB_UMAD" "$IB_VERBS"; do [ -f "$s" ] || die "IB shim $s not built"; done
export MOKKA_PKGLIBDIR=${MOKKA_PKGLIBDIR:-$B/.libs}
declare -A HOLD SPID
ip link set lo up

# One network namespace per node, held by a sleeping process we started.
for n in a b; do
	unshare -n sleep 100000 &
	HOLD[$n]=$!
	wait_for 5 sh -c "[ \"\$(readlink /proc/${HOLD[$n]}/ns/net)\" != \"\$(readlink /proc/self/ns/net)\" ]" ||
		die "namespace of node-$n"
	nsenter -t "${HOLD[$n]}" -n ip link set lo up
done
stop_node() {
	local p=${SPID[$1]:-}
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null
	for _ in $(seq 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	SPID[$1]=
}
stop_all() {
	stop_node a; stop_node b
	for n in a b; do [ -n "${HOLD[$n]:-}" ] && kill "${HOLD[$n]}" 2>/dev/null; done
	return 0
}
trap 'stop_all; cleanup' EXIT

cp "$S/etc/profiles/h100.yaml" "$T/pinned.yaml"
printf 'node_identity: pinned\n' >> "$T/pinned.yaml"
root() { echo "$T/node-$1"; }
smi() { "$(root "$1")$R/driver/usr/bin/nvidia-smi" "${@:2}"; }
ib() { MOCK_IB=sysfs MOCK_IB_ROOT=$(root "$1")$R/ib LD_PRELOAD=$IB_PRELOAD "${@:2}"; }

# start NODE PROFILE [FLAGS...]: NODE_NAME=node-NODE, as the DaemonSet sets
# it (BY=flag: --node-name node-NODE and no NODE_NAME instead)
BY=env
start() {
	local name=(NODE_NAME="node-$1")
	[ "$BY" = flag ] && name=(-u NODE_NAME)
	[ "$BY" = flag ] && set -- "$@" --node-name "node-$1"
	mkdir -p "$(root "$1")"
	nsenter -t "${HOLD[$1]}" -n env "${name[@]}" MOKKA_LIBEXECDIR="$B" \
		unshare -m --propagation private "$B/mokka-supervisor" --host-root "$(root "$1")" \
		--health-addr 127.0.0.1:18080 --log-level debug --config "$2" \
		--simulators gpudriver,pcibus,ib "${@:3}" >> "$T/sup-$1.log" 2>&1 &
	SPID[$1]=$!
	wait_for 60 sh -c "'$(root "$1")$R/driver/usr/bin/nvidia-smi' -L 2>/dev/null | grep -q '^GPU 7'" ||
		{ tail -30 "$T/sup-$1.log"; die "node-$1: nvidia-smi -L never showed 8 GPUs"; }
	wait_for 30 sh -c "[ \$(ls '$(root "$1")$R/ib/sys/class/infiniband' 2>/dev/null | wc -l) -eq 8 ]" ||
		die "node-$1: the IB tree is not staged"
}

# snap NODE TAG: what the node shows, in $T/TAG.*
snap() {
	smi "$1" -L > "$T/$2.L" 2>&1
	smi "$1" --query-gpu=index,uuid,serial,pci.bus_id,name --format=csv,noheader > "$T/$2.q" 2>&1
	# DCGM-style label sets, one line per GPU (dcgm-exporter's label names)
	awk -F', ' -v host="node-$1" '{ printf "gpu=\"%s\",UUID=\"%s\",serial=\"%s\",pci_bus_id=\"%s\",modelName=\"%s\",Hostname=\"%s\"\n", $1, $2, $3, $4, $5, host }' \
		"$T/$2.q" > "$T/$2.labels"
	cut -d, -f2 "$T/$2.q" | tr -d ' ' | sort > "$T/$2.uuids"
	cut -d, -f3 "$T/$2.q" | tr -d ' ' | sort -u > "$T/$2.serials"
	ib "$1" ibstat > "$T/$2.ibstat" 2>&1
	grep -E 'Node GUID|System image GUID|Port GUID' "$T/$2.ibstat" | awk '{ print $NF }' | sort -u > "$T/$2.guids"
}
disjoint() { [ -s "$1" ] && [ -s "$2" ] && [ -z "$(comm -12 "$1" "$2")" ]; }

start a "$S/etc/profiles/h100.yaml"
start b "$S/etc/profiles/h100.yaml"
snap a a1
snap b b1

check "node-a: 8 UUIDs, all RFC 4122-shaped ($(head -1 "$T/a1.uuids"))" \
	[ "$(grep -cE '^GPU-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' "$T/a1.uuids")" -eq 8 ]
check "node-b: 8 UUIDs, all RFC 4122-shaped" \
	[ "$(grep -cE '^GPU-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' "$T/b1.uuids")" -eq 8 ]
check "nvidia-smi -L names the same UUIDs" [ "$(grep -c "$(head -1 "$T/a1.uuids")" "$T/a1.L")" -eq 1 ]
check "not the profile's literal UUIDs" sh -c "! grep -q 2330de10-0000-0000 '$T/a1.L' '$T/b1.L'"
check "the two nodes share no GPU UUID" disjoint "$T/a1.uuids" "$T/b1.uuids"
check "8 distinct 13-digit serials per node, NVIDIA's 1654 prefix kept" \
	[ "$(grep -cE '^1654[0-9]{9}$' "$T/a1.serials")" -eq 8 -a "$(grep -cE '^1654[0-9]{9}$' "$T/b1.serials")" -eq 8 ]
check "the two nodes share no serial" disjoint "$T/a1.serials" "$T/b1.serials"
check "ibstat: 16 distinct GUIDs per node (8 HCAs: node = system image, port)" \
	[ "$(wc -l < "$T/a1.guids")" -eq 16 -a "$(wc -l < "$T/b1.guids")" -eq 16 ]
check "ibstat: every GUID keeps the vendor OUI a088c2" \
	[ "$(cat "$T/a1.guids" "$T/b1.guids" | grep -vc '^0xa088c2')" -eq 0 ]
check "ibstat: the system image GUID is the node GUID" \
	[ "$(grep -c 'System image GUID' "$T/a1.ibstat")" -eq 8 ]
check "the two nodes share no IB GUID" disjoint "$T/a1.guids" "$T/b1.guids"
sort "$T/a1.labels" > "$T/a1.ls"; sort "$T/b1.labels" > "$T/b1.ls"
check "DCGM-style label sets: no label set on both nodes" disjoint "$T/a1.ls" "$T/b1.ls"
same_but_identity() { # the labels other than UUID, serial and Hostname agree
	diff <(sed 's/UUID="[^"]*",serial="[^"]*",//; s/,Hostname=.*//' "$T/a1.labels") \
		<(sed 's/UUID="[^"]*",serial="[^"]*",//; s/,Hostname=.*//' "$T/b1.labels")
}
check "DCGM-style label sets: gpu, pci_bus_id, modelName agree" same_but_identity
[ "$FAILS" -eq 0 ] || { head -3 "$T/a1.labels" "$T/b1.labels" | sed 's/^/# /'; }

# ---- node-a restarts: the same identities ----
stop_node a
check "node-a's driver root is torn down" wait_for 15 sh -c "! [ -e '$(root a)$R/driver/usr/bin/nvidia-smi' ]"
start a "$S/etc/profiles/h100.yaml"
snap a a2
check "restarted node-a: the same UUIDs" cmp -s "$T/a1.uuids" "$T/a2.uuids"
check "restarted node-a: the same serials" cmp -s "$T/a1.serials" "$T/a2.serials"
check "restarted node-a: the same IB GUIDs" cmp -s "$T/a1.guids" "$T/a2.guids"
check "restarted node-a: the same DCGM-style label sets" cmp -s "$T/a1.labels" "$T/a2.labels"

# ---- the control plane's identity wins where its plan gives one ----
cat > "$T/plan.yaml" <<'EOF'
apiVersion: mokka.dev/v1alpha1
kind: SGPUNodeState
metadata: {name: node-a}
spec:
  gpus:
    - index: 0
      uuid: "GPU-0123abcd-0000-4000-8000-00000000a000"
      serial: "1654000000042"
EOF
stop_node a
start a "$S/etc/profiles/h100.yaml" --state-source "controlplane:$T/plan.yaml"
wait_for 20 sh -c "'$(root a)$R/driver/usr/bin/nvidia-smi' -L 2>/dev/null | grep -q 'GPU-0123abcd'" || :
snap a a3
check "plan: GPU 0 has the plan's UUID" \
	grep -q '^GPU 0: .*(UUID: GPU-0123abcd-0000-4000-8000-00000000a000)' "$T/a3.L"
check "plan: GPU 0 has the plan's serial" grep -q '^0, .*, 1654000000042,' "$T/a3.q"
check "plan: GPUs 1-7 keep node-a's own UUIDs" \
	[ "$(comm -12 "$T/a1.uuids" "$T/a3.uuids" | wc -l)" -eq 7 ]

# ---- node_identity: pinned: the profile's identities as written ----
stop_node b
start b "$T/pinned.yaml"
snap b b2
check "pinned: GPU 0 has the profile's UUID" \
	grep -q '^GPU 0: .*(UUID: GPU-2330de10-0000-0000-0000-000000000000)' "$T/b2.L"
check "pinned: GPU 7 has the profile's serial" grep -q '^7, .*, 1654922000107,' "$T/b2.q"

# ---- --node-name alone: the same identities as NODE_NAME ----
stop_node b
BY=flag start b "$S/etc/profiles/h100.yaml"
snap b b3
check "--node-name node-b: the supervisor runs without NODE_NAME" \
	sh -c "! tr '\\0' '\\n' < /proc/${SPID[b]}/environ | grep -q '^NODE_NAME='"
check "--node-name node-b: node-b's own UUIDs (as under NODE_NAME)" cmp -s "$T/b1.uuids" "$T/b3.uuids"
check "--node-name node-b: node-b's own serials" cmp -s "$T/b1.serials" "$T/b3.serials"
check "--node-name node-b: node-b's own IB GUIDs" cmp -s "$T/b1.guids" "$T/b3.guids"
check "--node-name node-b: the same DCGM-style label sets" cmp -s "$T/b1.labels" "$T/b3.labels"
mkdir -p "$T/w"
env -u NODE_NAME "$B/mokka-worker-gpudriver" --host-root "$T/w" --config "$S/etc/profiles/h100.yaml" \
	--node-name node-b stage > "$T/w.log" 2>&1 || fail "mokka-worker-gpudriver --node-name node-b stage: $(tail -2 "$T/w.log")"
sed -n 's/^ *uuid: *"\(GPU-[^"]*\)".*/\1/p' "$T/w$R/driver/config/config.yaml" | sort > "$T/w.uuids"
check "mokka-worker-gpudriver --node-name node-b stages node-b's own UUIDs" cmp -s "$T/b1.uuids" "$T/w.uuids"

stop_node a
stop_node b
for n in a b; do
	if grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error:' "$T/sup-$n.log"; then
		fail "sanitizer report in node-$n's log"
		grep -A20 'AddressSanitizer\|LeakSanitizer\|runtime error:' "$T/sup-$n.log" | head -40 | sed 's/^/# /'
	fi
done
finish
