#!/bin/bash
# Fidelity report (a report, never a pass/fail test): for every shipped
# profile (etc/profiles/*.yaml), the real nvidia-smi 535 `-q -x` over the
# mock that mokka-worker-gpudriver stages, and for GPU 0 the share of leaf
# elements that carry a value, then the list of those still "N/A".  Prints
#   bench: fidelity <profile> <with value>/<leaves> (<pct>%)
#   fidelity: <profile> N/A: <path> <path> ...
# Compare the N/A list with a capture from the real board: an element the
# board fills and the mock leaves N/A is a gap.  PROFILES (space separated
# names) narrows the set.
. "$(dirname "$0")/../lib.sh"
CONS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
SMI=$CONS/nvidia-smi/usr/bin/nvidia-smi
GPUDRIVER=$B/mokka-worker-gpudriver
[ -x "$SMI" ] || die "$SMI missing (run scripts/fetch-consumers.sh)"
[ -x "$GPUDRIVER" ] || die "$GPUDRIVER not built"
export MOKKA_PKGLIBDIR=$B/.libs

cat > "$T/leaves.py" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
name, path = sys.argv[1], sys.argv[2]
gpu = ET.parse(path).getroot().find("gpu")
have, na = 0, []
def walk(e, p):
    global have
    kids = list(e)
    if kids:
        for k in kids:
            walk(k, p + "/" + k.tag)
        return
    t = (e.text or "").strip()
    if t == "N/A":
        na.append(p)
    elif t:
        have += 1
walk(gpu, "gpu")
n = have + len(na)
print("bench: fidelity %s %d/%d (%.1f%%)" % (name, have, n, 100.0 * have / n if n else 0))
print("fidelity: %s N/A (%d): %s" % (name, len(na), " ".join(na) or "-"))
PYEOF

profiles=${PROFILES:-$(cd "$S/etc/profiles" && ls -- *.yaml | sed 's/\.yaml$//')}
for p in $profiles; do
	root=$T/$p
	mkdir -p "$root"
	if ! "$GPUDRIVER" --host-root "$root" --config "$S/etc/profiles/$p.yaml" --log-level warn stage \
		> "$T/stage.log" 2>&1; then
		echo "fidelity: $p: stage failed: $(tail -3 "$T/stage.log")"
		continue
	fi
	env -u LD_LIBRARY_PATH -u LD_PRELOAD -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES \
		timeout 60 "$root$R/driver/usr/bin/nvidia-smi" -q -x -i 0 > "$T/$p.xml" 2> "$T/$p.err" ||
		{ echo "fidelity: $p: nvidia-smi -q -x failed: $(head -3 "$T/$p.err" "$T/$p.xml")"; continue; }
	python3 "$T/leaves.py" "$p" "$T/$p.xml"
	rm -rf "$root"
done
finish
