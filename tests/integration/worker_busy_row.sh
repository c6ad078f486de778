#!/bin/bash
# The BUSY row of the legal-op table, worker side: a command that arrives
# while the worker is still answering the previous one is a protocol error
# (exit 3, no result); abort/status/shutdown may arrive (status gets its
# ready after the result).  Both messages are queued before the worker
# starts, so the second one is surely there while the first one runs.
. "$(dirname "$0")/../lib.sh"

W=$B/mokka-worker-nvlink
[ -x "$W" ] || die "mokka-worker-nvlink not built"

run() { # run OP2 -> prints "rc op,op,..." of what the worker sent
	/usr/bin/python3 - "$W" "$ROOT" "$1" <<'PY'
import json, os, socket, subprocess, sys
worker, root, op2 = sys.argv[1:]
os.open("/dev/null", os.O_RDONLY)	# hold the low fds so fd 3 is free for dup2
os.open("/dev/null", os.O_RDONLY)
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
for op, seq in (("apply", 1), (op2, 2)):
    a.send(json.dumps({"v": 1, "op": op, "gen": 1, "seq": seq}).encode())
os.dup2(b.fileno(), 3)	# the worker's end goes at fd 3
b.close()
env = dict(os.environ, MOKKA_HOST_ROOT=root, MOKKA_MOCK_ROOT="/var/lib/nvml-mock")
p = subprocess.Popen([worker], pass_fds=(3,), env=env, stderr=subprocess.PIPE)
os.close(3)
got = []
a.settimeout(5)
try:
    while True:
        m = a.recv(65536)
        if not m:
            break
        j = json.loads(m)
        got.append(j["op"] + (":" + j["for"] if j["op"] == "result" else ""))
        if op2 == "status" and j["op"] == "ready":
            a.shutdown(socket.SHUT_WR)	# done: EOF tells the worker to go
except socket.timeout:
    got.append("timeout")
rc = p.wait(timeout=10)
sys.stderr.write(p.stderr.read().decode())
print(rc, ",".join(got))
PY
}

out=$(run apply 2> "$T/w1.log")
note "apply while busy: $out"; sed 's/^/# /' "$T/w1.log"
check "a second apply while busy: protocol error (exit 3), no result" [ "$out" = "3 hello" ]
check "the worker says why" grep -q "apply received while busy" "$T/w1.log"

out=$(run status 2> "$T/w2.log")
note "status while busy: $out"
check "status while busy is legal: result, then ready, clean exit" [ "$out" = "0 hello,result:apply,ready" ]

out=$(run shutdown 2> "$T/w3.log")
note "shutdown while busy: $out"
check "shutdown while busy: the result still goes out, then a clean exit" [ "$out" = "0 hello,result:apply" ]
finish
