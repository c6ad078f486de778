#!/bin/bash
# IMEX from the profile and the IMEXDownload feature gate (issue 18), under
# the supervisor (gpudriver + imex) in temp roots:
#   * the GB200 NVL profile turns IMEX on without a flag (channels staged,
#     the log says why); H100 keeps it off unless --imex-channels asks;
#     nvlink.multi_node: false keeps it off on a GB200 profile;
#   * IMEXDownload against a loopback HTTP server (python3 -m http.server
#     on 127.0.0.1, a free port): the node is healthy and ready at once with
#     no IMEX userspace, the background fetch caches the pinned archive at
#     R/cache/imex/<ver>/<arch>/archive.tar.xz, the next pass (the fetcher
#     SIGHUPs the supervisor) stages the real daemon, ctl and the shim; a
#     second node start stages from the cache without a request;
#   * a bad checksum: nothing cached, no userspace, the node stays ready,
#     the log names both digests; an https:// URL without a proxy is
#     refused, saying so; IMEXDownload without a pinned sha256 is refused
#     at startup.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (device nodes)"; exit 77; }
command -v xz > /dev/null || die "xz missing (xz-utils, install-deps.sh)"
unset MOKKA_IMEX_ARCHIVE MOKKA_IMEX_CHECKSUMS IMEX_MOCK_CHANNELS IMEX_CHANNEL_COUNT https_proxy HTTPS_PROXY
export MOKKA_TEST_IMEX_FETCH_BACKOFF_MS=500
C=$ROOT$R/driver/dev/nvidia-caps-imex-channels
BIN=$ROOT$R/driver/usr/bin
GB=$S/etc/profiles/gb200.yaml

# A synthetic redist archive (fake binaries), served from $T/www.
top=$T/src/nvidia-imex-linux-x86_64-595.91.07-archive
mkdir -p "$top/bin" "$top/etc/nvidia-imex" "$T/www"
printf '#!/bin/sh\necho real imex "$@"\n' > "$top/bin/nvidia-imex"
printf '#!/bin/sh\necho READY\n' > "$top/bin/nvidia-imex-ctl"
printf 'SERVER_PORT=50000\n' > "$top/etc/nvidia-imex/config.cfg"
chmod 755 "$top/bin/"*
(cd "$T/src" && tar -cJf "$T/www/imex.tar.xz" nvidia-imex-linux-x86_64-595.91.07-archive)
SUM=$(sha256sum "$T/www/imex.tar.xz" | cut -d' ' -f1)
HP=$(free_port)
(cd "$T/www" && exec /usr/bin/python3 -m http.server --bind 127.0.0.1 "$HP") > "$T/http.log" 2>&1 &
HTTP_PID=$!
trap 'kill $HTTP_PID 2>/dev/null; cleanup' EXIT
wait_for 20 curl -sf -o /dev/null "http://127.0.0.1:$HP/imex.tar.xz" || die "http.server did not start"
: > "$T/http.log"
URL=http://127.0.0.1:$HP/imex.tar.xz
CACHE=$ROOT$R/cache/imex/595.91.07/linux-x86_64/archive.tar.xz
[ "$(uname -m)" = aarch64 ] && CACHE=$ROOT$R/cache/imex/595.91.07/linux-sbsa/archive.tar.xz

stop() {
	kill -TERM "$SUP_PID"
	wait_for 20 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit"
	wait "$SUP_PID" 2>/dev/null
	SUP_PID=
}
run() { # run ARGS...: a node (gpudriver + imex), waits for a good first pass
	start_supervisor --simulators gpudriver,imex --imex-channel-count 8 "$@"
	wait_for 60 grep -q 'generation 1 published' "$T/sup.log" ||
		die "no first pass: $(tail -5 "$T/sup.log")"
}
gets() { grep -c 'GET /imex.tar.xz' "$T/http.log"; }

# ---- IMEX from the profile ----
run --config "$GB"
check "GB200 NVL: IMEX on without a flag (channel0 is a char device)" test -c "$C/channel0"
check "GB200 NVL: the log says the profile turned it on" grep -q 'multi-node NVLink' "$T/sup.log"
check "GB200 NVL: no archive, no IMEX userspace" test ! -e "$BIN/nvidia-imex"
check "GB200 NVL: ready with no IMEX userspace" wait_for 10 is_code /healthz 200
stop
run --config "$S/etc/profiles/h100.yaml"
check "H100: IMEX off (no channels)" test ! -e "$C"
stop
run --config "$S/etc/profiles/h100.yaml" --imex-channels
check "H100 + --imex-channels: channels staged" test -c "$C/channel0"
stop
sed 's/^nvlink:$/nvlink:\n  multi_node: false/' "$GB" > "$T/gb-off.yaml"
run --config "$T/gb-off.yaml"
check "GB200 with nvlink.multi_node: false: IMEX off" test ! -e "$C"
stop

