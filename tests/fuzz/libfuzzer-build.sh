# Sourced by tests/fuzz/run-libfuzzer.sh (`make fuzz`) and
# scripts/fuzz-campaign.sh: one way to build the fuzz targets under
# libFuzzer + ASan + UBSan, so both run the same binaries.
#
# libfuzzer_build WHO CC SRCDIR BUILDDIR TARGET...: configures BUILDDIR
# from SRCDIR with CC when its flags changed, builds the targets, and sets
# the sanitizer options; messages start with WHO.  Returns 1 on failure.
libfuzzer_build() {
	local who=$1 cc=$2 src=$3 fb=$4 cflags stamp
	shift 4
	cflags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined"
	cflags="$cflags -fno-sanitize-recover=undefined -DMOKKA_LIBFUZZER"
	stamp="$cc $cflags"
	mkdir -p "$fb" || return 1
	if [ ! -f "$fb/Makefile" ] || [ "$(cat "$fb/.fuzz-config" 2>/dev/null)" != "$stamp" ]; then
		echo "$who: configuring $fb with $cc"
		(cd "$fb" && "$src/configure" -q CC="$cc" CFLAGS="$cflags") ||
			{ echo "$who: configure failed in $fb" >&2; return 1; }
		echo "$stamp" > "$fb/.fuzz-config"
	fi
	echo "$who: building $* in $fb"
	if ! make -C "$fb" -j"${FUZZ_BUILD_JOBS:-2}" LDFLAGS=-fsanitize=fuzzer "$@" > "$fb/build.log" 2>&1; then
		tail -40 "$fb/build.log"
		echo "$who: build failed (log: $fb/build.log)" >&2
		return 1
	fi
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:verify_asan_link_order=0}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
	export MOKKA_SRCDIR=$src
}
