#!/bin/bash
# IMEX (issue 6), in temp roots:
#   * mokka-worker-imex standalone with IMEX_MOCK_CHANNELS=true and
#     configured count and majors: the channel nodes exist with those majors
#     (stat), R/imex/proc-devices is accepted by a parser written to the DRA
#     driver's rules (its two majors found, every char line "<major> <name>",
#     nothing duplicated), over the host's list and over a fake one at
#     <host-root>/proc/devices; re-staging writes nothing (two passes on,
#     the live tree has the inodes it had); conflicting or malformed lists
#     are refused, and such a failed Stage publishes nothing (neither the
#     new channel count nor their major);
#   * the archive: a synthetic redist .tar.xz of fake binaries with a
#     sha256 list is staged (real daemon, ctl, config, notices, then the
#     --nogpu shim, published last), the shim execs the real binary with
#     --nogpu appended once and exits 127 without one; an image directory
#     works the same; a bad checksum, a missing entry and a "../" member are
#     refused and publish nothing; no archive stages no userspace;
#   * under the supervisor (gpudriver + imex): R/driver/proc/devices and
#     R/imex/proc-devices are the same text, both parse, the
#     fabric-imex-mgmt capability file and its nvidia-cap512 node use the
#     IMEX caps major; teardown restores the root.
. "$(dirname "$0")/../lib.sh"

W=$B/mokka-worker-imex
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
[ -x "$W" ] && [ -x "$B/nvidia-imex-shim" ] || die "$W / nvidia-imex-shim not built"
command -v xz > /dev/null || die "xz missing (xz-utils, install-deps.sh)"
PY=/usr/bin/python3
unset MOKKA_IMEX_ARCHIVE MOKKA_IMEX_CHECKSUMS IMEX_CAPS_MAJOR IMEX_CHANNEL_MAJOR \
	IMEX_CHANNEL_COUNT MOKKA_NVIDIA_CAPS_MAJOR MOKKA_NVIDIA_UVM_MAJOR

# The DRA driver's reading of /proc/devices: the "Character devices:" section
# up to the blank line before "Block devices:", each line "<major> <name>"
# (anything else is an error), a name looked up exactly.
cat > "$T/procdevices.py" <<'PYEOF'
import sys

def char_majors(path):
    lines = open(path).read().split("\n")
    if "Character devices:" not in lines:
        raise ValueError("no Character devices: section")
    i = lines.index("Character devices:") + 1
    out = {}
    while i < len(lines) and lines[i] != "":
        parts = lines[i].split()
        if len(parts) != 2 or not parts[0].isdigit():
            raise ValueError("unexpected line %r" % lines[i])
        if parts[1] in out:
            raise ValueError("%s listed twice" % parts[1])
        out[parts[1]] = int(parts[0])
        i += 1
    if i + 1 >= len(lines) or lines[i + 1] != "Block devices:":
        raise ValueError("char section not followed by a blank line and Block devices:")
    return out

path, want_ch, want_caps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
m = char_majors(path)
ch, caps = m.get("nvidia-caps-imex-channels"), m.get("nvidia-caps")
assert ch == want_ch, "nvidia-caps-imex-channels is %r, want %d" % (ch, want_ch)
assert caps == want_caps, "nvidia-caps is %r, want %d" % (caps, want_caps)
# (real lists repeat majors: 4 /dev/vc/0, 4 tty, 4 ttyS): ours are unique
others = [k for k, v in m.items() if v in (ch, caps) and k not in
          ("nvidia-caps-imex-channels", "nvidia-caps")]
assert not others, "IMEX majors shared with %s" % others
print("ok", ch, caps)
PYEOF
parses() { "$PY" "$T/procdevices.py" "$@" > "$T/parse.out" 2>&1 || { sed 's/^/# /' "$T/parse.out"; return 1; }; }

# The surfaces (not R/state, where the framework saves its manifest).
# The live tree as consumers see it.  Stage renders a shadow and Publish
# swaps it in (workers/generation.h), so the two generations alternate: a
# Stage that changes nothing leaves, one pass later, the very inodes (and
# sizes, modes) of the pass before, nothing rewritten.  ctime is left out:
# the swap itself is a rename.
snap() { (cd "$1" && find . \( -path ./var/lib/nvml-mock/state -o \
	-path ./var/lib/nvml-mock/.staged \) -prune -o -printf '%p %y %m %i %s\n' | sort); }
stage() { # stage ROOT [ENV=VAL...]: the worker, standalone
	local h=$1; shift
	mkdir -p "$h"
	env MOKKA_LIBEXECDIR="$B" IMEX_MOCK_CHANNELS=true "$@" "$W" --host-root "$h" --log-level warn \
		stage > "$T/stage.log" 2>&1
}
C=$R/driver/dev/nvidia-caps-imex-channels