# ---- IMEXDownload from the loopback server ----
run --config "$GB" --feature-gates IMEXDownload=true --imex-download-url "$URL" \
	--imex-download-sha256 "$SUM"
check "download: the node is healthy while it fetches" wait_for 10 is_code /healthz 200
check "download: the first pass staged no userspace (it never waits on the network)" \
	grep -q 'not cached: fetching' "$T/sup.log"
check "download: the pinned archive is cached" wait_for 30 test -f "$CACHE"
check "download: the cache holds the served bytes" cmp -s "$CACHE" "$T/www/imex.tar.xz"
check "download: the next pass stages the real daemon" wait_for 30 test -f "$BIN/nvidia-imex.real"
check "download: ... the ctl and the --nogpu shim (published)" \
	wait_for 10 sh -c "cmp -s '$top/bin/nvidia-imex-ctl' '$BIN/nvidia-imex-ctl' && cmp -s '$B/nvidia-imex-shim' '$BIN/nvidia-imex'"
check "download: the log says the digest was verified" grep -q 'cached .*sha256 verified' "$T/sup.log"
check "download: one GET" [ "$(gets)" -eq 1 ]
check "download: ready" wait_for 10 is_code /readyz 200
stop
check "teardown: the node cache stays (it outlives the node pod)" test -f "$CACHE"
check "teardown: the IMEX userspace went" test ! -e "$BIN/nvidia-imex"
run --config "$GB" --feature-gates IMEXDownload=true --imex-download-url "$URL" \
	--imex-download-sha256 "$SUM"
check "restart: staged from the cache at once" test -f "$BIN/nvidia-imex.real"
check "restart: no new request" [ "$(gets)" -eq 1 ]
stop

# ---- a bad checksum: nothing cached, no userspace, still ready ----
rm -rf "$ROOT$R/cache"
BAD=0000000000000000000000000000000000000000000000000000000000000000
run --config "$GB" --feature-gates IMEXDownload=true --imex-download-url "$URL" \
	--imex-download-sha256 "$BAD"
check "bad checksum: the log names both digests" \
	wait_for 20 grep -q "sha256 $SUM, the pin says $BAD: not cached" "$T/sup.log"
check "bad checksum: retried (backoff)" wait_for 20 sh -c "[ \$(grep -c 'GET /imex.tar.xz' '$T/http.log') -ge 2 ]"
check "bad checksum: nothing cached" test ! -e "$CACHE"
check "bad checksum: no IMEX userspace" test ! -e "$BIN/nvidia-imex.real"
check "bad checksum: channels still staged" test -c "$C/channel0"
check "bad checksum: healthy" is_code /healthz 200
stop
check "bad checksum: no temp file left in the cache" \
	sh -c "! find '$ROOT$R/cache' \( -name '.archive.*' -o -name '*.mokka-tmp.*' \) 2>/dev/null | grep -q ."

# ---- https without a proxy; no pin ----
run --config "$GB" --feature-gates IMEXDownload=true \
	--imex-download-url "https://127.0.0.1:$HP/imex.tar.xz" --imex-download-sha256 "$SUM"
check "https without a proxy is refused, saying so" \
	wait_for 20 grep -q 'https needs an HTTP proxy' "$T/sup.log"
check "https: healthy" is_code /healthz 200
stop
refused_start() { # refused_start DESCRIPTION PATTERN ARGS...: the error is logged at start
	local d=$1 pat=$2 p; shift 2
	MOKKA_LIBEXECDIR=$B "$B/mokka-supervisor" --host-root "$ROOT" --health-addr 127.0.0.1:0 "$@" \
		> "$T/refused.log" 2>&1 &
	p=$!
	if wait_for 10 grep -q -- "$pat" "$T/refused.log"; then pass "$d"
	else fail "$d"; sed 's/^/# /' "$T/refused.log" | tail -5; fi
	kill -TERM $p 2>/dev/null; wait $p 2>/dev/null
}
refused_start "IMEXDownload without a pinned sha256 is refused" 'no pinned sha256' \
	--config "$GB" --feature-gates IMEXDownload=true
refused_start "an unknown feature gate is refused" 'unrecognized feature gate' \
	--config "$GB" --feature-gates NoSuchGate=true
finish
