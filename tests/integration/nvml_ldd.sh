#!/bin/bash
# libnvidia-ml.so is dlopen'ed by foreign programs (nvidia-smi, pynvml,
# Slurm, hwloc), so it may depend on glibc alone, must carry the soname
# they load, and must export every NVML name those consumers look up
# (shims/nvml/nvml_exports.map, built from shared/data/*_symbols.txt).
. "$(dirname "$0")/../lib.sh"
so=$B/.libs/libnvidia-ml.so
map=$S/shims/nvml/nvml_exports.map

glibc_only "$so"
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
data=$S/../shared/data
for list in nvidia-smi-535-nvml-symbols pynvml_symbols slurm_nvml_symbols hwloc_nvml_symbols; do
	[ -f "$data/$list.txt" ] || continue
	missing=$(grep -E '^nvml' "$data/$list.txt" | grep -vxF "$exported")
	[ -z "$missing" ] || fail "$list: not exported: $(echo $missing)"
done

# Nothing but NVML names leaks out of the hidden-visibility build.
extra=$(printf '%s\n' "$exported" | grep -v '^nvml')
[ -z "$extra" ] || fail "non-NVML exports: $(echo $extra)"

[ "$FAILS" -eq 0 ] && pass "glibc only, $n NVML names exported"
finish
