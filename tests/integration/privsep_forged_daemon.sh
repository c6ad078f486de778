#!/bin/bash
# A worker that forges its daemon spec (another binary, a path, a foreign
# env key, too many arguments) gets nothing run: the forged program never
# runs, that worker is failed with the reason, the other simulators and
# the node stay up.  The forging worker is tests/privsep_forger.c, a
# check-only program installed as mokka-worker-fabricmanager in a private
# libexecdir (production has no way to load it).
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || { note "needs root"; exit 77; }
[ -x "$B/privsep_forger" ] || { note "privsep_forger not built"; exit 77; }

LX=$T/libexec
mkdir -p "$LX"
for f in "$B"/mokka-* "$B"/mock-ib "$B"/*.so; do
	[ -e "$f" ] && ln -sf "$f" "$LX/"
done
ln -sf "$B/privsep_forger" "$LX/mokka-worker-fabricmanager"
# What a successful forgery would run: each leaves a marker.
for p in "$LX/evil" "$T/evil"; do
	printf '#!/bin/sh\ntouch %s/forged-ran\n' "$T" > "$p"
	chmod +x "$p"
done
cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"

for how in binary path env args; do
	note "forgery: $how"
	: > "$T/sup.log"
	PORT=$(free_port)
	MOKKA_TEST_FORGE=$how MOKKA_LIBEXECDIR=$LX unshare -m --propagation private \
		"$B/mokka-supervisor" --host-root "$ROOT" --health-addr "127.0.0.1:$PORT" \
		--simulators pcibus,nvlink,fabricmanager --config "$T/profile.yaml" \
		--log-level debug > "$T/sup.log" 2>&1 &
	SUP_PID=$!
	wait_for 20 grep -q "daemon spec rejected" "$T/sup.log" ||
		fail "$how: no 'daemon spec rejected' in the log"
	sleep 1
	check "$how: the supervisor is still running" kill -0 "$SUP_PID"
	check "$how: the forged program never ran" [ ! -e "$T/forged-ran" ]
	check "$how: no daemon started" [ -z "$(pgrep -P "$SUP_PID" -f '^(nv-fabricmanager|mokka-fabricmanager|evil)')" ]
	grep -m1 "daemon spec rejected" "$T/sup.log" | sed 's/^/# /'
	check "$how: the log says why" grep -q "daemon spec rejected.*\(not one simulator\|name\|env key\|arguments\)" "$T/sup.log"
	check "$how: pcibus worker still up" [ -n "$(worker_pid pcibus)" ]
	check "$how: nvlink worker still up" [ -n "$(worker_pid nvlink)" ]
	# Once reaped the worker is failed; /readyz gives the reason it was
	# failed for, not the restart limit it never reached.
	wait_for 5 sh -c "curl -s --max-time 2 http://127.0.0.1:$PORT/readyz |
		grep -q '^fabricmanager: failed:'" || true
	http /readyz > /dev/null
	sed 's/^/# readyz: /' "$T/body"
	check "$how: /readyz names fabricmanager" grep -q "fabricmanager" "$T/body"
	check "$how: /readyz gives the violation as the reason" \
		grep -q "^fabricmanager: failed: daemon spec rejected" "$T/body"
	check "$how: /readyz does not blame the restart limit" \
		sh -c "! grep -q 'fabricmanager: failed (restart limit)' '$T/body'"
	check "$how: fabricmanager is failed, not restarted to forge again" \
		[ "$(grep -c 'worker fabricmanager started' "$T/sup.log")" -eq 1 ]
	check "$how: /readyz does not blame pcibus" sh -c "! grep -q '^pcibus' '$T/body'"
	check "$how: /healthz answers (the node serves)" [ -n "$(http /healthz)" ]
	stop_supervisor
done
finish
