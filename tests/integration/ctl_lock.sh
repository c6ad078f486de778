#!/bin/bash
# The overrides lock is root's alone (issue 20): another user could take an
# exclusive flock on the old 0644 overrides.yaml.lock and root's mokka-ctl
# waited forever.  Now:
#   * mokka-ctl makes .overrides.lock mode 0600: `nobody` cannot open it;
#   * an old world-readable overrides.yaml.lock held by `nobody` blocks
#     nothing (it is not the lock any more);
#   * a holder that never lets go makes mokka-ctl fail after a bounded wait
#     (5 s) with a message naming the lock and the holder's PID, document
#     untouched;
#   * a lock file others could open (chmod 0644) is refused, not used.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (setpriv to nobody)"; exit 77; }
command -v setpriv > /dev/null && command -v flock > /dev/null || die "util-linux setpriv/flock missing"
[ -x "$B/mokka-ctl" ] || die "mokka-ctl not built"
chmod 755 "$T"
D=$T/node
mkdir -p "$D"
cp "$S/etc/profiles/a100.yaml" "$D/config.yaml"
: > "$D/overrides.yaml"
chmod 644 "$D/overrides.yaml"
OV=$D/overrides.yaml
L=$D/.overrides.lock
ctl() { env -u MOCK_NVML_OVERRIDES -u MOCK_NVML_CONFIG "$B/mokka-ctl" --overrides "$OV" "$@"; }
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

check "first edit" ctl --gpu 0 temp 50
check "the lock is mode 0600, owned by root" [ "$(stat -c '%a %u' "$L")" = "600 0" ]
check "nobody cannot open it" sh -c "! setpriv --reuid=65534 --regid=65534 --clear-groups \
	flock -n '$L' true 2> '$T/nobody.err'"
grep -q 'Permission denied' "$T/nobody.err" || fail "nobody: $(cat "$T/nobody.err")"

# The old world-readable lock, held by nobody: irrelevant now.
: > "$D/overrides.yaml.lock"
chmod 644 "$D/overrides.yaml.lock"
nobody flock -o -x "$D/overrides.yaml.lock" sleep 20 &
H=$!
wait_for 5 sh -c "grep -q ' FLOCK .* WRITE ' /proc/locks" || note "no flock seen in /proc/locks"
t0=$(now_ms)
check "an old overrides.yaml.lock held by nobody blocks nothing" timeout 4 sh -c \
	"env -u MOCK_NVML_OVERRIDES -u MOCK_NVML_CONFIG '$B/mokka-ctl' --overrides '$OV' --gpu 0 temp 51"
note "took $(( $(now_ms) - t0 )) ms"
kill $(pgrep -P "$H") "$H" 2>/dev/null; wait "$H" 2>/dev/null

# A holder that never lets go: a bounded wait and a clear message.
flock -o -x "$L" sleep 30 &	# -o: the lock is flock's own, not its child's
H=$!
wait_for 5 sh -c "flock -n '$L' true; [ \$? -ne 0 ]" || note "holder not seen"
cp "$OV" "$T/ov.before"
t0=$(now_ms)
ctl --gpu 0 temp 52 > "$T/held.out" 2>&1; rc=$?
ms=$(( $(now_ms) - t0 ))
note "mokka-ctl with the lock held: rc=$rc after $ms ms: $(cat "$T/held.out")"
check "held lock: mokka-ctl fails" [ "$rc" -eq 1 ]
check "... after a bounded wait (4-15 s, got $ms ms)" [ "$ms" -ge 4000 ] && [ "$ms" -le 15000 ]
check "... naming the lock and its holder" grep -q "$L: the lock is held by process $H" "$T/held.out"
check "... the document untouched" cmp -s "$OV" "$T/ov.before"
kill $(pgrep -P "$H") "$H" 2>/dev/null; wait "$H" 2>/dev/null
check "released: the next edit succeeds" ctl --gpu 0 temp 53

# A lock others could open is refused, not used; removing it is the fix.
chmod 644 "$L"
ctl --gpu 0 temp 54 > "$T/mode.out" 2>&1; rc=$?
check "a mode 0644 lock is refused" [ "$rc" -eq 1 ]
check "... with a message that says why and what to do" \
	grep -q "$L: refusing this lock file (mode 0644.*remove it" "$T/mode.out" || cat "$T/mode.out"
rm -f "$L"
check "after removing it, mokka-ctl makes a new 0600 one" \
	sh -c "env -u MOCK_NVML_OVERRIDES -u MOCK_NVML_CONFIG '$B/mokka-ctl' --overrides '$OV' --gpu 0 temp 55 && \
	       [ \"\$(stat -c %a '$L')\" = 600 ]"
finish
