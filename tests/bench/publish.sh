#!/bin/bash
# Benchmark (long form of tests/integration/publish_consistency.sh): 100
# passes flipping between two generations while a reader checks that every
# read of config.yaml, the device nodes and the procfs GPU directories is
# whole and of one generation; prints the passes' time and the reader's
# figures (reads, bad reads, reads of each generation).
# Run as root from the build tree: bash $srcdir/tests/bench/publish.sh
: "${MOKKA_BUILDDIR:=$(pwd)}"
: "${MOKKA_SRCDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
export MOKKA_BUILDDIR MOKKA_SRCDIR
PASSES=${PASSES:-100} exec bash "$MOKKA_SRCDIR/tests/integration/publish_consistency.sh"
