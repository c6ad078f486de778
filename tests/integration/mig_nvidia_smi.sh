#!/bin/sh
# issue 12 with the real nvidia-smi 535 (unpacked by scripts/fetch-consumers.sh)
# over a driver root staged by mokka-worker-gpudriver: every nvidia-smi run
# is a separate process, so each check that reads back a change also shows
# the shared device state store carrying it between processes.
#
# Per profile (a100, h100, h200, b200): the setters -pm, -c, -pl (bounded),
# -ac/-rac, -lgc/-rgc, -e (pending until mokka-ctl gpu-reset, the stand-in
# for -r) read back through --query-gpu; MIG
# -mig 1, mig -lgip/-lgipp, -cgi <1g>,<1g> -C, -lgi, -lci, -L (MIG devices
# under their GPU, MIG- UUIDs), -q (MIG Device section), the refusals
# (destroying a GPU instance with compute instances: In use; an eighth 1g
# instance: Insufficient Resources), -dci, -dgi, -mig 0.  Then two
# nvidia-smi processes creating 1g instances at the same time never take
# the same slices (7 in all, distinct ids), and the L40S and T4 say MIG is
# not supported.  Skips (77) only without nvidia-smi or root.
set -u
. "$(dirname "$0")/../mig_lib.sh"
command -v patchelf >/dev/null || { echo "FAIL: patchelf missing (scripts/install-deps.sh)"; exit 1; }
mig_start mig

stage() { # stage PROFILE -> $SMI, $STATE
	H=$TMP/$1
	mkdir -p "$H"
	"$WORKER" --host-root "$H" --config "$S/etc/profiles/$1.yaml" stage > "$TMP/stage.log" 2>&1 ||
		{ sed 's/^/# /' "$TMP/stage.log"; return 1; }
	SMI=$H/var/lib/nvml-mock/driver/usr/bin/nvidia-smi
	STATE=$H/var/lib/nvml-mock/driver/config/state
}

q() { # q FIELD: GPU 0's value, no header/units
	"$SMI" -i 0 --query-gpu="$1" --format=csv,noheader,nounits 2>&1
}

has() { grep -q -- "$1" "$TMP/out"; }
run() { "$SMI" "$@" > "$TMP/out" 2>&1; }

setters() { # setters PROFILE
	p=$1
	run -i 0 -pm 0 && check "$p: -pm 0" [ "$(q persistence_mode)" = Disabled ]
	run -i 0 -pm 1 && check "$p: -pm 1" [ "$(q persistence_mode)" = Enabled ]
	run -i 0 -c EXCLUSIVE_PROCESS
	check "$p: -c EXCLUSIVE_PROCESS" [ "$(q compute_mode)" = Exclusive_Process ]
	run -i 0 -c PROHIBITED && check "$p: -c PROHIBITED" [ "$(q compute_mode)" = Prohibited ]
	run -i 0 -c DEFAULT && check "$p: -c DEFAULT" [ "$(q compute_mode)" = Default ]
	lo=$(q power.min_limit | cut -d. -f1); hi=$(q power.max_limit | cut -d. -f1)
	mid=$(( (lo + hi) / 2 ))
	run -i 0 -pl "$mid"
	check "$p: -pl $mid" [ "$(q power.limit | cut -d. -f1)" = "$mid" ]
	check "$p: enforced limit follows" [ "$(q enforced.power.limit | cut -d. -f1)" = "$mid" ]
	if run -i 0 -pl $((hi + 50)); then fail "$p: -pl above max accepted"; else
		check "$p: -pl above max refused" has "not a valid power limit"; fi
	mem=$("$SMI" -i 0 --query-supported-clocks=mem --format=csv,noheader,nounits | head -1)
	gr=$("$SMI" -i 0 --query-supported-clocks=gr --format=csv,noheader,nounits | tail -1)
	run -i 0 -ac "$mem,$gr"
	check "$p: -ac $mem,$gr" [ "$(q clocks.applications.graphics)" = "$gr" ]
	run -i 0 -rac
	check "$p: -rac" [ "$(q clocks.applications.graphics)" = "$(q clocks.default_applications.graphics)" ]
	sm=$(q clocks.sm)
	run -i 0 -lgc 500,600
	v=$(q clocks.sm)
	check "$p: -lgc 500,600 holds the SM clock ($v)" [ "$v" -ge 500 ] && [ "$v" -le 600 ]
	run -i 0 -rgc
	check "$p: -rgc" [ "$(q clocks.sm)" = "$sm" ]
	run -i 0 -e 0
	check "$p: -e 0 is pending until reset" [ "$(q ecc.mode.current),$(q ecc.mode.pending)" = "Enabled,Disabled" ]
	"$B/mokka-ctl" --host-root "$H" --gpu 0 gpu-reset > "$TMP/ctl.log" 2>&1
	check "$p: mokka-ctl gpu-reset applies it" [ "$(q ecc.mode.current),$(q ecc.mode.pending)" = "Disabled,Disabled" ]
	run -i 0 -e 1
	"$B/mokka-ctl" --host-root "$H" --gpu 0 gpu-reset > "$TMP/ctl.log" 2>&1
	check "$p: -e 1, gpu-reset: enabled again" [ "$(q ecc.mode.current)" = Enabled ]
	check "$p: a state document per changed GPU" [ -f "$STATE/$(q uuid).state" ]
}

