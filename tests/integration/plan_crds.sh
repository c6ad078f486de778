#!/bin/bash
# mokka-plan's output validates against the structural schemas of the four
# CRDs in etc/crds (tests/crd_schema_check.py: types, required, enums,
# ranges, patterns, unknown fields, list-map keys; the CRDs themselves are
# structural, have the status subresource and printer columns whose paths
# exist), and so do the examples.  A broken document must fail the check.
set -u
B=${MOKKA_BUILDDIR:?}
S=${MOKKA_SRCDIR:?}
PY=/usr/bin/python3
E=$S/etc/examples
"$PY" -c 'import yaml' 2>/dev/null || { echo "FAIL: python3-yaml missing (scripts/install-deps.sh)"; exit 1; }
T=$(mktemp -d /tmp/mokka-plan-crds.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
rc=0
check() { "$PY" "$S/tests/crd_schema_check.py" "$S/etc/crds" "$@"; }

"$PY" "$S/tests/planner_cluster.py" --apply "$E"/*.yaml --nodes 3 --pool example > "$T/in.yaml" &&
	"$B/mokka-plan" -o "$T/out" "$T/in.yaml" || { echo "FAIL: mokka-plan on the examples"; exit 1; }
check "$T/out/apply.yaml" "$T/out/status.yaml" "$E"/*.yaml || rc=1
# every condition reason and the scope enum appear in a second world
"$PY" "$S/tests/planner_cluster.py" --envelope 3,4,12 --nodes 20 > "$T/env.yaml" &&
	"$B/mokka-plan" -o "$T/env" "$T/env.yaml" || { echo "FAIL: mokka-plan on a small envelope"; exit 1; }
check "$T/env/apply.yaml" "$T/env/status.yaml" || rc=1
# not vacuous: a wrong enum, an unknown field and a bad label value fail
sed -e 's/status: "True"/status: "Maybe"/' "$T/out/status.yaml" > "$T/bad1.yaml"
sed -e 's/  rackIndex: 0/  rackIndex: 0\n  colour: red/' "$T/out/apply.yaml" > "$T/bad2.yaml"
sed -e 's|nvidia.com/gpu.clique: "|nvidia.com/gpu.clique: "-|' "$T/out/apply.yaml" > "$T/bad3.yaml"
for b in bad1 bad2 bad3; do
	if check "$T/$b.yaml" > "$T/$b.log"; then
		echo "FAIL: $b passed the schema check"; rc=1
	else
		echo "ok: $b rejected: $(grep -m1 FAIL "$T/$b.log")"
	fi
done
[ $rc = 0 ] && echo "ok: output and examples validate against etc/crds"
exit $rc
