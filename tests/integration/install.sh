#!/bin/bash
# `make install DESTDIR=...` installs what a node needs and nothing is left
# by `make uninstall`; the installed unit passes `systemd-analyze verify`
# (its ExecStart and its man: Documentation resolved in the installed
# tree); the man pages render without groff warnings and document exactly
# the options each program's --help lists; every program answers --version
# with "NAME VERSION" and --help with "Usage: NAME ...".
. "$(dirname "$0")/../lib.sh"

for t in systemd-analyze groff man unshare; do
	command -v "$t" >/dev/null || die "$t missing (scripts/install-deps.sh installs it)"
done

# The configured directories, as make expands them.
mkvar() { # (make may first regenerate the Makefile and say so: last line)
	# Under `make check` the parent's MAKEFLAGS carry -w (Entering/Leaving
	# directory lines): run a clean make.
	printf 'print-var: ; @echo $(%s)\n' "$1" |
		env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		make -s --no-print-directory -C "$B" -f Makefile -f - print-var |
		grep -v '^make\[' | tail -n 1
}
for v in prefix bindir libexecdir pkglibdir pkgdatadir mandir sysconfdir systemdunitdir PACKAGE_VERSION; do
	val=$(mkvar "$v") && [ -n "$val" ] || die "cannot read $v from $B/Makefile"
	printf -v "$v" '%s' "$val"
done
note "prefix $prefix, version $PACKAGE_VERSION"

D=$T/destdir
make -s -C "$B" install DESTDIR="$D" > "$T/install.log" 2>&1 || die "make install failed: $(tail -20 "$T/install.log")"

# ---- what is installed --------------------------------------------------
want=(
	"$bindir/mokka-supervisor" "$bindir/mokka-ctl"
	"$pkglibdir/libnvidia-ml.so.1" "$pkglibdir/libnvidia-ml.so" "$pkglibdir/libmockfs.so"
	"$systemdunitdir/mokka-supervisor.service"
	"$mandir/man8/mokka-supervisor.8" "$mandir/man8/mokka-worker.8"
	"$mandir/man8/mokka-ctl.8" "$mandir/man5/mokka-profile.5"
)
# One worker per simulator the supervisor knows (its --help lists them
# only by name in the man page, so ask the binary: an unknown name is
# refused, every real one has a worker next to it in the build tree).
for w in "$B"/mokka-worker-*; do
	want+=("$libexecdir/mokka/$(basename "$w")")
