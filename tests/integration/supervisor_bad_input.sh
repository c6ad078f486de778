#!/bin/bash
# Bad desired state never hurts a running node: malformed YAML, mistyped
# and out-of-range values, path traversal, an empty, a huge, a dangling and
# a directory profile are each refused (counted, named with file:line:col),
# while /healthz, /readyz, the generation and the staged tree stay as the
# last good state left them and nothing is written outside the root.  A
# good edit afterwards is accepted; a bad profile at startup keeps the
# supervisor up with /healthz 503 until the file is fixed.
. "$(dirname "$0")/../lib.sh"

CFG=$T/cfg			# the profile's directory (watched by the supervisor)
W=$T/work			# this script's scratch files
mkdir -p "$CFG" "$W"
P=$CFG/profile.yaml
GOOD=$W/good.yaml
cp "$S/etc/profiles/h100.yaml" "$GOOD"
cp "$GOOD" "$P"
nfd=$ROOT/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features

tree_snapshot "$ROOT" > "$W/root.before"
evil_state() { stat -c '%i %y' /tmp/evil 2>/dev/null || echo absent; }
evil0=$(evil_state)

# What the node has staged and published, minus volatile files.
staged() {
	(cd "$ROOT$R" && find . -path ./fabric-state/fabricmanager.ready -prune -o \
		-printf '%p %y %m %l\n' | sort
	 cd "$ROOT$R" && find sys -type f -exec sha1sum {} + | sort -k2)
	sha1sum < "$nfd"
}
# Everything under $T but the root, our scratch dir and the logs we expect.
outside_root() {
	find "$T" -mindepth 1 \( -path "$ROOT" -o -path "$W" \) -prune -o -print | sort
}
# Editor-style save: write a temp file in the same directory, rename over.
put() { # put FILE: install FILE's bytes as the profile
	local tmp=$CFG/.profile.yaml.tmp
	cp "$1" "$tmp" && mv -f "$tmp" "$P"
}
src_errors() { metric mokka_source_errors_total; }
errors_above() { [ "$(src_errors)" -gt "$1" ] 2>/dev/null; }
no_source_error() { ! curl -s --max-time 2 "http://127.0.0.1:$PORT/metrics" | grep -q '^mokka_source_error{'; }
stage_lines() { grep -c 'reconcile: generation [0-9]*: stage$' "$T/sup.log"; }
idle() {
	local p
	p=$(metric mokka_passes_total)
	[ -n "$p" ] && [ "$(stage_lines)" -eq "$p" ] && is_code /healthz 200 && is_code /readyz 200
}
restore_good() { # put back the good profile and wait until it is in force
	[ -d "$P" ] && rmdir "$P"
	put "$GOOD"
	wait_for 10 no_source_error || fail "$1: the good profile was not accepted again"
	wait_for 15 idle || fail "$1: node did not settle on the good profile: $(cat "$T/body")"
}
line_of() { grep -n "$1" "$GOOD" | head -1 | cut -d: -f1; }

start_supervisor --config "$P" --node-name node-a
wait_for 15 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"
wait_for 15 idle || die "node did not settle: $(cat "$T/body")"
check "/healthz 200 with the good profile" is_code /healthz 200
ls "$CFG" > "$W/cfg.list"
outside_root > "$W/outside.before"

gen_line=$(line_of 'max_link_gen:')
bus_line=$(line_of 'bus_id: "0000:1A:00.0"')
rc_line=$(line_of 'id: "pci0000:00"')

# Each case: NAME KIND, where KIND says what the log must name:
#   "LINE_RE KEY" for compile errors (file:LINE:COL and the key), "-" for
#   read errors (the file name only).
make_bad() { # make_bad NAME -> the bad profile at $W/bad (or a special kind)
	case $1 in
	malformed)	sed 's/^\(\s*max_link_gen:\).*/\1 [5/' "$GOOD" > "$W/bad" ;;
	mistyped)	sed 's/^\(\s*max_link_gen:\).*/\1 "fast"/' "$GOOD" > "$W/bad" ;;
	out-of-range)	sed 's/^\(\s*max_link_gen:\).*/\1 9/' "$GOOD" > "$W/bad" ;;
	bus-traversal)	sed 's#bus_id: "0000:1A:00.0"#bus_id: "../../../../tmp/evil"#' "$GOOD" > "$W/bad" ;;
	bus-traversal-short)	# short enough to pass the length check
			sed 's#bus_id: "0000:1A:00.0"#bus_id: "../../../tmp/ev"#' "$GOOD" > "$W/bad" ;;
	rc-traversal)	sed 's#id: "pci0000:00"#id: "../x"#' "$GOOD" > "$W/bad" ;;
	empty)		: > "$W/bad" ;;
	huge)		{ cat "$GOOD"; yes '# padding padding padding padding padding padding' |
			  head -c $((10 * 1024 * 1024)); } > "$W/bad" ;;
	esac
}
expect_log() { # what the rejection must name, as an ERE
	local f='profile\.yaml'
	case $1 in
	malformed)	echo "$f:($gen_line|$((gen_line + 1))):[0-9]+: .*yaml" ;;
	mistyped|out-of-range)	echo "$f:$gen_line:[0-9]+: device_defaults\.pcie\.max_link_gen: " ;;
	bus-traversal|bus-traversal-short)	echo "$f:$bus_line:[0-9]+: devices\[0\]\.pci\.bus_id: " ;;
	rc-traversal)	echo "$f:$rc_line:[0-9]+: pcie_topology\.root_complexes\[0\]\.id: " ;;
	empty)		echo "$f:[0-9]+:[0-9]+: " ;;
	*)		echo "$f" ;;
	esac
}