# ---- channels and the overlay over the host's /proc/devices ----
h=$T/one
check "stage with count 6, majors 242/243" stage "$h" IMEX_CHANNEL_COUNT=6 IMEX_CHANNEL_MAJOR=242 IMEX_CAPS_MAJOR=243 ||
	sed 's/^/# /' "$T/stage.log"
nodes_ok=1
for i in 0 1 2 3 4 5; do
	[ "$(stat -c '%F %t:%T %a' "$h$C/channel$i" 2>/dev/null)" = "character special file f2:$(printf '%x' $i) 666" ] ||
		{ nodes_ok=; note "channel$i: $(stat -c '%F %t:%T %a' "$h$C/channel$i" 2>&1)"; }
done
check "channel0..5 are char devices 242:i, mode 0666" [ -n "$nodes_ok" ]
check "no channel6" [ ! -e "$h$C/channel6" ]
check "R/imex/proc-devices parses with the DRA driver's rules" parses "$h$R/imex/proc-devices" 242 243
check "it keeps the host's own lines" grep -q "^ *1 mem$" "$h$R/imex/proc-devices"
snap "$h" > "$T/snap1"
for pass in 2 3; do
	stage "$h" IMEX_CHANNEL_COUNT=6 IMEX_CHANNEL_MAJOR=242 IMEX_CAPS_MAJOR=243 ||
		fail "restage $pass"
done
snap "$h" > "$T/snap2"
if diff -u "$T/snap1" "$T/snap2" > "$T/snap.diff"; then pass "re-staging writes nothing"
else fail "re-staging changed files"; sed 's/^/# /' "$T/snap.diff" | head; fi
stage "$h" IMEX_CHANNEL_COUNT=2 IMEX_CHANNEL_MAJOR=242 IMEX_CAPS_MAJOR=243 || fail "shrink"
check "a smaller count removes channel2..5" sh -c "[ -e '$h$C/channel1' ] && [ ! -e '$h$C/channel2' ]"
stage "$h" IMEX_MOCK_CHANNELS=false
check "IMEX off removes the channels and the overlay" \
	sh -c "[ ! -e '$h$C' ] && [ ! -e '$h$R/imex/proc-devices' ]"

# ---- a fake host list at <host-root>/proc/devices ----
h=$T/fake
mkdir -p "$h/proc"
printf 'Character devices:\n  1 mem\n 10 misc\n235 nvidia-caps-imex-channels\n236 nvidia-caps\n240 foo\n\n\nBlock devices:\n  7 loop\n259 blkext\n' \
	> "$h/proc/devices"
stage "$h" IMEX_CHANNEL_COUNT=1 || { fail "stage over a fake list"; sed 's/^/# /' "$T/stage.log"; }
check "stale IMEX lines replaced, defaults 235/236" parses "$h$R/imex/proc-devices" 235 236
check "exact text over the fake list" diff -u - "$h$R/imex/proc-devices" <<'EOF'
Character devices:
  1 mem
 10 misc
195 nvidia
195 nvidiactl
235 nvidia-caps-imex-channels
236 nvidia-caps
240 foo
510 nvidia-uvm

Block devices:
  7 loop
259 blkext
EOF
cp "$h$R/imex/proc-devices" "$h/proc/devices"
stage "$h" IMEX_CHANNEL_COUNT=1 || fail "stage over its own output"
check "rendering its own output again is the identity" cmp -s "$h/proc/devices" "$h$R/imex/proc-devices"
refused() { # refused DESCRIPTION PATTERN ENV...
	local d=$1 pat=$2; shift 2
	if stage "$h" "$@"; then fail "$d: accepted"
	elif grep -q -- "$pat" "$T/stage.log"; then pass "$d"
	else fail "$d"; sed 's/^/# /' "$T/stage.log"; fi
}
# A failed pass publishes nothing (issue 20): the refused Stage would have
# made three channels of major 240 before its overlay failed.
chan() { (cd "$h$C" 2>/dev/null && stat -c '%n %F %t:%T' channel*) | sort; }
ONE="channel0 character special file eb:0 "
chan > "$T/chan.before"
cp "$h$R/imex/proc-devices" "$T/pd.before"
refused "a major another name has is refused" "already belongs to 'foo'" IMEX_CHANNEL_MAJOR=240 \
	IMEX_CHANNEL_COUNT=3
check "before it: one channel, 235:0" [ "$(tr '\n' ' ' < "$T/chan.before")" = "$ONE" ]
check "... and it changes nothing: one channel, 235:0 ($(chan | tr '\n' ' '))" \
	[ "$(chan | tr '\n' ' ')" = "$ONE" ]
