#!/bin/bash
# A consumer reading during a pass sees one generation, never a mix
# (issue 20).  The profile flips between two generations (8 GPUs named A,
# 4 GPUs named B) for $PASSES passes (default 20, ~10 s; tests/bench/publish.sh
# runs 100) while a reader reads config.yaml, lists the device nodes and
# the procfs GPU directories in a tight loop: every config.yaml read must
# be exactly one generation's bytes (whole, never torn or half-rendered),
# and every listing (also the PCI bus's) exactly one generation's set (no
# GPU half gone, no temporary file).  Teardown leaves the root as it was.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
PASSES=${PASSES:-20}
PY=/usr/bin/python3
"$PY" -c 'import yaml' 2>/dev/null || { echo "FAIL: python3-yaml missing (scripts/install-deps.sh)"; exit 1; }

# Generation A: the 8-GPU H100 profile; B: its first 4 GPUs, renamed.
cp "$S/etc/profiles/h100.yaml" "$T/a.yaml"
"$PY" - "$T/a.yaml" "$T/b.yaml" <<'PYEOF' || die "cannot cut the profile"
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
devs = sorted(doc["devices"], key=lambda e: e.get("index", 0))
gone = {e["pci"]["bus_id"].upper() for e in devs[4:]}
doc["devices"] = devs[:4]
for rc in (doc.get("pcie_topology") or {}).get("root_complexes") or []:
    rc["devices"] = [b for b in rc.get("devices") or [] if b.upper() not in gone]
doc["device_defaults"]["name"] = "GENERATION B GPU"
yaml.safe_dump(doc, open(sys.argv[2], "w"), sort_keys=False)
PYEOF
mkdir -p "$T/cfg"
put() { cp "$1" "$T/cfg/.tmp" && mv -f "$T/cfg/.tmp" "$T/cfg/profile.yaml"; }
gen_is() { [ "$(metric mokka_generation)" = "$1" ]; }
D=$ROOT$R/driver
snap() { # snap NAME: what generation NAME published
	cp "$D/config/config.yaml" "$T/$1.config"
	ls -A "$D/dev" > "$T/$1.dev"
	ls -A "$D/proc/driver/nvidia/gpus" > "$T/$1.gpus"
	ls -A "$ROOT$R/sys/bus/pci/devices" > "$T/$1.pci"
}

put "$T/a.yaml"
tree_snapshot "$ROOT" > "$T/before"
start_supervisor --config "$T/cfg/profile.yaml" --log-level info
wait_for 30 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"
snap a
put "$T/b.yaml"
wait_for 30 gen_is 2 || die "generation B was not published"
snap b
check "the generations differ in config.yaml, devices, procfs and the PCI bus" \
	sh -c "! cmp -s '$T/a.config' '$T/b.config' && ! cmp -s '$T/a.dev' '$T/b.dev' &&
	       ! cmp -s '$T/a.gpus' '$T/b.gpus' && ! cmp -s '$T/a.pci' '$T/b.pci'"

"$PY" - "$D" "$T" "$ROOT$R/sys/bus/pci/devices" > "$T/reader.out" 2>&1 <<'PYEOF' &
import os, sys
d, t, pci = sys.argv[1], sys.argv[2], sys.argv[3]
gens = {}
for g in ("a", "b"):
    gens[g] = (open(f"{t}/{g}.config", "rb").read(),
               set(open(f"{t}/{g}.dev").read().split()),
               set(open(f"{t}/{g}.gpus").read().split()),
               set(open(f"{t}/{g}.pci").read().split()))
reads = bad = 0
seen = {"a": 0, "b": 0}
while not os.path.exists(f"{t}/reader.stop"):
    try:
        c = open(f"{d}/config/config.yaml", "rb").read()
        dev = set(os.listdir(f"{d}/dev"))
        gpus = set(os.listdir(f"{d}/proc/driver/nvidia/gpus"))
        bus = set(os.listdir(pci))
    except OSError as e:
        bad += 1
        print("read failed:", e)
        continue
    reads += 1
    for what, i, got in (("config.yaml", 0, c), ("dev", 1, dev), ("gpus", 2, gpus),
                         ("pci", 3, bus)):
        match = [g for g in gens if gens[g][i] == got]
        if not match:
            bad += 1
            if bad <= 10:
                print("mixed read of", what, ":",
                      len(got), "bytes" if i == 0 else sorted(got))
        elif i == 0:
            seen[match[0]] += 1
print(f"reads {reads} bad {bad} seen-a {seen['a']} seen-b {seen['b']}")
PYEOF
READER=$!

t0=$(date +%s%N)
for i in $(seq "$PASSES"); do
	if [ $((i % 2)) -eq 1 ]; then put "$T/a.yaml"; else put "$T/b.yaml"; fi
	wait_for 30 gen_is $((i + 2)) || { fail "pass $i: generation $((i + 2)) not published"; break; }
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
touch "$T/reader.stop"
wait "$READER"
note "$PASSES passes in $ms ms; reader: $(tail -1 "$T/reader.out")"
grep -v '^reads ' "$T/reader.out" | head -10 | sed 's/^/# /'
read -r _ reads _ bad _ sa _ sb < <(tail -1 "$T/reader.out")
check "the reader read ($reads reads)" [ "${reads:-0}" -gt 0 ]
check "every read was whole and of one generation ($bad bad)" [ "${bad:-1}" -eq 0 ]
check "the reader saw both generations (a $sa, b $sb)" [ "${sa:-0}" -gt 0 -a "${sb:-0}" -gt 0 ]

stop_and_check_teardown "$(daemon_pid)"
finish
