#!/bin/bash
# mokka-plan as a loop would run it (tests/planner_cluster.py stands in
# for kubectl get / apply --server-side): byte-identical output for the
# same input; a re-plan after applying changes nothing; one Node added
# changes only that Node's binding and projection; eligibility loss removes
# the exact projection first, then the binding; a shrink drains, then
# deletes the rack; malformed input fails naming kind/name/field path.
set -u
B=${MOKKA_BUILDDIR:?}
S=${MOKKA_SRCDIR:?}
PY=/usr/bin/python3
P=$B/mokka-plan
"$PY" -c 'import yaml' 2>/dev/null || { echo "FAIL: python3-yaml missing (scripts/install-deps.sh)"; exit 1; }
T=$(mktemp -d /tmp/mokka-plan-cli.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
rc=0
fail() { echo "FAIL: $*"; rc=1; }
pass() { echo "ok: $*"; }
cluster() { "$PY" "$S/tests/planner_cluster.py" "$@"; }

# 2 groups x 4 racks x 1 Node; 5 of 8 coordinates filled
cluster --envelope 2,4,4 --nodes 5 > "$T/c1.yaml" || exit 1
"$P" -o "$T/a" "$T/c1.yaml" && "$P" -o "$T/b" "$T/c1.yaml" || { echo "FAIL: mokka-plan"; exit 1; }
diff -r "$T/a" "$T/b" > /dev/null && pass "same input, same bytes" || fail "output differs between runs"
"$P" "$T/c1.yaml" > "$T/stdout.yaml" && "$P" "$T/c1.yaml" | cmp -s - "$T/stdout.yaml" &&
	pass "stdout form is stable too" || fail "stdout form differs"
[ "$(ls "$T/a/nodes" | wc -l)" = 5 ] && pass "one desired-state document per assigned Node" ||
	fail "nodes/: $(ls "$T/a/nodes")"

# applied: the next plan wants exactly what is there
cluster --envelope 2,4,4 --nodes 5 --applied "$T/a" > "$T/c2.yaml"
"$P" -o "$T/c" "$T/c2.yaml" || fail "re-plan"
cmp -s "$T/a/apply.yaml" "$T/c/apply.yaml" && pass "re-plan after apply: no change" ||
	fail "re-plan after apply changed: $(diff "$T/a/apply.yaml" "$T/c/apply.yaml" | head)"

# one Node added: only its binding and its projection change
cluster --envelope 2,4,4 --nodes 6 --applied "$T/a" > "$T/c3.yaml"
"$P" -o "$T/d" "$T/c3.yaml" || fail "plan with one Node added"
changed=$(diff "$T/c/apply.yaml" "$T/d/apply.yaml" | grep '^[<>]')
if echo "$changed" | grep -q 'node-00005' && ! echo "$changed" | grep -v '^>' | grep -q . &&
	! echo "$changed" | grep -E 'node-0000[0-4]' | grep -q .; then
	pass "one Node added: only additions, all about node-00005 ($(echo "$changed" | wc -l) lines)"
else
	fail "one Node added changed more: $changed"
fi
for n in 0 1 2 3 4; do
	cmp -s "$T/c/nodes/node-0000$n.yaml" "$T/d/nodes/node-0000$n.yaml" ||
		fail "node-0000$n's desired state changed"
done

# eligibility loss: the removal first (binding kept), then the binding goes
sed -e '/name: node-00001$/,/annotations/ s/mokka.nvidia.com\/sgpu-node: .true./mokka.nvidia.com\/sgpu-node: "false"/' \
	"$T/c2.yaml" > "$T/c4.yaml"
"$P" -o "$T/e" "$T/c4.yaml" || fail "plan after eligibility loss"
if "$PY" - "$T/e/apply.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
n = [d for d in docs if d["kind"] == "Node" and d["metadata"]["name"] == "node-00001"]
assert len(n) == 1 and set(n[0]["metadata"]) == {"name", "uid"}, n
bound = [x for d in docs if d["kind"] == "SGPURack" for x in d["spec"]["nodes"]
         if x.get("nodeRef", {}).get("name") == "node-00001"]
assert bound, "binding cleared before the projection was removed"
PY
then pass "eligibility loss: exact removal applied first, binding kept meanwhile"; else fail "eligibility loss, pass 1"; fi
cluster --envelope 2,4,4 --nodes 5 --applied "$T/e" > "$T/c5.yaml"
sed -i -e '/name: node-00001$/,/annotations/ s/mokka.nvidia.com\/sgpu-node: .true./mokka.nvidia.com\/sgpu-node: "false"/' "$T/c5.yaml"
"$P" -o "$T/f" "$T/c5.yaml" || fail "plan after the removal"
grep -q 'node-00001' "$T/f/apply.yaml" && fail "binding of node-00001 not cleared" ||
	pass "eligibility loss: binding cleared once the projection is gone"
[ -e "$T/f/nodes/node-00001.yaml" ] && fail "node-00001 still has a desired state" ||
	pass "eligibility loss: no desired state for node-00001"

# shrink to 1 rack per group: racks drain, then are deleted
cluster --envelope 2,1,0 --nodes 5 --applied "$T/a" > "$T/c6.yaml"
"$P" -o "$T/g" "$T/c6.yaml" || fail "plan after shrink"
# g00 holds node-00000/2/4 in racks 0-2, g01 node-00001/3 in racks 0-1
[ "$(tr '\n' ' ' < "$T/g/delete.txt")" = "sgpuracks.mokka.nvidia.com/bench-g00-3 sgpuracks.mokka.nvidia.com/bench-g01-2 sgpuracks.mokka.nvidia.com/bench-g01-3 " ] &&
	pass "shrink: empty racks deleted at once, bound ones wait for their Nodes" ||
	fail "shrink deleted: $(cat "$T/g/delete.txt")"
cluster --envelope 2,1,0 --nodes 5 --applied "$T/g" > "$T/c7.yaml"
"$P" -o "$T/h" "$T/c7.yaml" || fail "plan after drain"
[ "$(wc -l < "$T/h/delete.txt")" = 3 ] && pass "shrink: drained racks deleted ($(tr '\n' ' ' < "$T/h/delete.txt"))" ||
	fail "delete.txt: $(cat "$T/h/delete.txt")"

# malformed input: exit 1, kind/name/field path
printf 'apiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPURackProfile\nmetadata: {name: p}\nspec: {nodesPerRack: two, gpusPerNode: 1}\n' > "$T/bad.yaml"
if "$P" --strict "$T/bad.yaml" > /dev/null 2> "$T/err"; then
	fail "--strict accepted a malformed profile"
else
	grep -q "bad.yaml:4: SGPURackProfile p: spec.nodesPerRack: must be an integer" "$T/err" &&
		pass "error names file, line, kind/name, path: $(cat "$T/err")" || fail "error: $(cat "$T/err")"
fi
"$P" "$T/bad.yaml" > /dev/null 2> "$T/warn" && grep -q "warning: .*spec.nodesPerRack" "$T/warn" &&
	pass "without --strict the object is only invalid (warned)" || fail "non-strict: $(cat "$T/warn")"
exit $rc
