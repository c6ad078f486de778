#!/bin/bash
# Incremental reconcile (issue 16): a no-op pass (SIGHUP on an unchanged
# state) writes nothing in the published tree (every path keeps its inode
# and mtime) and renders nothing ("nothing to stage" for each simulator
# that skips); a one-GPU profile edit (GPU 3's performance state)
# republishes gpudriver's surfaces and leaves pcibus's, ib's and nvlink's
# untouched; a daemon whose simulator rendered nothing is not reloaded
# (mock-ib, mokka-pcifs); a published file removed by someone else is
# repaired by the next pass.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes, mounts)"; exit 77; }

cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
# The published tree by inode and mtime; what a pass owns outside the
# surfaces (manifests, sockets, the shadows) is left out; the directory
# driver/config is shared with mokka-pcifs's binding file (its mtime moves
# when a Reload rewrites it: the bind test's business, not this one's).
listing() {
	(cd "$ROOT$R" && find . \( -path ./.staged -o -path ./state -o -path ./run \) -prune -o \
		-printf '%p %i %T@\n') | grep -v '^\./driver/config ' | sort
}
reloads() { grep -c "daemon $1: reload (SIGHUP)" "$T/sup.log"; }
passes() { grep -c 'published in' "$T/sup.log"; }
skips() { grep -c "$1: generation [0-9]*: inputs and published output unchanged" "$T/sup.log"; }
hup_pass() {
	local n=$(passes)
	kill -HUP "$SUP_PID"
	wait_for 30 sh -c "[ \$(grep -c 'published in' '$T/sup.log') -gt $n ]"
}

start_supervisor --config "$T/profile.yaml"
wait_for 60 is_code /readyz 200 || die "supervisor did not become ready"
# The first passes settle what a cold start leaves (a store made on the way).
hup_pass || die "no second pass"
listing > "$T/before"
s0=$(skips pcibus) m0=$(reloads mock-ib) f0=$(reloads mokka-pcifs)
hup_pass || die "no-op pass did not finish"
listing > "$T/after"
check "no-op pass: every published path keeps its inode and mtime" cmp -s "$T/before" "$T/after"
cmp -s "$T/before" "$T/after" || diff "$T/before" "$T/after" | head -10
for sim in pcibus gpudriver ib nvlink; do
	check "no-op pass: $sim rendered nothing" [ "$(skips $sim)" -ge 1 ]
done
check "no-op pass: pcibus skipped this pass too" [ "$(skips pcibus)" -gt "$s0" ]
check "no-op pass: mock-ib not reloaded (ib rendered nothing)" [ "$(reloads mock-ib)" = "$m0" ]
check "no-op pass: mokka-pcifs not reloaded (pcibus rendered nothing)" [ "$(reloads mokka-pcifs)" = "$f0" ]
check "no-op pass: the skipped reloads are logged" grep -q "daemon mock-ib: no reload: ib rendered nothing" "$T/sup.log"

# One GPU changes: only gpudriver re-renders and swaps.
ino() { stat -c %i "$ROOT$R$1"; }
pci=$(ino /sys/devices) ib=$(ino /ib) dev=$(ino /driver/dev) cfg=$(ino /driver/config/config.yaml)
g0=$(skips gpudriver) p0=$(skips pcibus) i0=$(skips ib) m0=$(reloads mock-ib)
python3 - "$T/profile.yaml" <<'PY' || die "cannot edit the profile"
import re, sys
p = sys.argv[1]
s = open(p).read()
s, n = re.subn(r'(\n  - index: 3\n)', r'\1    performance_state: "P8"\n', s)
assert n == 1
open(p, "w").write(s)
PY
wait_for 30 sh -c "grep -q 'generation 2 published' '$T/sup.log'" || die "the edit was not published"
check "one-GPU edit: config.yaml republished" [ "$(ino /driver/config/config.yaml)" != "$cfg" ]
check "one-GPU edit: GPU 3 is in P8" grep -q 'P8' "$ROOT$R/driver/config/config.yaml"
check "one-GPU edit: gpudriver re-rendered" [ "$(skips gpudriver)" -eq "$g0" ]
check "one-GPU edit: pcibus skipped (same /sys/devices)" sh -c "[ $(skips pcibus) -gt $p0 ] && [ $(ino /sys/devices) = $pci ]"
check "one-GPU edit: ib skipped (same R/ib)" sh -c "[ $(skips ib) -gt $i0 ] && [ $(ino /ib) = $ib ]"
check "one-GPU edit: mock-ib not reloaded" [ "$(reloads mock-ib)" = "$m0" ]
: "$dev"

# Someone else removes a published file: the next pass puts it back.
F=$ROOT$R/proc/bus/pci/devices
[ -f "$F" ] || F=$(find "$ROOT$R/sys/devices" -name vendor -type f | head -1)
rm -f "$F"
hup_pass || die "repair pass did not finish"
check "a removed published file is repaired by the next pass" test -f "$F"

stop_supervisor
finish
