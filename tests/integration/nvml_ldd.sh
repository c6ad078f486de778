#!/bin/sh
# libnvidia-ml.so is dlopen'ed by foreign programs (nvidia-smi, pynvml,
# Slurm, hwloc), so it may depend on glibc alone, must carry the soname
# they load, and must export every NVML name those consumers look up
# (shims/nvml/nvml_exports.map, built from shared/data/*_symbols.txt).
set -u
so="${MOKKA_BUILDDIR:?}/.libs/libnvidia-ml.so"
map="${MOKKA_SRCDIR:?}/shims/nvml/nvml_exports.map"
rc=0
fail() { echo "FAIL: $*"; rc=1; }

[ -f "$so" ] || { echo "FAIL: $so not built"; exit 1; }

deps=$(ldd "$so") || { echo "FAIL: ldd $so"; exit 1; }
echo "$deps"
bad=$(printf '%s\n' "$deps" |
	grep -Ev '^[[:space:]]*(linux-vdso\.so\.1|linux-gate\.so\.1|libc\.so\.6|/[^ ]*/ld-linux[^ ]*\.so\.[0-9]+)( |$)') &&
	fail "unexpected dependencies: $bad"

needed=$(objdump -p "$so" | awk '$1 == "NEEDED" { print $2 }')
[ "$needed" = "libc.so.6" ] || fail "NEEDED is '$needed', want libc.so.6 only"
soname=$(objdump -p "$so" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = "libnvidia-ml.so.1" ] || fail "SONAME is '$soname'"

# No sanitizer or coverage runtime crept in.
nm -D --undefined-only "$so" | grep -E '__(asan|ubsan|tsan|gcov)' &&
	fail "instrumented build"

exported=$(nm -D --defined-only "$so" | awk '{ print $3 }' | sort -u)
want=$(sed -e 's,/\*.*\*/,,g' "$map" | tr -s ' \t;' '\n' | grep -E '^nvml[A-Za-z0-9_]+$' | sort -u)
n=$(printf '%s\n' "$want" | wc -l)
[ "$n" -ge 300 ] || fail "only $n names in $map"
missing=$(printf '%s\n' "$want" | grep -vxF "$exported")
[ -z "$missing" ] || fail "not exported: $(echo $missing)"

# The four consumer lists themselves, when shared/ is beside the tree.
data="${MOKKA_SRCDIR}/../shared/data"
for list in nvidia-smi-535-nvml-symbols pynvml_symbols slurm_nvml_symbols hwloc_nvml_symbols; do
	[ -f "$data/$list.txt" ] || continue
	missing=$(grep -E '^nvml' "$data/$list.txt" | grep -vxF "$exported")
	[ -z "$missing" ] || fail "$list: not exported: $(echo $missing)"
done

# Nothing but NVML names leaks out of the hidden-visibility build.
extra=$(printf '%s\n' "$exported" | grep -v '^nvml')
[ -z "$extra" ] || fail "non-NVML exports: $(echo $extra)"

[ $rc -eq 0 ] && echo "ok: glibc only, $n NVML names exported"
exit $rc
