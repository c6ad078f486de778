# Shared helpers for integration tests (sourced).  Everything happens
# under a fresh temp dir; only processes we started are ever signalled.
set -u

: "${MOKKA_BUILDDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${MOKKA_SRCDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
B=$MOKKA_BUILDDIR
S=$MOKKA_SRCDIR
R=/var/lib/nvml-mock
T=$(mktemp -d /tmp/mokka-test.XXXXXX)
ROOT=$T/root
mkdir -p "$ROOT"
SUP_PID=
PORT=
FAILS=0
# No test may write the real kernel log: mokka-kernellog announces Xids
# only where a test points --kernel-log (an empty MOCK_NVML_KMSG is "off").
export MOCK_NVML_KMSG=

note() { printf '# %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; FAILS=$((FAILS + 1)); }
die() { printf 'FAIL: %s\n' "$*"; [ -n "$SUP_PID" ] && tail -50 "$T/sup.log" 2>/dev/null; exit 1; }
pass() { printf 'ok: %s\n' "$*"; }
check() { # check DESCRIPTION COMMAND...
	local d=$1; shift
	if "$@"; then pass "$d"; else fail "$d"; fi
}

stop_supervisor() {
	if [ -n "$SUP_PID" ] && kill -0 "$SUP_PID" 2>/dev/null; then
		kill -TERM "$SUP_PID" 2>/dev/null
		for _ in $(seq 150); do kill -0 "$SUP_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SUP_PID" 2>/dev/null
	fi
	SUP_PID=
}

cleanup() {
	stop_supervisor
	[ -n "${KEEP_T:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The real nvidia-smi that gpudriver stages (unpacked by
# scripts/fetch-consumers.sh), when present.
: "${MOKKA_CONSUMERS:=/var/cache/mokka-consumers}"
if [ -z "${MOKKA_NVIDIA_SMI:-}" ] && [ -x "$MOKKA_CONSUMERS/nvidia-smi/usr/bin/nvidia-smi" ]; then
	export MOKKA_NVIDIA_SMI=$MOKKA_CONSUMERS/nvidia-smi/usr/bin/nvidia-smi
fi

# start_supervisor ARGS... : runs in the background, log in $T/sup.log.
# It runs in a private mount namespace (unshare execs in place, so the PID
# is the supervisor's): the bind mounts Apply makes never reach the host.
start_supervisor() {
	PORT=$(free_port)
	MOKKA_LIBEXECDIR=$B unshare -m --propagation private "$B/mokka-supervisor" --host-root "$ROOT" --health-addr "127.0.0.1:$PORT" \
		--log-level debug "$@" > "$T/sup.log" 2>&1 &
	SUP_PID=$!
}

# http PATH -> prints the status code; body in $T/body
http() {
	curl -s -o "$T/body" -w '%{http_code}' --max-time 2 "http://127.0.0.1:$PORT$1" || echo 000
}

# wait_for SECONDS COMMAND... : poll until COMMAND succeeds
wait_for() {
	local t=$1; shift
	local end=$(( $(date +%s%N) / 1000000 + t * 1000 ))
	while [ $(( $(date +%s%N) / 1000000 )) -lt $end ]; do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

is_code() { [ "$(http "$1")" = "$2" ]; }
metric() { # metric NAME_WITH_LABELS -> value
	curl -s --max-time 2 "http://127.0.0.1:$PORT/metrics" | awk -v k="$1" '$1 == k { print $2 }'
}

# Snapshot of a tree: paths, types, modes, link targets and content sums.
tree_snapshot() {
	(cd "$1" && find . -printf '%p %y %m %l\n' | sort
	 cd "$1" && find . -type f -exec sha1sum {} + | sort -k2)
}

# check_root_restored: the root matches the snapshot in $T/before.
check_root_restored() {
	tree_snapshot "$ROOT" > "$T/after"
	if diff -u "$T/before" "$T/after" > "$T/tree.diff"; then
		pass "root left exactly as it was"
	else
		fail "the root changed"; sed 's/^/# /' "$T/tree.diff" | head -30
	fi
}

# stop_and_check_teardown DAEMON-PID: SIGTERM the supervisor, which must
# exit 0, stop its daemon and leave the root exactly as it was.
stop_and_check_teardown() {
	local dpid=$1 rc
	kill -TERM "$SUP_PID"
	wait_for 20 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit on SIGTERM"
	wait "$SUP_PID"; rc=$?
	check "supervisor exit status 0 after teardown (got $rc)" [ "$rc" -eq 0 ]
	check "daemon stopped" sh -c "! kill -0 $dpid 2>/dev/null"
	check_root_restored
	SUP_PID=
}

worker_pid() { # worker_pid NAME -> pid of mokka-worker-NAME under the supervisor
	pgrep -P "$SUP_PID" -f "mokka-worker-$1\$" | head -1
}
daemon_pid() { pgrep -P "$SUP_PID" -f '^nv-fabricmanager' | head -1; }

# glibc_only SO: SO, a library loaded into foreign programs, may depend on
# glibc alone: ldd shows only the vDSO, libc and the dynamic loader, and
# DT_NEEDED names libc.so.6 only.
glibc_only() {
	local so=$1 deps bad needed
	[ -f "$so" ] || die "$so not built"
	deps=$(ldd "$so") || die "ldd $so"
	echo "$deps"
	bad=$(printf '%s\n' "$deps" |
		grep -Ev '^[[:space:]]*(linux-vdso\.so\.1|linux-gate\.so\.1|libc\.so\.6|/[^ ]*/ld-linux[^ ]*\.so\.[0-9]+)( |$)') &&
		fail "unexpected dependencies: $bad"
	printf '%s\n' "$deps" | grep -q 'libc\.so\.6' || fail "no libc dependency?"
	needed=$(objdump -p "$so" | awk '$1 == "NEEDED" { print $2 }')
	[ "$needed" = "libc.so.6" ] || fail "NEEDED is '$needed', want libc.so.6 only"
}

finish() {
	stop_supervisor
	# Sanitizer builds: a report from the supervisor, a worker or a daemon
	# fails the test even when the process was restarted.
	if grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error:' "$T"/*.log 2>/dev/null; then
		fail "sanitizer report in a process log"
		grep -h -A20 'AddressSanitizer\|LeakSanitizer\|runtime error:' "$T"/*.log | head -60 | sed 's/^/# /'
	fi
	if [ "$FAILS" -gt 0 ]; then
		note "$FAILS check(s) failed; supervisor log tail:"
		tail -40 "$T/sup.log" 2>/dev/null | sed 's/^/# /'
		exit 1
	fi
	exit 0
}
