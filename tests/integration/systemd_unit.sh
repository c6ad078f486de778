#!/bin/bash
# The shipped unit passes `systemd-analyze verify` (with ExecStart pointed
# at the binary under test), and mokka-supervisor speaks sd_notify:
# READY=1 after the first pass, STOPPING=1 on SIGTERM.
. "$(dirname "$0")/../lib.sh"

command -v systemd-analyze >/dev/null || die "systemd-analyze missing (install systemd)"
# The unit make generated from etc/systemd/mokka-supervisor.service.in;
# tests/integration/install.sh verifies it as installed, man pages and all.
sed "s|^ExecStart=[^ ]*/mokka-supervisor|ExecStart=$B/mokka-supervisor|" \
	"$B/etc/systemd/mokka-supervisor.service" > "$T/mokka-supervisor.service"
grep -q "^ExecStart=$B/mokka-supervisor " "$T/mokka-supervisor.service" || fail "unit has no ExecStart"
grep -q '^Type=notify$' "$T/mokka-supervisor.service" || fail "unit is not Type=notify"
grep -q '^KillMode=mixed$' "$T/mokka-supervisor.service" || fail "unit is not KillMode=mixed"
# Least exposure on bare metal: health on loopback, set explicitly.
grep -q '^ExecStart=.* --health-addr 127\.0\.0\.1:9091 ' "$T/mokka-supervisor.service" \
	&& pass "unit binds health to 127.0.0.1:9091" || fail "unit does not bind health to 127.0.0.1:9091"
# --man=no: the Documentation= pages are not installed here.
if systemd-analyze verify --man=no "$T/mokka-supervisor.service" > "$T/verify.log" 2>&1; then
	pass "systemd-analyze verify"
else
	fail "systemd-analyze verify: $(cat "$T/verify.log")"
fi

# A datagram socket stands in for systemd's notify socket.
/usr/bin/python3 - "$T/notify.sock" > "$T/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); s.settimeout(30)
try:
    while True:
        m = s.recv(4096).decode()
        print(m.replace("\n", " "), flush=True)
        if "STOPPING=1" in m:
            break
except socket.timeout:
    pass
PY
LISTENER=$!
wait_for 5 test -S "$T/notify.sock" || die "notify listener did not start"
NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=1000000 \
	start_supervisor --simulators pcibus,nvlink
wait_for 15 grep -q 'READY=1' "$T/notify.log" || fail "no READY=1 after the first pass"
wait_for 5 grep -q 'WATCHDOG=1' "$T/notify.log" || fail "no WATCHDOG=1 ping with WATCHDOG_USEC set"
kill -TERM "$SUP_PID"
wait "$SUP_PID"
SUP_PID=
wait_for 5 grep -q 'STOPPING=1' "$T/notify.log" && pass "READY, WATCHDOG, STOPPING sent" \
	|| fail "no STOPPING=1 on SIGTERM: $(cat "$T/notify.log")"
kill "$LISTENER" 2>/dev/null
finish
