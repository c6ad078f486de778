#!/bin/bash
# No write escapes the host root (issue 19): links to a directory outside
# the root are planted at every level the simulators write to, and the
# supervisor runs and tears down.  A full listing of the outside directory
# (paths, types, modes, sizes, mtimes, link targets) must not change, and
# the log must name every link it refused.
#   A  Stage side: shadows (R/.staged/<sim>, deeper inside one), what Stage
#      writes live (R/run, R/kernellog, R/fabric-state); A2 the live
#      parents of surfaces (R/sys, R/ib/dev)
#   B  Publish side: the surfaces themselves (R/driver/proc, R/ib/sys,
#      R/sys/devices), a file's leaf (nvlink's R/topology/topology.yaml: a
#      link to a file outside is refused, left as it is, never replaced)
#   C  Apply (/run/nvidia) and teardown: after a good pass, published
#      directories are moved out of the root and links left in their place
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
SIMS=gpudriver,pcibus,nvlink,fabricmanager,ib,imex,kernellog
OUT=$T/outside
KLOG=$T/kmsg
: > "$KLOG"
mkdir -p "$OUT"
echo "not the simulator's" > "$OUT/witness"
LINKS=()

listing() { find "$OUT" -printf '%P %y %m %s %T@ %l\n' | sort; }
# plant HOSTPATH: HOSTPATH under the root becomes a link to a fresh
# directory outside it (holding one file of its own); plant_file: to a
# file outside.
plant() {
	local d
	d=$OUT/$(echo "$1" | tr / _)
	mkdir -p "$d" "$(dirname "$ROOT$1")"
	echo keep > "$d/keep"
	ln -s "$d" "$ROOT$1" || die "cannot plant $1"
	LINKS+=("$1")
}
plant_file() {
	local f
	f=$OUT/$(echo "$1" | tr / _)
	mkdir -p "$(dirname "$ROOT$1")"
	echo keep > "$f"
	ln -s "$f" "$ROOT$1" || die "cannot plant $1"
	LINKS+=("$1")
}
named() { grep -qF "$ROOT$1 is a symbolic link" "$T/sup.log"; }
all_named() {
	local l
	for l in "${LINKS[@]}"; do named "$l" || return 1; done
}
start() { start_supervisor --simulators "$SIMS" --kernel-log "$KLOG" --node-name node-p; }
# finish ROUND: SIGTERM; the teardown ends, nothing outside changed.
finish() {
	kill -TERM "$SUP_PID"
	wait_for 30 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "$1: no exit on SIGTERM"
	wait "$SUP_PID" 2>/dev/null
	SUP_PID=
	cp "$T/sup.log" "$T/sup-$1.log"
	listing > "$T/out-after"
	if diff -u "$T/out-before" "$T/out-after" > "$T/out.diff"; then
		pass "$1: nothing outside the root changed"
	else
		fail "$1: the outside directory changed"; sed 's/^/# /' "$T/out.diff" | head -20
	fi
}
clear_root() { rm -rf "$ROOT" && mkdir -p "$ROOT"; LINKS=(); }

# A: what Stage writes.
plant "$R/.staged/gpudriver"
plant "$R/.staged/pcibus/sys"
plant "$R/run"
plant "$R/kernellog"
plant "$R/fabric-state"
listing > "$T/out-before"
start
wait_for 60 all_named || true
for l in "${LINKS[@]}"; do check "A: the log names $l" named "$l"; done
finish A

# A2: the live parents of surfaces (a shadow refused first would hide
# them).
clear_root
plant "$R/sys"
plant "$R/ib/dev"
listing > "$T/out-before"
start
wait_for 60 all_named || true
for l in "${LINKS[@]}"; do check "A2: the log names $l" named "$l"; done
finish A2

# B: what Publish swaps.
clear_root
plant "$R/driver/proc"
plant "$R/ib/sys"
plant "$R/sys/devices"
plant_file "$R/topology/topology.yaml"
listing > "$T/out-before"
start
wait_for 60 all_named || true
for l in "${LINKS[@]}"; do check "B: the log names $l" named "$l"; done
check "B: a link at a file's leaf is left, not replaced" test -L "$ROOT$R/topology/topology.yaml"
check "B: no Apply after the refused pass" sh -c "! grep -q 'generation 1: apply' '$T/sup.log'"
finish B

# C: teardown.  A good pass first, then directories it published (and
# one the manifest lists outside the generations) moved out, links left.
clear_root
plant /run/nvidia		# where Apply bind-mounts the driver root
start
# Published, then Applied (refused: no "published in" line).
wait_for 60 grep -q "apply: generation 1" "$T/sup.log" || die "C: generation 1 never applied"
wait_for 30 named /run/nvidia || true
for p in "$R/sys/devices" "$R/driver/dev" "$R/ib/sys" "$R/.staged/pcibus"; do
	[ -d "$ROOT$p" ] || { fail "C: $p was not made"; continue; }
	d=$OUT/c$(echo "$p" | tr / _)
	mv "$ROOT$p" "$d" && ln -s "$d" "$ROOT$p" && LINKS+=("$p")
done
listing > "$T/out-before"
note "C: $(wc -l < "$T/out-before") entries outside the root before teardown"
finish C
for l in "${LINKS[@]}"; do check "C: the teardown log names $l" grep -qF "$ROOT$l is a symbolic link" "$T/sup-C.log"; done

[ "$FAILS" -eq 0 ] || exit 1
