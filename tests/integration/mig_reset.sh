#!/bin/sh
# nvidia-smi -r (issue 12) with the real nvidia-smi 535 over a driver root
# staged by mokka-worker-gpudriver; the mock answers the export-table slots
# nvidia-smi resets through (shims/nvml/api_reset.c).  Each nvidia-smi run
# is its own process, so every read-back also crosses the device state
# store.  On the a100 profile with mig.activation: reset (a pass-through
# VM): -e 0 stays pending until -r makes it current; -r drops locked
# clocks; -mig 1 stays pending until -r; -r is refused ("in use", exit 19)
# while a GPU instance exists and changes nothing; after -dci/-dgi it
# succeeds; -r without -i resets every GPU.  Then b200 (NVSwitch board):
# -e 0, -r.  Skips (77) only without nvidia-smi or root.
set -u
. "$(dirname "$0")/../mig_lib.sh"
mig_start migreset
need_pyyaml
export MOKKA_MIG_NO_WATCH=1
"$PY" - "$S/etc/profiles/a100.yaml" "$TMP/a100.yaml" <<'PYEOF'
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
p["device_defaults"]["mig"]["activation"] = "reset"
yaml.safe_dump(p, open(sys.argv[2], "w"))
PYEOF

stage() { # stage CONFIG -> $SMI
	H=$TMP/root.$(basename "$1" .yaml)
	mkdir -p "$H"
	"$WORKER" --host-root "$H" --config "$1" stage > "$TMP/stage.log" 2>&1 ||
		{ sed 's/^/# /' "$TMP/stage.log"; return 1; }
	SMI=$H/var/lib/nvml-mock/driver/usr/bin/nvidia-smi
}
q() { "$SMI" -i 0 --query-gpu="$1" --format=csv,noheader,nounits 2>&1; }
run() { "$SMI" "$@" > "$TMP/out" 2>&1; }
has() { grep -q -- "$1" "$TMP/out"; }
bus=

stage "$TMP/a100.yaml" || { fail "a100: stage"; exit 1; }
bus=$(q pci.bus_id)
run -i 0 -e 0
check "-e 0 is pending ($(q ecc.mode.current),$(q ecc.mode.pending))" \
	[ "$(q ecc.mode.current),$(q ecc.mode.pending)" = "Enabled,Disabled" ]
run -i 0 -lgc 500,600
sm=$(q clocks.sm)
check "-lgc 500,600 holds the SM clock ($sm)" [ "$sm" -ge 500 ] && [ "$sm" -le 600 ]
run -i 0 -r; r=$?
check "-r: exit 0 ($r)" [ "$r" -eq 0 ]
check "-r: 'GPU $bus was successfully reset.'" has "^GPU $bus was successfully reset\.$"
check "-r: 'All done.'" has "^All done\.$"
check "-r makes ECC current ($(q ecc.mode.current),$(q ecc.mode.pending))" \
	[ "$(q ecc.mode.current),$(q ecc.mode.pending)" = "Disabled,Disabled" ]
check "-r drops the locked clocks ($(q clocks.sm))" [ "$(q clocks.sm)" != "$sm" ]

run -i 0 -mig 1
check "activation reset: -mig 1 is pending ($(q mig.mode.current),$(q mig.mode.pending))" \
	[ "$(q mig.mode.current),$(q mig.mode.pending)" = "Disabled,Enabled" ]
run -i 0 -r
check "-r after -mig 1 makes MIG current ($(q mig.mode.current),$(q mig.mode.pending))" \
	[ "$(q mig.mode.current),$(q mig.mode.pending)" = "Enabled,Enabled" ]

run mig -i 0 -cgi 19 -C
check "a 1g instance with its compute instance" has "Successfully created compute instance"
run -i 0 -e 1
run -i 0 -r; r=$?
check "-r with a GPU instance: refused, exit 19 ($r)" [ "$r" -eq 19 ]
check "-r refused: 'GPU $bus is currently in use by another process.'" \
	has "^GPU $bus is currently in use by another process\.$"
check "-r refused: no success line" sh -c "! grep -q 'successfully reset' '$TMP/out'"
check "-r refused: ECC stays pending ($(q ecc.mode.current),$(q ecc.mode.pending))" \
	[ "$(q ecc.mode.current),$(q ecc.mode.pending)" = "Disabled,Enabled" ]
run mig -i 0 -lgi
check "-r refused: the instance is still there" has "MIG 1g.5gb"
run mig -i 0 -dci; run mig -i 0 -dgi
run -i 0 -r; r=$?
check "-r after -dci/-dgi: exit 0 ($r), ECC enabled ($(q ecc.mode.current))" \
	[ "$r" -eq 0 ] && [ "$(q ecc.mode.current)" = Enabled ]
n=$("$SMI" -L | grep -c '^GPU ')
run -r; r=$?
check "-r without -i resets all $n GPUs (exit $r)" \
	[ "$r" -eq 0 ] && [ "$(grep -c 'was successfully reset\.$' "$TMP/out")" -eq "$n" ]

stage "$S/etc/profiles/b200.yaml" || { fail "b200: stage"; exit 1; }
run -i 0 -e 0; run -i 0 -r; r=$?
check "b200: -e 0, -r: exit $r, ECC $(q ecc.mode.current)" [ "$r" -eq 0 ] && [ "$(q ecc.mode.current)" = Disabled ]
exit $rc