for c in malformed mistyped out-of-range bus-traversal bus-traversal-short rc-traversal \
	 empty huge dangling-symlink directory; do
	wait_for 15 idle || fail "$c: node not idle before the edit"
	e0=$(src_errors)
	g0=$(metric mokka_generation)
	p0=$(metric mokka_passes_total)
	staged > "$W/staged.before"
	n0=$(wc -l < "$T/sup.log")
	case $c in
	dangling-symlink)
		ln -s "$CFG/no-such-profile.yaml" "$CFG/.profile.yaml.tmp"
		mv -fT "$CFG/.profile.yaml.tmp" "$P" ;;
	directory)
		rm -f "$P" && mkdir "$P" ;;
	*)
		make_bad "$c"; put "$W/bad" ;;
	esac
	wait_for 10 errors_above "$e0" || fail "$c: mokka_source_errors_total did not increase"
	sleep 0.3	# let anything that would (wrongly) follow the error start
	tail -n +"$((n0 + 1))" "$T/sup.log" > "$W/log.case"
	re=$(expect_log "$c")
	check "$c: the log names the file (and line:col, key): /$re/" grep -Eq "$re" "$W/log.case"
	check "$c: /healthz still 200" is_code /healthz 200
	check "$c: /readyz still 200" is_code /readyz 200
	check "$c: generation unchanged ($g0)" [ "$(metric mokka_generation)" = "$g0" ]
	check "$c: no pass started" [ "$(metric mokka_passes_total)" = "$p0" ]
	check "$c: no pass in the log" sh -c "! grep -q 'reconcile: generation' '$W/log.case'"
	staged > "$W/staged.after"
	check "$c: staged tree and NFD file unchanged" cmp -s "$W/staged.before" "$W/staged.after"
	check "$c: nothing at /tmp/evil" [ "$(evil_state)" = "$evil0" ]
	outside_root > "$W/outside.after"
	check "$c: nothing written next to the root" cmp -s "$W/outside.before" "$W/outside.after"
	check "$c: supervisor still running" kill -0 "$SUP_PID"
	restore_good "$c"
done
[ -n "$(ls "$ROOT$R" 2>/dev/null)" ] || fail "staged tree vanished"
check "no stray files in the profile's directory" sh -c "ls '$CFG' | cmp -s - '$W/cfg.list'"
check "nothing in the root outside the mock root, the NFD dir and /run/nvidia" \
	sh -c "[ -z \"\$(find '$ROOT' -mindepth 1 -path '$ROOT/var' -prune -o -path '$ROOT/etc' -prune -o -path '$ROOT/run' -prune -o -print)\" ]"

# A good edit after all the bad ones is accepted.
g0=$(metric mokka_generation)
sed 's/^\(\s*driver_version:\).*/\1 "550.999.03"/' "$GOOD" > "$W/good2.yaml"
put "$W/good2.yaml"
wait_for 10 sh -c "[ \"\$(curl -s 127.0.0.1:$PORT/metrics | awk '\$1==\"mokka_generation\"{print \$2}')\" -gt $g0 ]" \
	|| fail "a good edit after the bad ones was not accepted"
check "good edit published (NFD file carries 550.999.03)" wait_for 10 grep -q '550\.999\.03' "$nfd"
check "/healthz 200 after the good edit" wait_for 10 is_code /healthz 200

# Teardown, then a start with a bad profile.
kill -TERM "$SUP_PID"
wait_for 20 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit on SIGTERM"
wait "$SUP_PID"; rc=$?
check "supervisor exit status 0 after teardown (got $rc)" [ "$rc" -eq 0 ]
tree_snapshot "$ROOT" > "$W/root.after"
check "teardown restored the root" cmp -s "$W/root.before" "$W/root.after"
SUP_PID=

make_bad mistyped
put "$W/bad"
start_supervisor --config "$P" --node-name node-a
wait_for 10 is_code /healthz 503 || fail "/healthz not 503 with a bad profile at startup"
sleep 1
check "supervisor stays up with a bad profile at startup" kill -0 "$SUP_PID"
check "/healthz 503 with a bad profile at startup" is_code /healthz 503
check "/healthz names profile.yaml:$gen_line:COL" grep -Eq "profile\.yaml:$gen_line:[0-9]+:" "$T/body"
check "/readyz not 200 with no state" sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:$PORT/readyz)\" != 200 ]"
check "source error counted" errors_above 0
put "$GOOD"
check "/healthz 200 once the file is fixed" wait_for 15 is_code /healthz 200
check "/readyz 200 once the file is fixed" wait_for 15 is_code /readyz 200
check "generation 1 after the fix" [ "$(metric mokka_generation)" = 1 ]
kill -TERM "$SUP_PID"
wait_for 20 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit on SIGTERM"
wait "$SUP_PID"; rc=$?
check "second supervisor exit status 0 (got $rc)" [ "$rc" -eq 0 ]
tree_snapshot "$ROOT" > "$W/root.after2"
check "second teardown restored the root" cmp -s "$W/root.before" "$W/root.after2"
check "nothing at /tmp/evil at the end" [ "$(evil_state)" = "$evil0" ]
SUP_PID=
finish
