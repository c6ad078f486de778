#!/bin/bash
# libibmockumad / libibmockverbs against an in-process fake mock-ib
# (tests/ib_shim_probe.c): the fd-level UMAD emulation (hello, ioctls ->
# control frames with the assigned agent ids, write, read with the kernel's
# ENOSPC rule, poll, dup/close), the real libibumad on top of it, and the
# NETLINK_RDMA socket hooks (bind/getsockname/recvmsg names, autobind ids,
# libnl-3 round trip).  Both preload orders: the redirect shim last (the
# umad shim sees /dev/infiniband/...) and first (it sees $MOCK_IB_ROOT/dev/...).
. "$(dirname "$0")/../lib.sh"
. "$S/tests/ib_shims_lib.sh"

probe=$B/ib_shim_probe
[ -x "$probe" ] || die "$probe not built"
ib_hand_tree "$T/ib"
export MOCK_IB_ROOT=$T/ib MOCK_IB_SOCKET=$T/mock-ib.sock
# Sanitizer builds of the probe: our shims sit before the runtime on purpose.
export ASAN_OPTIONS=verify_asan_link_order=0

run() { # run NAME PRELOAD MOCK_IB ARGS...
	local name=$1 pre=$2 mode=$3 out rc
	shift 3
	out=$(MOCK_IB=$mode LD_PRELOAD=$pre timeout 60 "$probe" "$@" 2>&1); rc=$?
	printf '%s\n' "$out" | sed "s/^/# [$name] /"
	check "$name: probe $* passed (rc $rc)" [ "$rc" -eq 0 ]
	printf '%s\n' "$out" | grep -q '^ok: ' || fail "$name: probe checked nothing"
}

for order in "$IB_UMAD:$IB_VERBS:$IB_SYS" "$IB_SYS:$IB_UMAD:$IB_VERBS"; do
	tag=redirect-last
	[ "${order%%:*}" = "$IB_SYS" ] && tag=redirect-first
	for m in umad libibumad netlink libnl; do
		run "$tag $m" "$order" full "$m"
	done
done
# The umad shim alone finds the node below MOCK_IB_ROOT itself.
run "umad alone" "$IB_UMAD" full umad

# No daemon listening: a char node without a driver (ENXIO); no RDMA
# netlink (EPROTONOSUPPORT).  A node the tree lacks: ENOENT.
rm -f "$MOCK_IB_SOCKET"
run "no daemon" "$IB_PRELOAD" full open-errno /dev/infiniband/umad0 ENXIO
run "no node" "$IB_PRELOAD" full open-errno /dev/infiniband/umad7 ENOENT
run "no daemon" "$IB_PRELOAD" full socket-errno EPROTONOSUPPORT
# A daemon socket this user may not use (mock-ib's is 0660, root and its
# --socket-group, like the umad node): EACCES, as the node's mode gives.
if command -v setpriv >/dev/null && [ "$(id -u)" -eq 0 ]; then
	python3 -c 'import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1]); s.listen(1); os.chmod(sys.argv[1], 0o660); time.sleep(60)' \
		"$MOCK_IB_SOCKET" &
	LISTENER=$!
	wait_for 5 test -S "$MOCK_IB_SOCKET" || die "no listener at $MOCK_IB_SOCKET"
	chmod 0755 "$T"
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env MOCK_IB=full \
		LD_PRELOAD="$IB_PRELOAD" timeout 60 "$probe" open-errno /dev/infiniband/umad0 EACCES 2>&1)
	check "no access to the daemon's socket: open umad0 fails with EACCES ($out)" \
		grep -q '^ok: ' <<<"$out"
	kill "$LISTENER" 2>/dev/null
	wait "$LISTENER" 2>/dev/null
	rm -f "$MOCK_IB_SOCKET"
fi
# The verbs API shim needs no daemon: sysfs mode, every query from the tree.
run "verbs API" "$IB_PRELOAD" sysfs verbs
run "verbs API, redirect first" "$IB_SYS:$IB_UMAD:$IB_VERBS" sysfs verbs
# MOCK_IB=sysfs: no daemon use at all; netlink refused so libibverbs scans sysfs.
run "sysfs mode" "$IB_PRELOAD" sysfs socket-errno EPROTONOSUPPORT
run "sysfs mode" "$IB_PRELOAD" sysfs open-errno /dev/infiniband/umad0 ENXIO

finish
