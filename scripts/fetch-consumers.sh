#!/bin/sh
# Fetch the real NVML consumers Mokka is tested against, unpacked and NOT
# installed (installing them would pull in the real libnvidia-ml1 and put a
# real nvidia-smi on PATH): nvidia-smi (non-free), python3-pynvml and
# slurm-wlm-nvml-plugin (contrib; the plugin cannot be installed with apt
# at all, see CONSUMERS.md section 3).
#
# Each package is downloaded with `apt-get download` into
# $MOKKA_CONSUMERS (default /var/cache/mokka-consumers) and extracted with
# `dpkg-deb -x` into $MOKKA_CONSUMERS/<package>/.  Idempotent: a package
# whose directory already holds its files is left alone.  Prints one
# extracted directory per line.  Debian ships the nvidia-smi binary as
# usr/lib/nvidia/current/nvidia-smi (usr/bin/nvidia-smi is an alternatives
# link made at install time), so the extracted tree gets the same
# usr/bin/nvidia-smi link: the binary is $MOKKA_CONSUMERS/nvidia-smi/usr/bin/nvidia-smi.
#
# Needs contrib and non-free in the apt sources (scripts/install-deps.sh
# enables them) and a fresh `apt-get update`.
set -eu

dest=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
packages="nvidia-smi python3-pynvml slurm-wlm-nvml-plugin"

die() {
	echo "fetch-consumers: $*" >&2
	exit 1
}

command -v apt-get >/dev/null 2>&1 || die "apt-get not found: this script needs Debian's apt"
command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb not found: this script needs dpkg"
mkdir -p "$dest/debs" || die "cannot create $dest/debs"
# apt-get download drops privileges to _apt when it can write the target.
if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
	chown _apt "$dest/debs" 2>/dev/null || :
fi

for pkg in $packages; do
	out=$dest/$pkg
	if [ -f "$out/.mokka-unpacked" ]; then
		echo "$out"
		continue
	fi
	# apt-get download writes into the current directory.
	(cd "$dest/debs" && rm -f "${pkg}"_*.deb && apt-get download -q "$pkg" >&2) ||
		die "$pkg: apt-get download failed (contrib/non-free enabled? apt-get update run?)"
	deb=$(find "$dest/debs" -maxdepth 1 -name "${pkg}_*.deb" | head -n 1)
	[ -n "$deb" ] || die "$pkg: apt-get download left no ${pkg}_*.deb in $dest/debs"
	rm -rf "$out.tmp"
	mkdir -p "$out.tmp"
	dpkg-deb -x "$deb" "$out.tmp" || die "$pkg: dpkg-deb -x $deb failed"
	if [ "$pkg" = nvidia-smi ] && [ ! -e "$out.tmp/usr/bin/nvidia-smi" ]; then
		[ -f "$out.tmp/usr/lib/nvidia/current/nvidia-smi" ] ||
			die "$pkg: $deb holds no usr/lib/nvidia/current/nvidia-smi"
		mkdir -p "$out.tmp/usr/bin"
		ln -s ../lib/nvidia/current/nvidia-smi "$out.tmp/usr/bin/nvidia-smi"
	fi
	basename "$deb" > "$out.tmp/.mokka-unpacked"
	rm -rf "$out"
	mv "$out.tmp" "$out"
	echo "$out"
done
