#!/bin/sh
# Run one unit binary with TAP on stdout (for automake's tap driver).
# Fuzz drivers (fuzz_*) print TAP themselves.
case "$(basename "$1")" in
fuzz_*) exec "$@" ;;
*) exec "$@" --tap=- --jobs=1 ;;
esac
