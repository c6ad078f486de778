#!/bin/bash
# A node feature file that was there before Mokka (issue 20: it was
# overwritten and Mokka's copy left after teardown): while Mokka runs, the
# labels describe its GPUs; teardown puts the foreign file back byte for
# byte (content and mode), also after a restart of the supervisor.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
F=$ROOT/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features
mkdir -p "$(dirname "$F")"
printf 'pci-10de.present=true\nsomeone.else=1\n' > "$F"
chmod 0640 "$F"
cp -p "$F" "$T/foreign"
tree_snapshot "$ROOT" > "$T/before"

run_once() { # run_once LABEL: start, check our labels, stop with teardown
	start_supervisor --simulators pcibus
	wait_for 30 is_code /readyz 200 || die "$1: not ready: $(cat "$T/body")"
	check "$1: the labels are Mokka's while it runs" wait_for 10 grep -q '^mokka.gpu.count=8$' "$F"
	check "$1: the foreign file is kept aside" \
		cmp -s "$ROOT$R/state/pcibus.nfd-foreign" "$T/foreign"
}
NODAEMON=2147483647	# pcibus has no daemon: a PID that cannot exist
run_once "first run"
stop_and_check_teardown $NODAEMON
check "the foreign file is back, content and mode" sh -c \
	"cmp -s '$F' '$T/foreign' && [ \$(stat -c %a '$F') = 640 ]"

# A restart without teardown (SIGKILL): the copy kept aside stays the
# foreign one.  (The root as a whole after a SIGKILL is issue 19's.)
run_once "second run"
kill -KILL "$SUP_PID"; wait "$SUP_PID" 2>/dev/null; SUP_PID=
run_once "after a supervisor SIGKILL"
stop_supervisor
check "after a SIGKILL and a restart, teardown puts the foreign file back" sh -c \
	"cmp -s '$F' '$T/foreign' && [ \$(stat -c %a '$F') = 640 ]"
check "... and removes the copy" [ ! -e "$ROOT$R/state/pcibus.nfd-foreign" ]
finish
