#!/bin/sh
# Build, once, the older-glibc root tests/integration/nvml_glibc217.sh runs
# the real nvidia-smi in over the mock NVML: Debian 11 (bullseye, glibc
# 2.31, older than the 2.33/2.34 symbol versions a build on Debian 12 would
# otherwise pull in), debootstrap --variant=minbase, from the Debian mirror
# the machine's apt sources already use.  Debian 10 (buster) has left that
# archive (its dists/ answer 404), so bullseye is the oldest suite served.
#
# Cached at $MOKKA_OLD_ROOT (default /var/cache/mokka/bullseye-root) and
# left alone when it is already there; built beside it and renamed, so an
# interrupted run leaves no half root.  Needs root and debootstrap.
set -eu
suite=${MOKKA_OLD_SUITE:-bullseye}
root=${MOKKA_OLD_ROOT:-/var/cache/mokka/$suite-root}

[ -x "$root/usr/bin/ldd" ] && { echo "$root"; exit 0; }
command -v debootstrap >/dev/null 2>&1 || { echo "make-old-root: debootstrap missing" >&2; exit 1; }

# The mirror of the apt sources (deb822 URIs: or one-line deb entries),
# skipping the security archive; empty lets debootstrap pick its default.
mirror=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
	awk '/^URIs:/ { print $2 } /^deb / { print ($2 ~ /^\[/ ? $3 : $2) }' |
	grep -v -- '-security' | grep '/debian/*$' | head -1) || mirror=

tmp=$root.tmp.$$
rm -rf "$tmp"
mkdir -p "$(dirname "$root")"
trap 'rm -rf "$tmp"' EXIT INT TERM
# shellcheck disable=SC2086 # an empty mirror is no argument
if ! debootstrap --variant=minbase "$suite" "$tmp" $mirror > "$tmp.log" 2>&1; then
	tail -20 "$tmp.log" >&2
	rm -f "$tmp.log"
	echo "make-old-root: debootstrap $suite failed (is the suite still served by ${mirror:-the default mirror}?)" >&2
	exit 1
fi
rm -f "$tmp.log"
mv "$tmp" "$root"
trap - EXIT INT TERM
echo "$root"
