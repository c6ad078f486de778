#!/bin/sh
# Regenerate the build system (configure, Makefile.in, build-aux/).
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf -fi
# automake installs test-driver itself but not the TAP driver we use.
for d in /usr/share/automake-*; do
	[ -f "$d/tap-driver.sh" ] && cp "$d/tap-driver.sh" build-aux/ && break
done
test -f build-aux/tap-driver.sh
