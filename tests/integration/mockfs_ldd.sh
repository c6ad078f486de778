#!/bin/sh
# libmockfs.so is preloaded into foreign programs, so it may depend on
# glibc alone (no libdl, no sanitizer runtimes) and export only its
# interposers (-fvisibility=hidden).
set -u
so="${MOKKA_BUILDDIR:?}/.libs/libmockfs.so"
rc=0
fail() { echo "FAIL: $*"; rc=1; }

[ -f "$so" ] || { echo "FAIL: $so not built"; exit 1; }

deps=$(ldd "$so") || { echo "FAIL: ldd $so"; exit 1; }
echo "$deps"
# Every line must be the vDSO, libc or the dynamic loader.
bad=$(printf '%s\n' "$deps" |
	grep -Ev '^[[:space:]]*(linux-vdso\.so\.1|linux-gate\.so\.1|libc\.so\.6|/[^ ]*/ld-linux[^ ]*\.so\.[0-9]+)( |$)') &&
	fail "unexpected dependencies: $bad"
printf '%s\n' "$deps" | grep -q 'libc\.so\.6' || fail "no libc dependency?"

# DT_NEEDED says the same without ldd's help.
needed=$(objdump -p "$so" | awk '$1 == "NEEDED" { print $2 }')
[ "$needed" = "libc.so.6" ] || fail "NEEDED is '$needed', want libc.so.6 only"

# Exactly the interposers are exported.
want="__fxstatat __fxstatat64 __lxstat __lxstat64 __open64_2 __open_2
__openat64_2 __openat_2 __readlink_chk __readlinkat_chk __realpath_chk
__xstat __xstat64 access eaccess euidaccess faccessat fopen fopen64 fstatat fstatat64 lstat
lstat64 open open64 openat openat64 opendir readlink readlinkat realpath
scandir scandir64 stat stat64 statx"
got=$(nm -D --defined-only "$so" | awk '{ print $3 }' | sort | tr '\n' ' ')
want=$(printf '%s\n' $want | sort | tr '\n' ' ')
[ "$got" = "$want" ] || fail "exports differ: got [$got] want [$want]"

# It loads into a plain program and changes nothing without MOCK_PCI_ROOT.
out=$(env -u MOCK_PCI_ROOT LD_PRELOAD="$so" cat /proc/self/comm 2>&1)
[ "$out" = cat ] || fail "preloaded cat printed '$out'"

exit $rc