done
for p in "$S"/etc/profiles/*.yaml; do
	want+=("$pkgdatadir/profiles/$(basename "$p")")
	cmp -s "$p" "$D$pkgdatadir/profiles/$(basename "$p")" || fail "profile $(basename "$p") differs from the source"
done
for f in "${want[@]}"; do
	[ -e "$D$f" ] || fail "not installed: $f"
done
# The library as a driver install has it: a real file behind the soname link.
[ -L "$D$pkglibdir/libnvidia-ml.so.1" ] && [ -f "$(readlink -f "$D$pkglibdir/libnvidia-ml.so.1")" ] ||
	fail "libnvidia-ml.so.1 is not a link to the installed library"
check "installed $(( ${#want[@]} )) expected files" [ "$FAILS" -eq 0 ]

# ---- the unit -------------------------------------------------------------
U=$D$systemdunitdir/mokka-supervisor.service
grep -n '@[a-zA-Z_]*@' "$U" && fail "unsubstituted @var@ left in the unit"
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$U")
check "ExecStart is the installed supervisor ($exec_start)" [ "$exec_start" = "$bindir/mokka-supervisor" ]
grep -q '^Documentation=.*man:mokka-supervisor(8)' "$U" || fail "unit has no Documentation=man:mokka-supervisor(8)"
# Verify the installed tree as if it were installed for real: in a private
# mount namespace the DESTDIR copy of the prefix is overlaid (read-only)
# on the real prefix, so ExecStart exists and `man` finds the pages the
# Documentation= check looks up (MANPATH: only ours, the check is for them).
if unshare -m --propagation private sh -c '
	mount -t overlay mokka-install -o "lowerdir=$1$2:$2" "$2" &&
	MANPATH=$3 exec systemd-analyze verify "$4"' sh "$D" "$prefix" "$mandir" \
	"$systemdunitdir/mokka-supervisor.service" > "$T/verify.log" 2>&1; then
	check "systemd-analyze verify (installed tree, man pages found) is silent" [ ! -s "$T/verify.log" ]
else
	fail "systemd-analyze verify: $(cat "$T/verify.log")"
fi

# ---- man pages -----------------------------------------------------------
for m in "$D$mandir"/man[58]/mokka-*; do
	n=$(basename "$m")
	w=$(groff -ww -z -man "$m" 2>&1)
	[ -z "$w" ] || fail "$n: groff warnings: $w"
	w=$(MANWIDTH=80 man -l --warnings "$m" 2>&1 >/dev/null)
	[ -z "$w" ] || fail "$n: man -l warnings: $w"
	MANWIDTH=80 man -l "$m" 2>/dev/null | grep -q "Mokka $PACKAGE_VERSION" || fail "$n: footer does not say Mokka $PACKAGE_VERSION"
	grep -n '@[a-zA-Z_]*@' "$m" && fail "$n: unsubstituted @var@"
done
check "man pages render without warnings" true

# Long options: what --help prints vs what the page documents.
opts_help() { "$@" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u; }
# The page's options outside EXAMPLES (which may show other programs').
opts_man() {
	awk '/^\.SH/ { ex = ($2 == "EXAMPLES") } !ex' "$1" |
		grep -o -- '\\-\\-[a-z][a-z0-9\\-]*' | sed 's/\\//g' | sort -u
}
same_options() { # same_options PAGE PROGRAM...
	local page=$1; shift
	comm -3 <(opts_help "$@") <(opts_man "$page") > "$T/opts.diff"
	if [ -s "$T/opts.diff" ]; then
		fail "$(basename "$page") vs $(basename "$1") --help (left: only in --help, right: only in the page):"
		sed 's/^/#   /' "$T/opts.diff"
	else
		pass "$(basename "$page") documents exactly the options of $(basename "$1") --help"
	fi
}
same_options "$D$mandir/man8/mokka-supervisor.8" "$D$bindir/mokka-supervisor"
same_options "$D$mandir/man8/mokka-worker.8" "$D$libexecdir/mokka/mokka-worker-pcibus"
[ -e "$D$bindir/mokka-ctl" ] && [ -e "$D$mandir/man8/mokka-ctl.8" ] &&
	same_options "$D$mandir/man8/mokka-ctl.8" "$D$bindir/mokka-ctl"
# Every worker has the one CLI the page describes.
for w in "$D$libexecdir"/mokka/mokka-worker-*; do
	cmp -s <(opts_help "$w") <(opts_help "$D$libexecdir/mokka/mokka-worker-pcibus") ||
		fail "$(basename "$w") --help lists other options than mokka-worker-pcibus"
done

# ---- --version and --help of every program --------------------------------
for p in "$D$bindir"/* "$D$libexecdir"/mokka/*; do
	n=$(basename "$p")
	# Not a command of ours: staged as the host's nvidia-imex, it passes
	# every argument on to the real binary.
	[ "$n" = nvidia-imex-shim ] && continue
	v=$(timeout 5 "$p" --version 2>&1); rc=$?
	[ $rc -eq 0 ] && [ "$v" = "$n $PACKAGE_VERSION" ] ||
		fail "$n --version: want '$n $PACKAGE_VERSION' and status 0, got '$v' ($rc)"
	h=$(timeout 5 "$p" --help 2>/dev/null); rc=$?
	[ $rc -eq 0 ] && [[ "$h" == "Usage: $n "* ]] && [[ "$h" == *--help* ]] ||
		fail "$n --help: want status 0 and 'Usage: $n ...' listing --help, got ($rc): $(head -1 <<<"$h")"
done
check "every program: --version is 'NAME $PACKAGE_VERSION', --help is 'Usage: NAME ...'" [ "$FAILS" -eq 0 ]

# ---- the installed tree runs -----------------------------------------------
# The installed supervisor, pointed at the installed workers and shims
# (DESTDIR moved them), stages the built-in node into a temp root.
PORT=$(free_port)
MOKKA_LIBEXECDIR=$D$libexecdir/mokka MOKKA_PKGLIBDIR=$D$pkglibdir \
	unshare -m --propagation private "$D$bindir/mokka-supervisor" --host-root "$ROOT" \
	--health-addr "127.0.0.1:$PORT" --simulators pcibus,gpudriver,nvlink > "$T/sup.log" 2>&1 &
SUP_PID=$!
wait_for 30 is_code /healthz 200 && pass "installed supervisor: /healthz 200" ||
	fail "installed supervisor: /healthz $(http /healthz): $(cat "$T/body")"
[ -c "$ROOT$R/driver/dev/nvidia0" ] && [ -f "$ROOT$R/driver/usr/lib64/libnvidia-ml.so.1" ] ||
	fail "installed tree did not stage the driver root"
stop_supervisor

# ---- uninstall --------------------------------------------------------------
make -s -C "$B" uninstall DESTDIR="$D" > "$T/uninstall.log" 2>&1 || fail "make uninstall failed"
left=$(find "$D" ! -type d)
check "make uninstall leaves no files${left:+ (left: $left)}" [ -z "$left" ]
finish
