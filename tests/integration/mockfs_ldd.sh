#!/bin/bash
# libmockfs.so is preloaded into foreign programs, so it may depend on
# glibc alone (no libdl, no sanitizer runtimes) and export only its
# interposers (-fvisibility=hidden).
. "$(dirname "$0")/../lib.sh"
so=$B/.libs/libmockfs.so

glibc_only "$so"

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

finish
