#!/bin/bash
# Every worker binary runs alone for debugging: stage|apply|revoke|discard|
# run|status against a host root, and discard/revoke leave it as it was.
. "$(dirname "$0")/../lib.sh"

tree_snapshot "$ROOT" > "$T/before"
P=$S/etc/profiles/a100.yaml
w() { "$B/mokka-worker-$1" --host-root "$ROOT" --config "$P" "${@:2}"; }

w pcibus stage || fail "pcibus stage"
check "pcibus status says ready" sh -c "'$B/mokka-worker-pcibus' --host-root '$ROOT' --config '$P' status | grep -q ': ready'"
n=$(ls "$ROOT$R/sys/bus/pci/devices" | grep -c .)
check "a100: 8 GPUs + 8 HCAs + their 16 root ports staged ($n)" [ "$n" -eq 32 ]
nfd=$ROOT/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features
w pcibus apply || fail "pcibus apply"
check "apply wrote the NFD file" grep -qx 'pci-10de.present=true' "$nfd"
w pcibus revoke || fail "pcibus revoke"
check "revoke removed the NFD file and the dirs it created" [ ! -e "$ROOT/etc" ]
w pcibus discard || fail "pcibus discard"

echo "version: 1" > "$T/topo.yaml"
printf 'domains:\n- uuid: "00000000-0000-0000-0000-0000000000ab"\n  cliques:\n  - id: 1\n    nodes: [n1]\n' >> "$T/topo.yaml"
"$B/mokka-worker-nvlink" --host-root "$ROOT" --config "$P" --topology "$T/topo.yaml" --node-name n1 stage \
	|| fail "nvlink stage"
check "nvlink staged the topology document" cmp -s "$T/topo.yaml" "$ROOT$R/topology/topology.yaml"
"$B/mokka-worker-nvlink" --host-root "$ROOT" --config "$P" discard || fail "nvlink discard"

# run: stage, daemon in the foreground until SIGINT, then discard.
"$B/mokka-worker-fabricmanager" --host-root "$ROOT" --config "$P" run > "$T/run.log" 2>&1 &
RUN=$!
check "run: the daemon keeps the marker" wait_for 10 test -e "$ROOT$R/fabric-state/fabricmanager.ready"
check "run: daemon is named nv-fabricmanager" pgrep -P "$RUN" -f '^nv-fabricmanager' >/dev/null
kill -INT "$RUN"
wait "$RUN" || fail "run exited non-zero: $(cat "$T/run.log")"

check "unknown verb is a usage error (exit 2)" sh -c "'$B/mokka-worker-pcibus' --host-root '$ROOT' frobnicate; [ \$? -eq 2 ]"
check "--help works" sh -c "'$B/mokka-worker-pcibus' --help | grep -q stage"

rmdir "$ROOT$R" "$ROOT/var/lib" "$ROOT/var" 2>/dev/null	# R is the supervisor's, not a worker's
check_root_restored
finish
