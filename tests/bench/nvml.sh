#!/bin/bash
# Benchmark (a report, never a pass/fail test) of the mock NVML library:
#  - wall time of real nvidia-smi 535 `-L` and `-q` over the mock that
#    mokka-worker-gpudriver stages, each as a ratio to the same command over
#    a floor library that only enumerates (tests/bench/nvml_floor.c, built
#    here), measured in the same run, interleaved, median of RUNS; beside
#    it the mock parsing config.yaml itself (a copy of the driver root
#    without the compiled nvml.image), to show what the image saves;
#  - median cost of the hot getters (tests/bench/nvml_hot.c: 100k calls
#    each of GetTemperature, GetPowerUsage, GetMemoryInfo_v2, GetClockInfo,
#    GetUtilizationRates on GPU 0, median over batches of 1000).
# PROFILE (default h100) picks the profile; the floor enumerates as many
# GPUs.  MOKKA_NVML_HAND_STAGE=1 stages the library by hand while the
# gpudriver worker does not exist yet.
. "$(dirname "$0")/../lib.sh"
RUNS=${RUNS:-7}
CALLS=${CALLS:-100000}
CC=${CC:-cc}
PROFILE=${PROFILE:-h100}
CONS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
SMI=$CONS/nvidia-smi/usr/bin/nvidia-smi
LIB=$B/.libs/libnvidia-ml.so
GPUDRIVER=$B/mokka-worker-gpudriver
P=$S/etc/profiles/$PROFILE.yaml
BD=$S/tests/bench

[ -x "$SMI" ] || die "$SMI missing (run scripts/fetch-consumers.sh)"
[ -f "$P" ] || die "no profile $P"
DRV=$ROOT$R/driver
if [ -x "$GPUDRIVER" ]; then
	"$GPUDRIVER" --host-root "$ROOT" --config "$P" stage > "$T/stage.log" 2>&1 ||
		die "gpudriver stage failed: $(tail -5 "$T/stage.log")"
elif [ "${MOKKA_NVML_HAND_STAGE:-}" = 1 ] && [ -f "$LIB" ]; then
	mkdir -p "$DRV/usr/lib64" "$DRV/config"
	cp "$LIB" "$DRV/usr/lib64/libnvidia-ml.so.1"
	cp "$P" "$DRV/config/config.yaml"
else
	die "$GPUDRIVER not built"
fi
MOCK=$DRV/usr/lib64
[ -e "$MOCK/libnvidia-ml.so.1" ] || die "no $MOCK/libnvidia-ml.so.1 staged"

cp -a "$DRV" "$T/parsed" && rm -f "$T/parsed/config/nvml.image" || die "cannot copy $DRV"
PARSED=$T/parsed/usr/lib64
mkdir -p "$T/floor"
"$CC" -O2 -shared -fPIC -o "$T/floor/libnvidia-ml.so.1" "$BD/nvml_floor.c" || die "cannot build the floor library"
"$CC" -O2 -o "$T/nvml_hot" "$BD/nvml_hot.c" -ldl || die "cannot build nvml_hot"

ngpu=$(env -u MOCK_NVML_CONFIG LD_LIBRARY_PATH="$MOCK" "$SMI" -L 2>/dev/null | grep -c '^GPU ')
[ "$ngpu" -gt 0 ] || die "nvidia-smi -L lists no GPU over the mock: $(env -u MOCK_NVML_CONFIG LD_LIBRARY_PATH="$MOCK" "$SMI" -L 2>&1 | head -3)"
export NVML_FLOOR_GPUS=$ngpu

median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
# timed LIBDIR ARGS...: wall time in microseconds of one nvidia-smi run
timed() {
	local dir=$1 a b; shift
	a=$(date +%s%N)
	env -u MOCK_NVML_CONFIG LD_LIBRARY_PATH="$dir" "$SMI" "$@" > /dev/null 2>&1
	b=$(date +%s%N)
	echo $(( (b - a) / 1000 ))
}

echo "bench: profile $PROFILE, $ngpu GPUs, $(cat "$CONS/nvidia-smi/.mokka-unpacked" 2>/dev/null || echo nvidia-smi), $RUNS runs each, $(nproc) CPUs"
for args in "-L" "-q"; do
	: > "$T/mock.t"; : > "$T/floor.t"; : > "$T/parsed.t"
	timed "$MOCK" $args > /dev/null; timed "$T/floor" $args > /dev/null	# warm the page cache
	timed "$PARSED" $args > /dev/null
	for _ in $(seq "$RUNS"); do
		timed "$MOCK" $args >> "$T/mock.t"
		timed "$T/floor" $args >> "$T/floor.t"
		timed "$PARSED" $args >> "$T/parsed.t"
	done
	m=$(median < "$T/mock.t"); f=$(median < "$T/floor.t"); p=$(median < "$T/parsed.t")
	awk -v a="$args" -v m="$m" -v f="$f" -v p="$p" 'BEGIN{ if (f <= 0) f = 1
		printf "bench: nvidia-smi %s: mock %.2f ms, floor %.2f ms, ratio %.2f x (parsing config.yaml: %.2f ms, %.2f x)\n", a, m/1000, f/1000, m/f, p/1000, p/f }'
done

echo "bench: hot getters on GPU 0 ($CALLS calls each, median of batches of 1000):"
env -u MOCK_NVML_CONFIG "$T/nvml_hot" "$MOCK/libnvidia-ml.so.1" "$CALLS" > "$T/hot.out" 2>&1 || {
	sed 's/^/# /' "$T/hot.out"; die "nvml_hot failed"; }
awk '{ printf "bench:   %-32s %s %s %s\n", $1, $2, $3, $5 }' "$T/hot.out"
grep -q 'rc=[1-9]' "$T/hot.out" && note "a hot getter returned an error (rc above); its timing is of the error path"
finish