mig() { # mig PROFILE ONE_G_NAME
	p=$1 one=$2
	run -i 0 -mig 1 && check "$p: -mig 1" [ "$(q mig.mode.current)" = Enabled ]
	run mig -i 0 -lgip && check "$p: -lgip lists MIG $one (ID 19) and 7g" \
		sh -c "grep -q 'MIG $one  *19  *7/7' $TMP/out && grep -q 'MIG 7g\.' $TMP/out"
	run mig -i 0 -lgipp && check "$p: -lgipp 1g placements 0..6" has "Profile ID 19 Placements: {0,1,2,3,4,5,6}:1"
	run mig -i 0 -cgi 19,19 -C
	check "$p: -cgi 19,19 -C" [ "$(grep -c 'Successfully created compute instance' "$TMP/out")" = 2 ]
	run mig -i 0 -lgi && check "$p: -lgi shows both" [ "$(grep -c "MIG $one " "$TMP/out")" = 2 ]
	run mig -i 0 -lci && check "$p: -lci shows both" [ "$(grep -c "MIG $one " "$TMP/out")" = 2 ]
	run -L && check "$p: -L lists the MIG devices under GPU 0" \
		[ "$(sed -n '2,3p' "$TMP/out" | grep -c "MIG $one .*Device  [01]: (UUID: MIG-")" = 2 ]
	run -L && cp "$TMP/out" "$TMP/list1" && run -L &&
		check "$p: MIG- UUIDs stable between processes" cmp -s "$TMP/out" "$TMP/list1"
	run -q -i 0 && check "$p: -q has the MIG Device section" has "GPU Instance ID"
	if run mig -i 0 -dgi -gi 7; then fail "$p: -dgi with compute instances accepted"; else
		check "$p: -dgi with compute instances: In use" has "In use"; fi
	run mig -i 0 -cgi 19,19,19,19,19
	if run mig -i 0 -cgi 19; then fail "$p: an eighth 1g instance accepted"; else
		check "$p: an eighth 1g instance: Insufficient Resources" has "Insufficient Resources"; fi
	run mig -i 0 -dci && check "$p: -dci" has "Successfully destroyed compute instance"
	run mig -i 0 -dgi && check "$p: -dgi destroys all 7" [ "$(grep -c 'Successfully destroyed GPU instance' "$TMP/out")" = 7 ]
	run -i 0 -mig 0 && check "$p: -mig 0" [ "$(q mig.mode.current)" = Disabled ]
}

for pr in "a100 1g.5gb" "h100 1g.10gb" "h200 1g.18gb" "b200 1g.23gb"; do
	set -- $pr
	stage "$1" || { fail "$1: stage"; continue; }
	setters "$1"
	mig "$1" "$2"
done

# Two creators at once: 4 + 4 requested, 7 fit; never the same slice.
stage a100 && run -i 0 -mig 1 && {
	"$SMI" mig -i 0 -cgi 19,19,19,19 > "$TMP/c1" 2>&1 &
	p1=$!
	"$SMI" mig -i 0 -cgi 19,19,19,19 > "$TMP/c2" 2>&1 &
	p2=$!
	wait $p1; wait $p2
	run mig -i 0 -lgi
	n=$(grep -c 'MIG 1g.5gb' "$TMP/out")
	ids=$(grep 'MIG 1g.5gb' "$TMP/out" | awk '{print $6}' | sort -u | wc -l)
	check "concurrent creators: 7 instances, 7 distinct ids ($n, $ids)" [ "$n" = 7 ] && [ "$ids" = 7 ]
	check "concurrent creators: 7 successes in all" \
		[ "$(cat "$TMP/c1" "$TMP/c2" | grep -c 'Successfully created GPU instance')" = 7 ]
}

for p in l40s t4; do
	stage "$p" || { fail "$p: stage"; continue; }
	run -i 0 -mig 1
	check "$p: -mig 1 is not supported" has "Not Supported"
	run mig -i 0 -lgip
	check "$p: mig -lgip finds no MIG device" has "No MIG-enabled devices found"
done
exit $rc
