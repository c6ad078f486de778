#!/bin/sh
# Declared MIG layouts (nvidia-mig-manager's shape) and the durability of
# the device state store, with the real nvidia-smi 535:
# a100 with GPU 0 declared {mig-enabled: true, mig-devices: {1g.5gb: 3,
# 2g.10gb: 2}} and GPU 1 {3g.20gb: 2}: Stage creates them (largest first,
# each with its compute instance); a change by nvidia-smi survives the
# next Stage (the layout applies only to a GPU without a document);
# mokka-ctl reset --gpu 0 forgets GPU 0's document and the next Stage
# declares it again while GPU 1 keeps its change; a layout that does not
# fit is refused when the profile compiles, naming line and column; with
# mig.activation: reset, -mig 1 stays pending until mokka-ctl gpu-reset,
# which is refused while a GPU has instances.
set -u
. "$(dirname "$0")/../mig_lib.sh"
mig_start miglay
need_pyyaml
export MOKKA_MIG_NO_WATCH=1
"$PY" - "$S/etc/profiles/a100.yaml" "$TMP" <<'PYEOF'
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
p["devices"][0]["mig"] = {"mig-enabled": True, "mig-devices": {"1g.5gb": 3, "2g.10gb": 2}}
p["devices"][1]["mig"] = {"mig-enabled": True, "mig-devices": {"3g.20gb": 2}}
p["device_defaults"]["mig"]["activation"] = "reset"	# a pass-through VM
yaml.safe_dump(p, open(sys.argv[2] + "/good.yaml", "w"))
p["devices"][1]["mig"]["mig-devices"] = {"3g.20gb": 3}
yaml.safe_dump(p, open(sys.argv[2] + "/bad.yaml", "w"))
PYEOF
H=$TMP/root
mkdir -p "$H"
stage() { "$WORKER" --host-root "$H" --config "$TMP/$1.yaml" stage > "$TMP/stage.log" 2>&1; }
SMI=$H/var/lib/nvml-mock/driver/usr/bin/nvidia-smi
migs() { "$SMI" -L | awk -v g="GPU $1:" '/^GPU/ { on = index($0, g) == 1; next } on && /MIG/ { print $2 }' | sort | tr '\n' ' '; }
check "a layout that does not fit is refused at compile" sh -c "! '$WORKER' --host-root '$H' --config '$TMP/bad.yaml' stage > '$TMP/bad.log' 2>&1"
check "the refusal names the place and why" grep -q 'bad.yaml:[0-9]*:[0-9]*: devices\[1\]: mig-devices: 3 x 3g.20gb do not fit' "$TMP/bad.log"
stage good || { sed 's/^/# /' "$TMP/stage.log"; fail "stage"; exit 1; }
check "GPU 0 as declared: 2 x 2g.10gb + 3 x 1g.5gb ($(migs 0))" [ "$(migs 0)" = "1g.5gb 1g.5gb 1g.5gb 2g.10gb 2g.10gb " ]
check "GPU 1 as declared: 2 x 3g.20gb" [ "$(migs 1)" = "3g.20gb 3g.20gb " ]
check "GPU 2 untouched (no MIG)" [ "$("$SMI" -i 2 --query-gpu=mig.mode.current --format=csv,noheader)" = Disabled ]
check "the cap nodes are staged" [ "$(ls "$H"/var/lib/nvml-mock/driver/dev/nvidia-caps | grep -c .)" -ge 16 ]
"$SMI" mig -i 1 -dci -gi 1 > /dev/null && "$SMI" mig -i 1 -dgi -gi 1 > /dev/null
check "nvidia-smi destroys one on GPU 1" [ "$(migs 1)" = "3g.20gb " ]
"$SMI" mig -i 0 -dci > /dev/null && "$SMI" mig -i 0 -dgi > /dev/null
stage good
check "the change survives the next Stage (GPU 1)" [ "$(migs 1)" = "3g.20gb " ]
check "and GPU 0 stays empty" [ "$(migs 0)" = "" ]
"$B/mokka-ctl" --host-root "$H" --gpu 0 reset > "$TMP/ctl.log" 2>&1 || fail "mokka-ctl reset: $(cat "$TMP/ctl.log")"
stage good
check "after mokka-ctl reset --gpu 0, Stage declares GPU 0 again" [ "$(migs 0)" = "1g.5gb 1g.5gb 1g.5gb 2g.10gb 2g.10gb " ]
check "GPU 1 keeps its change" [ "$(migs 1)" = "3g.20gb " ]
"$SMI" -i 2 -mig 1 > "$TMP/mig2.log" 2>&1
q2() { "$SMI" -i 2 --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader; }
check "activation: reset: -mig 1 stays pending ($(q2))" [ "$(q2)" = "Disabled, Enabled" ]
"$B/mokka-ctl" --host-root "$H" --gpu 2 gpu-reset > "$TMP/ctl.log" 2>&1
check "mokka-ctl gpu-reset makes it current ($(q2))" [ "$(q2)" = "Enabled, Enabled" ]
check "gpu-reset is refused while instances exist" sh -c "! '$B/mokka-ctl' --host-root '$H' --gpu 0 gpu-reset > '$TMP/ctl0.log' 2>&1"
"$B/mokka-ctl" --host-root "$H" --gpu all reset > "$TMP/ctl.log" 2>&1 || fail "mokka-ctl reset all"
check "mokka-ctl reset (all) leaves no document" [ -z "$(ls "$H"/var/lib/nvml-mock/driver/config/state)" ]
exit $rc