check "... nor the overlay" cmp -s "$T/pd.before" "$h$R/imex/proc-devices"
stage "$h" IMEX_CHANNEL_COUNT=3 || fail "stage with count 3"
check "the next good pass publishes three channels ($(chan | wc -l))" [ "$(chan | wc -l)" -eq 3 ]
refused "a block major counts too" "already belongs to 'blkext'" IMEX_CAPS_MAJOR=259
refused "equal majors are refused" "must be distinct" IMEX_CHANNEL_MAJOR=236
refused "a major over 4095 is refused" "1..4095" IMEX_CHANNEL_MAJOR=4096
printf 'Block devices:\n  7 loop\nCharacter devices:\n  1 mem\n' > "$h/proc/devices"
refused "a list without the char section first is refused" "not a /proc/devices list"

# ---- the archive ----
A=$T/archive
mkdir -p "$A/src/nvidia-imex-linux-x86_64-595.91.07-archive/bin" \
	"$A/src/nvidia-imex-linux-x86_64-595.91.07-archive/etc/nvidia-imex"
top=$A/src/nvidia-imex-linux-x86_64-595.91.07-archive
printf '#!/bin/sh\nprintf "%%s\\n" "$0" "$@" > "$IMEX_TEST_OUT"\n' > "$top/bin/nvidia-imex"
printf '#!/bin/sh\necho READY\n' > "$top/bin/nvidia-imex-ctl"
printf 'SERVER_PORT=50000\n' > "$top/etc/nvidia-imex/config.cfg"
printf 'fake license\n' > "$top/LICENSE"
printf 'unrelated\n' > "$top/README"
chmod 755 "$top/bin/"*
(cd "$A/src" && tar -cJf "$A/imex.tar.xz" nvidia-imex-linux-x86_64-595.91.07-archive &&
	find . -type f ! -name README -exec sha256sum {} + > "$A/files.sha256")
D=$R/driver
h=$T/arch
check "a verified archive is staged" stage "$h" MOKKA_IMEX_ARCHIVE="$A/imex.tar.xz" \
	MOKKA_IMEX_CHECKSUMS="$A/files.sha256" IMEX_CHANNEL_COUNT=1 || sed 's/^/# /' "$T/stage.log"
check "real daemon as nvidia-imex.real, 0755" sh -c "[ \"\$(stat -c %a '$h$D/usr/bin/nvidia-imex.real')\" = 755 ] && cmp -s '$top/bin/nvidia-imex' '$h$D/usr/bin/nvidia-imex.real'"
check "nvidia-imex-ctl staged" cmp -s "$top/bin/nvidia-imex-ctl" "$h$D/usr/bin/nvidia-imex-ctl"
check "config.cfg staged" cmp -s "$top/etc/nvidia-imex/config.cfg" "$h$D/etc/nvidia-imex/config.cfg"
check "LICENSE staged" test -f "$h$D/usr/share/doc/nvidia-imex/LICENSE"
check "nothing outside the allowlist" sh -c "! find '$h' -name README | grep -q ."
check "the shim is nvidia-imex" cmp -s "$B/nvidia-imex-shim" "$h$D/usr/bin/nvidia-imex"
# Timestamps are clock-tick coarse: files published in the same tick tie,
# so "last" means no other file is strictly newer than the shim.
shim_c=$(find "$h$D/usr/bin/nvidia-imex" -printf '%C@')
last=$(cd "$h$D" && find usr etc -type f ! -path usr/bin/nvidia-imex -printf '%C@ %p\n' |
	awk -v s="$shim_c" '$1 > s { print $2 }' | head -1)
check "the shim was published last (newer: ${last:-none})" [ -z "$last" ]
out=$T/shim.out
IMEX_TEST_OUT=$out IMEX_SHIM_REAL_BIN=$h$D/usr/bin/nvidia-imex.real "$h$D/usr/bin/nvidia-imex" -c /imexd/imexd.cfg
check "the shim execs the real daemon with --nogpu appended" \
	diff -u <(printf '%s\n' "$h$D/usr/bin/nvidia-imex.real" -c /imexd/imexd.cfg --nogpu) "$out"
IMEX_TEST_OUT=$out IMEX_SHIM_REAL_BIN=$h$D/usr/bin/nvidia-imex.real "$h$D/usr/bin/nvidia-imex" -nogpu -c x
check "an existing -nogpu is not doubled" \
	diff -u <(printf '%s\n' "$h$D/usr/bin/nvidia-imex.real" -nogpu -c x) "$out"
IMEX_SHIM_REAL_BIN=$T/none "$h$D/usr/bin/nvidia-imex" 2> "$T/shim.err"
rc=$?
check "no real binary: exit 127 (got $rc) with a message" \
	sh -c "[ $rc -eq 127 ] && grep -q 'exec $T/none' '$T/shim.err'"
snap "$h" > "$T/snap1"
for pass in 1 2; do
	stage "$h" MOKKA_IMEX_ARCHIVE="$A/imex.tar.xz" MOKKA_IMEX_CHECKSUMS="$A/files.sha256" \
		IMEX_CHANNEL_COUNT=1
