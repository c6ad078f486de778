#!/bin/bash
# The IB shims are preloaded into foreign programs: each may depend on
# glibc alone (no libdl, libibverbs, libibumad, libnl or sanitizer
# runtimes), exports exactly its interposers, and changes nothing while
# MOCK_IB is unset or off.
. "$(dirname "$0")/../lib.sh"
. "$S/tests/ib_shims_lib.sh"

exports() { nm -D --defined-only "$1" | awk '{ print $3 }' | sort | tr '\n' ' '; }
sorted() { printf '%s\n' "$@" | sort | tr '\n' ' '; }

want_sys="__fxstatat __fxstatat64 __lxstat __lxstat64 __open64_2 __open_2
__openat64_2 __openat_2 __readlink_chk __readlinkat_chk __realpath_chk
__xstat __xstat64 access chdir eaccess euidaccess faccessat fopen fopen64
fstatat fstatat64 getxattr lgetxattr listxattr llistxattr lstat lstat64 open
open64 openat openat64 opendir readlink readlinkat realpath scandir scandir64
stat stat64 statx"
want_umad="__open64_2 __open_2 __openat64_2 __openat_2 __read_chk close dup
dup2 dup3 ioctl open open64 openat openat64 read write"
want_verbs="_ibv_query_gid_ex ibv_close_device ibv_open_device
ibv_query_device ibv_query_gid ibv_query_gid_type ibv_query_pkey
ibv_query_port bind close connect dup dup2 dup3 getpeername getsockname
getsockopt recvfrom recvmsg sendmsg sendto setsockopt socket"

for pair in "$IB_SYS:$want_sys" "$IB_UMAD:$want_umad" "$IB_VERBS:$want_verbs"; do
	so=${pair%%:*}
	glibc_only "$so"
	got=$(exports "$so")
	want=$(sorted ${pair#*:})
	check "$(basename "$so") exports exactly its interposers" [ "$got" = "$want" ]
	[ "$got" = "$want" ] || note "got [$got] want [$want]"
	# No libibverbs/libibumad/libnl symbol may be needed at run time.
	undef=$(nm -D --undefined-only "$so" | awk '{ print $2 }' | grep -Ev '@GLIBC_|^_ITM_|^__gmon_start__$|^__cxa_finalize' || true)
	check "$(basename "$so") needs only glibc symbols ($undef)" [ -z "$undef" ]
done

# Loaded into plain programs with MOCK_IB unset or off, nothing changes.
for mode in unset off bogus; do
	if [ $mode = unset ]; then envp=(env -u MOCK_IB); else envp=(env MOCK_IB=$mode); fi
	out=$("${envp[@]}" LD_PRELOAD="$IB_PRELOAD" cat /proc/self/comm 2>&1)
	check "MOCK_IB $mode: preloaded cat prints its name" [ "$out" = cat ]
	want=$(ls /sys/class 2>&1)
	out=$("${envp[@]}" LD_PRELOAD="$IB_PRELOAD" ls /sys/class 2>&1)
	check "MOCK_IB $mode: /sys/class as without the shims" [ "$out" = "$want" ]
	want=$(ls /sys/class/infiniband 2>&1; echo "rc=$?")
	out=$("${envp[@]}" LD_PRELOAD="$IB_PRELOAD" ls /sys/class/infiniband 2>&1; echo "rc=$?")
	check "MOCK_IB $mode: /sys/class/infiniband as without the shims" [ "$out" = "$want" ]
	want=$(ip -o link show lo 2>&1 | cut -d' ' -f1-3)
	out=$("${envp[@]}" LD_PRELOAD="$IB_PRELOAD" ip -o link show lo 2>&1 | cut -d' ' -f1-3)
	check "MOCK_IB $mode: netlink (ip link) still works" [ "$out" = "$want" ]
done

finish
