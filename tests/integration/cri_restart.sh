#!/bin/bash
# The restart rules of the seed (issue 18), through the supervisor into a
# temp host root with a static busybox shell, a fake containerd and a fake
# systemctl (chrooted into the root: this machine's containerd is never
# touched) that records restarts and answers is-active from a state file:
#   * the first Apply restarts containerd once; a crashed and restarted cri
#     worker re-applies without restarting it again (same node pod);
#   * a node pod killed without Revoke leaves its unchanged drop-in; the
#     next pod restarts containerd once anyway ("once when a node pod
#     starts"), and not again on re-apply;
#   * a containerd that does not come back (is-active: failed) leaves the
#     node not ready, /readyz and the log naming the unit and systemctl's
#     answer; when it runs again the node is ready without a new restart;
#   * a restart that systemctl itself refuses: not ready, its message in
#     the log.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v busybox >/dev/null || { echo "SKIP: busybox missing (scripts/install-deps.sh)"; exit 77; }
export MOKKA_TEST_CRI_COMEBACK_MS=1000
unset MOKKA_CONTAINER_TOOLKIT_DIR
DROPIN=$ROOT/etc/containerd/conf.d/50-mokka.toml

exe() { mkdir -p "$(dirname "$ROOT$1")"; cat > "$ROOT$1"; chmod 755 "$ROOT$1"; }
make_root() {
	rm -rf "$ROOT"
	mkdir -p "$ROOT/bin" "$ROOT/etc/containerd"
	cp "$(command -v busybox)" "$ROOT/bin/busybox"
	for a in sh cat echo; do ln -s busybox "$ROOT/bin/$a"; done
	# is-active answers from /ctrd.state (default active); restart fails
	# when /restart.fails holds a message.
	exe /usr/bin/systemctl <<'EOF'
#!/bin/sh
if [ "$1" = is-active ]; then
	s=active; [ -f /ctrd.state ] && s=$(cat /ctrd.state)
	echo "$s"; [ "$s" = active ]; exit $?
fi
echo "$*" >> /systemctl.calls
[ -f /restart.fails ] && { cat /restart.fails >&2; exit 1; }
exit 0
EOF
	exe /usr/bin/containerd <<'EOF'
#!/bin/sh
exit 0
EOF
	printf 'version = 2\n' > "$ROOT/etc/containerd/config.toml"
}
restarts() { grep -c '^restart containerd.service$' "$ROOT/systemctl.calls" 2>/dev/null || echo 0; }
published() { grep -c "generation 1 published" "$T/sup.log"; }
stop() {
	kill -TERM "$SUP_PID"
	wait_for 20 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit"
	wait "$SUP_PID" 2>/dev/null
	SUP_PID=
}

# ---- once per node pod, not per worker ----
make_root
start_supervisor --simulators cri
wait_for 30 is_code /readyz 200 || die "/readyz never 200: $(cat "$T/body")"
check "first Apply: one restart" [ "$(restarts)" -eq 1 ]
w=$(worker_pid cri)
[ -n "$w" ] || die "no cri worker"
kill -KILL "$w"
wait_for 30 sh -c "[ \$(grep -c 'generation 1 published' '$T/sup.log') -ge 2 ]" ||
	fail "the restarted cri worker did not re-apply"
wait_for 20 is_code /readyz 200 || fail "not ready after the worker came back: $(cat "$T/body")"
check "a restarted cri worker (same node pod) restarts nothing ($(restarts))" [ "$(restarts)" -eq 1 ]

# The pod killed without Revoke: its drop-in stays, unchanged.
sup=$SUP_PID
kill -KILL "$sup"
wait "$sup" 2>/dev/null
SUP_PID=
wait_for 10 sh -c "! pgrep -f 'mokka-worker-cri\$' -P $sup > /dev/null" || fail "workers outlived the pod"
check "the killed pod left its drop-in" test -f "$DROPIN"
cp "$DROPIN" "$T/dropin.before"
mv "$T/sup.log" "$T/sup1.log"
start_supervisor --simulators cri
wait_for 30 is_code /readyz 200 || die "second pod: /readyz never 200: $(cat "$T/body")"
check "the drop-in is byte for byte the same" cmp -s "$DROPIN" "$T/dropin.before"
check "a new node pod restarts containerd once anyway ($(restarts))" [ "$(restarts)" -eq 2 ]
check "... and says why" grep -q 'the node pod started: restarting containerd.service once' "$T/sup.log"
kill -HUP "$SUP_PID"
wait_for 20 sh -c "[ \$(grep -c 'generation 1 published' '$T/sup.log') -ge 2 ]" || fail "no re-apply on SIGHUP"
check "its re-apply restarts nothing ($(restarts))" [ "$(restarts)" -eq 2 ]
stop

# ---- containerd does not come back ----
make_root
echo failed > "$ROOT/ctrd.state"
start_supervisor --simulators cri
wait_for 30 grep -q 'generation 1 published' "$T/sup.log" || die "no first pass"
check "not back: /readyz 503" wait_for 10 is_code /readyz 503
check "not back: /readyz names cri and the unit" \
	grep -q 'cri.*containerd.service did not come back' "$T/body"
check "not back: the log has the error and systemctl's answer" \
	grep -q 'error.*containerd.service did not come back after its restart: systemctl is-active containerd.service: failed' "$T/sup.log"
echo active > "$ROOT/ctrd.state"
check "back: ready again, without another restart" wait_for 20 is_code /readyz 200
check "back: one restart in all ($(restarts))" [ "$(restarts)" -eq 1 ]
check "back: the log says it runs again" grep -q 'containerd.service runs again' "$T/sup.log"
stop

# ---- systemctl refuses the restart ----
make_root
echo 'Job for containerd.service failed because the control process exited with error code.' \
	> "$ROOT/restart.fails"
start_supervisor --simulators cri
wait_for 30 grep -q 'generation 1 published' "$T/sup.log" || die "no first pass"
check "refused: /readyz 503" wait_for 10 is_code /readyz 503
check "refused: the log has systemctl's message" \
	grep -q 'did not come back after its restart: systemctl restart containerd.service: exit status 1: Job for containerd.service failed' "$T/sup.log"
stop
finish