done
snap "$h" > "$T/snap2"
check "re-staging the archive writes nothing" cmp -s "$T/snap1" "$T/snap2"
stage "$h" IMEX_CHANNEL_COUNT=1
check "without an archive no IMEX userspace is left" \
	sh -c "[ ! -e '$h$D/usr/bin/nvidia-imex' ] && [ ! -e '$h$D/usr/bin/nvidia-imex.real' ]"

# The digest of the archive file itself, beside it, vouches for it all.
(cd "$A" && sha256sum imex.tar.xz > imex.tar.xz.sha256)
check "an archive-level digest beside the archive" stage "$T/arch2" MOKKA_IMEX_ARCHIVE="$A/imex.tar.xz" ||
	sed 's/^/# /' "$T/stage.log"
check "... stages the shim" test -x "$T/arch2$D/usr/bin/nvidia-imex"
# An image directory with SHA256SUMS.
cp "$A/files.sha256" "$top/../SHA256SUMS"
check "an image directory is staged" stage "$T/img" MOKKA_IMEX_ARCHIVE="$A/src" || sed 's/^/# /' "$T/stage.log"
check "... with the real daemon" cmp -s "$top/bin/nvidia-imex" "$T/img$D/usr/bin/nvidia-imex.real"

bad_archive() { # bad_archive DESCRIPTION PATTERN ENV...
	local d=$1 pat=$2 r=$T/bad.$RANDOM; shift 2
	if stage "$r" "$@"; then fail "$d: accepted"
	elif ! grep -q -- "$pat" "$T/stage.log"; then fail "$d: message"; sed 's/^/# /' "$T/stage.log"
	elif find "$r" -path '*usr/bin*' -type f | grep -q .; then fail "$d: something was published"
	else pass "$d"; fi
}
sed 's/^\(.\)./\1f/' "$A/files.sha256" > "$A/bad.sha256"
bad_archive "a bad checksum is refused, nothing published" "sha256" \
	MOKKA_IMEX_ARCHIVE="$A/imex.tar.xz" MOKKA_IMEX_CHECKSUMS="$A/bad.sha256"
grep -v nvidia-imex-ctl "$A/files.sha256" > "$A/partial.sha256"
bad_archive "a file without a checksum is refused" "no checksum" \
	MOKKA_IMEX_ARCHIVE="$A/imex.tar.xz" MOKKA_IMEX_CHECKSUMS="$A/partial.sha256"
bad_archive "no checksum list is refused" "checksum list" MOKKA_IMEX_ARCHIVE="$A/src/nvidia-imex-linux-x86_64-595.91.07-archive"
"$PY" - "$A/evil.tar.xz" "$top/bin/nvidia-imex" <<'PYEOF'
import sys, tarfile
with tarfile.open(sys.argv[1], "w:xz", format=tarfile.GNU_FORMAT) as t:
    t.add(sys.argv[2], arcname="../nvidia-imex")
PYEOF
(cd "$A" && sha256sum evil.tar.xz > evil.tar.xz.sha256)
bad_archive "a '../' member is refused" "unsafe path" MOKKA_IMEX_ARCHIVE="$A/evil.tar.xz"
check "nothing written outside the roots" test ! -e "$T/nvidia-imex"

# ---- under the supervisor ----
tree_snapshot "$ROOT" > "$T/before"
start_supervisor --simulators gpudriver,imex --imex-channels --imex-channel-count 8
wait_for 30 is_code /healthz 200 || die "stage failed: $(cat "$T/body")"
wait_for 10 test -e "$ROOT$R/imex/proc-devices" || fail "no R/imex/proc-devices"
check "R/driver/proc/devices and R/imex/proc-devices are the same text" \
	cmp "$ROOT$D/proc/devices" "$ROOT$R/imex/proc-devices"
check "R/driver/proc/devices parses with the DRA driver's rules" parses "$ROOT$D/proc/devices" 235 236
check "fabric-imex-mgmt names minor 512" grep -qx 'DeviceFileMinor: 512' \
	"$ROOT$D/proc/driver/nvidia/capabilities/fabric-imex-mgmt"
check "nvidia-cap512 is a char device 236:512" \
	[ "$(stat -c '%F %t:%T' "$ROOT$D/dev/nvidia-caps/nvidia-cap512")" = "character special file ec:200" ]
check "8 channels" [ "$(find "$ROOT$C" -type c | wc -l)" -eq 8 ]
http /readyz > /dev/null
check "readyz names no imex problem" sh -c "! grep -q imex '$T/body'"
kill -TERM "$SUP_PID"
wait_for 20 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit"
wait "$SUP_PID"
check "supervisor exit status 0" [ $? -eq 0 ]
SUP_PID=
check_root_restored
finish
