#!/bin/bash
# Benchmark (a report, never a pass/fail test): instructions, counted by
# valgrind's callgrind (deterministic, unlike wall time on a shared
# machine), of real nvidia-smi 535 over the mock NVML library that
# mokka-worker-gpudriver stages and over the enumerate-only floor library
# (tests/bench/nvml_floor.c), as ratios:
#  - the library's init alone (nvmlInit*, inclusive) as a ratio to the
#    floor's whole `-L` (issue 16's goal: init within 2x the floor
#    library's instructions), from the compiled image gpudriver stages
#    (R/driver/config/nvml.image) and, for comparison, parsing config.yaml
#    (the image moved aside); and whole `-L` runs;
#  - whole `-q` runs, and the same without nvidia-smi's own memset: its
#    per-GPU process-list buffers (3 x 500 x 4128 B and 1000 x 4136 B,
#    constants in nvidia-smi, sized by no NVML answer) come from the heap
#    once glibc's dynamic mmap threshold has risen past them, so calloc
#    clears them; real hardware pays the same, and callgrind counts each
#    byte of `rep stosb` as an instruction, which inflates the share.
# PROFILE (default h100) picks the profile.  Skips (exit 0, a note) when
# valgrind is not installed.
. "$(dirname "$0")/../lib.sh"
CC=${CC:-cc}
PROFILE=${PROFILE:-h100}
CONS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
SMI=$CONS/nvidia-smi/usr/bin/nvidia-smi
GPUDRIVER=$B/mokka-worker-gpudriver
P=$S/etc/profiles/$PROFILE.yaml

command -v valgrind > /dev/null || { note "valgrind not installed: no instruction counts"; finish; }
[ -x "$SMI" ] || die "$SMI missing (run scripts/fetch-consumers.sh)"
[ -x "$GPUDRIVER" ] || die "$GPUDRIVER not built"
"$GPUDRIVER" --host-root "$ROOT" --config "$P" stage > "$T/stage.log" 2>&1 ||
	die "gpudriver stage failed: $(tail -5 "$T/stage.log")"
MOCK=$ROOT$R/driver/usr/lib64
mkdir -p "$T/floor"
"$CC" -O2 -shared -fPIC -o "$T/floor/libnvidia-ml.so.1" "$S/tests/bench/nvml_floor.c" ||
	die "cannot build the floor library"
ngpu=$(env -u MOCK_NVML_CONFIG LD_LIBRARY_PATH="$MOCK" "$SMI" -L 2>/dev/null | grep -c '^GPU ')
[ "$ngpu" -gt 0 ] || die "nvidia-smi -L lists no GPU over the mock"
export NVML_FLOOR_GPUS=$ngpu

# ir LIBDIR OUT [CALLGRIND OPTIONS] -- ARGS: instructions callgrind collected
ir() {
	local dir=$1 out=$2; shift 2
	local opts=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	env -u MOCK_NVML_CONFIG LD_LIBRARY_PATH="$dir" valgrind --tool=callgrind \
		--callgrind-out-file="$out" "${opts[@]}" "$SMI" "$@" > /dev/null 2> "$out.log"
	awk '/Collected :/ { print $NF }' "$out.log"
}
# memset_ir OUT: instructions callgrind counted inside memset (self)
memset_ir() {
	callgrind_annotate --threshold=100 "$1" 2>/dev/null |
		awk '/memset/ && $1 ~ /^[0-9,]+$/ { gsub(",", "", $1); s += $1 } END { print s + 0 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

mi=$(ir "$MOCK" "$T/cg.mi" --toggle-collect='nvmlInit*' -- -L)
IMG=$ROOT$R/driver/config/nvml.image
[ -f "$IMG" ] || die "gpudriver staged no $IMG"
mv "$IMG" "$T/nvml.image"
mp=$(ir "$MOCK" "$T/cg.mp" --toggle-collect='nvmlInit*' -- -L)
mv "$T/nvml.image" "$IMG"
fi=$(ir "$T/floor" "$T/cg.fi" --toggle-collect='nvmlInit*' -- -L)
ml=$(ir "$MOCK" "$T/cg.ml" -- -L)
fl=$(ir "$T/floor" "$T/cg.fl" -- -L)
mq=$(ir "$MOCK" "$T/cg.mq" -- -q)
fq=$(ir "$T/floor" "$T/cg.fq" -- -q)
ms=$(memset_ir "$T/cg.mq")
echo "bench: instructions (callgrind), profile $PROFILE, $ngpu GPUs:"
echo "bench:   library init (nvmlInit*): mock $mi (floor $fi: it reads nothing), $(ratio "$mi" "$fl") x the floor's whole -L (goal <= 2)"
echo "bench:   library init parsing config.yaml (no image): $mp, $(ratio "$mp" "$fl") x; the image saves $(ratio "$mp" "$mi") x"
echo "bench:   nvidia-smi -L: mock $ml, floor $fl, ratio $(ratio "$ml" "$fl") x"
echo "bench:   nvidia-smi -q: mock $mq, floor $fq, ratio $(ratio "$mq" "$fq") x, $(ratio "$mq" "$fl") x the -L floor"
echo "bench:   nvidia-smi -q without its process-list memset ($ms): $((mq - ms)), $(ratio "$((mq - ms))" "$fl") x the -L floor"
finish
