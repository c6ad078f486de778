#!/bin/sh
# Real lspci (pciutils) against the tree the pcibus worker stages, for every
# shipped profile.  Three ways in, all of which must show exactly the mock
# tree (design decision 11: it replaces the host's PCI view):
#   shim    LD_PRELOAD=libmockfs.so MOCK_PCI_ROOT=R lspci
#   sysfs   lspci -A linux-sysfs -O sysfs.path=R/sys/bus/pci   (no shim)
#   ns      bind mounts of R/sys/bus/pci and R/sys/devices in a private
#           mount namespace (what CDI does for Go consumers)
# plus /proc/bus/pci through the shim (lspci -A linux-proc).
# Each profile GPU must appear with its pci.ids name and [10de:dddd], its
# LnkCap speed/width from the profile's pcie block, and the nvidia driver.
# The worker and the profiles are part of the product: missing = FAIL.
set -u
B=${MOKKA_BUILDDIR:?}
S=${MOKKA_SRCDIR:?}
SHIM=$B/.libs/libmockfs.so
WORKER=$B/mokka-worker-pcibus
rc=0
fail() { echo "FAIL: $*"; rc=1; }

[ -f "$SHIM" ] || { echo "FAIL: $SHIM not built"; exit 1; }
[ -x "$WORKER" ] || { echo "FAIL: $WORKER not built"; exit 1; }
command -v lspci >/dev/null || { echo "FAIL: lspci (pciutils) missing"; exit 1; }

IDS=
for f in /usr/share/misc/pci.ids /usr/share/hwdata/pci.ids /usr/share/pci.ids; do
	[ -r "$f" ] && { IDS=$f; break; }
done

TMP=$(mktemp -d /tmp/mokka-lspci-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

# Mount namespaces need CAP_SYS_ADMIN; without it that one way is skipped.
NS=yes
mkdir -p "$TMP/probe"
unshare -m --propagation private sh -c "mount --bind '$TMP/probe' '$TMP/probe'" \
	2>/dev/null || { NS=no; echo "note: no private mount namespace here; ns checks skipped"; }

# Profile -> "dev <bdf> <device_id>" lines and one "defaults <device_id>
# <max_link_gen> <max_link_width> <num_devices>" line.  Only the keys this
# test needs; a device's own non-zero device_id beats device_defaults'.
parse_profile() {
	awk '
	function val(s) {
		sub(/^[^:]*:[ \t]*/, "", s); sub(/[ \t]+#.*$/, "", s)
		gsub(/["\047 \t\r]/, "", s); return s
	}
	function flush() {
		if (bus != "") print "dev", tolower(bus), did
		bus = ""; did = ""
	}
	/^[ \t]*(#|$)/ { next }
	/^[^ \t-]/ { flush(); top = $0; sub(/:.*/, "", top); lind = -1; next }
	top == "system" && /^[ \t]+num_devices:/ { num = val($0) }
	top == "device_defaults" && /^[ \t]+device_id:/ { ddid = val($0) }
	top == "device_defaults" && /^[ \t]+max_link_gen:/ { gen = val($0) }
	top == "device_defaults" && /^[ \t]+max_link_width:/ { width = val($0) }
	top == "devices" {
		if (match($0, /^[ \t]*- /)) {
			if (lind < 0) lind = RLENGTH
			if (RLENGTH == lind) flush()
		}
		line = $0; sub(/^[ \t]*(- )?/, "", line)
		if (line ~ /^bus_id:/) bus = val(line)
		if (line ~ /^device_id:/) did = val(line)
	}
	END { flush(); print "defaults", ddid, gen, width, num }
	' "$1"
}

gen_speed() {
	case $1 in
	1) echo 2.5GT/s ;; 2) echo 5GT/s ;; 3) echo 8GT/s ;;
	4) echo 16GT/s ;; 5) echo 32GT/s ;; 6) echo 64GT/s ;; *) echo "?" ;;
	esac
}

# The name pci.ids gives 10de:<dev>; empty when unknown (lspci may then
# take one from udev's hwdb, so only the ids are checked).
ids_name() {
	[ -n "$IDS" ] || return 0
	awk -v d="$1" '
		/^10de / { v = 1; next }
		v && /^[0-9a-f][0-9a-f][0-9a-f][0-9a-f] / { exit }
		v && index($0, "\t" d "  ") == 1 { print substr($0, 8); exit }
	' "$IDS"
}

# run_lspci WAY R ARGS...: lspci -D ARGS seen through one way in.
run_lspci() {
	way=$1 r=$2
	shift 2
	case $way in
	shim)
		LD_PRELOAD=$SHIM MOCK_PCI_ROOT=$r lspci -D "$@" ;;
	sysfs)
		env -u LD_PRELOAD lspci -A linux-sysfs -O "sysfs.path=$r/sys/bus/pci" -D "$@" ;;
	ns)
		unshare -m --propagation private sh -c '
			r=$1; shift
			mount --bind "$r/sys/bus/pci" /sys/bus/pci &&
			mount --bind "$r/sys/devices" /sys/devices &&
			exec lspci -D "$@"' sh "$r" "$@" ;;
	proc)
		LD_PRELOAD=$SHIM MOCK_PCI_ROOT=$r lspci -A linux-proc -D "$@" ;;
	esac 2>"$TMP/lspci.err"
}

# Block of `lspci -D -vv`/-k output that belongs to one BDF.
block() {
	awk -v b="$1" '$1 == b { on = 1; print; next } /^[0-9a-f]/ { on = 0 } on' "$2"
}

check_way() {
	way=$1 r=$2 name=$3 mock=$4 gpus=$5 speed=$6 width=$7

	run_lspci "$way" "$r" -nn >"$TMP/nn" ||
		{ fail "$name/$way: lspci -nn failed: $(cat "$TMP/lspci.err")"; return; }
	awk '/^[0-9a-f]/ { print $1 }' "$TMP/nn" | sort >"$TMP/seen"
	if [ "$way" = proc ]; then
		# /proc/bus/pci has no domains: domain-0 mock entries only
		grep '^0000:' "$mock" >"$TMP/want"
	else
		cp "$mock" "$TMP/want"
	fi
	if ! cmp -s "$TMP/seen" "$TMP/want"; then
		fail "$name/$way: lspci lists other devices than the mock tree:"
		diff "$TMP/want" "$TMP/seen" | sed 's/^/    /'
	fi
	run_lspci "$way" "$r" -vv >"$TMP/vv" || fail "$name/$way: lspci -vv failed"
	run_lspci "$way" "$r" -k >"$TMP/k" || fail "$name/$way: lspci -k failed"

	while read -r bdf dev label; do
		[ "$way" = proc ] && case $bdf in 0000:*) ;; *) continue ;; esac
		line=$(grep "^$bdf " "$TMP/nn")
		want="3D controller [0302]: NVIDIA Corporation ${label:-*} [10de:$dev]"
		if [ -n "$label" ]; then
			case $line in
			*"3D controller [0302]: NVIDIA Corporation $label [10de:$dev]"*) ;;
			*) fail "$name/$way: $bdf: want '$want', got '$line'" ;;
			esac
		else
			case $line in
			*"3D controller [0302]: NVIDIA Corporation "*"[10de:$dev]"*) ;;
			*) fail "$name/$way: $bdf: want '$want', got '$line'" ;;
			esac
		fi
		lnk=$(block "$bdf" "$TMP/vv" | grep 'LnkCap:')
		case $lnk in
		*"Speed $speed, Width x$width"*) ;;
		*) fail "$name/$way: $bdf: LnkCap '$lnk', want Speed $speed, Width x$width" ;;
		esac
		if [ "$way" = proc ]; then
			# pciutils 3.9's proc backend misparses the driver column
			# after 64-bit BARs (the host's real file too: "Kernel
			# driver in use: 0"), so read the column itself (as strings:
			# awk would take "9e00" and "0009" for the same number).
			bus=${bdf#*:} slot=${bdf##*:}
			key=${bus%%:*}$(printf '%02x' $((0x${slot%.*} * 8 + ${slot#*.})))
			drv=$(awk -F'\t' -v k="$key" '$1 "" == k "" { print $NF }' \
				"$r/proc/bus/pci/devices")
			[ "$drv" = nvidia ] ||
				fail "$name/$way: $bdf: /proc/bus/pci/devices driver '$drv'"
			continue
		fi
		block "$bdf" "$TMP/k" | grep -q 'Kernel driver in use: nvidia$' ||
			fail "$name/$way: $bdf: no 'Kernel driver in use: nvidia'"
	done <"$gpus"
}

nprof=0
for profile in "$S"/etc/profiles/*.yaml; do
	[ -f "$profile" ] || continue
	nprof=$((nprof + 1))
	name=$(basename "$profile" .yaml)
	host=$TMP/$name
	R=$host/var/lib/nvml-mock
	mkdir -p "$host"
	if ! "$WORKER" --host-root "$host" --config "$profile" stage >"$TMP/worker.log" 2>&1; then
		fail "$name: worker stage failed:"
		sed 's/^/    /' "$TMP/worker.log"
		continue
	fi

	parse_profile "$profile" >"$TMP/parsed"
	set -- $(awk '$1 == "defaults" { print $2, $3, $4, $5 }' "$TMP/parsed")
	ddid=${1:-} gen=${2:-} width=${3:-} num=${4:-}
	[ -n "$gen" ] && [ -n "$width" ] || { fail "$name: no pcie max_link_gen/width in profile"; continue; }
	speed=$(gen_speed "$gen")
	: >"$TMP/gpus"
	awk '$1 == "dev" { print $2, $3 }' "$TMP/parsed" | while read -r bdf did; do
		case $did in ''|0|0x0|0x00000000) did=$ddid ;; esac
		dev=$(printf '%08x' "$did" | cut -c1-4)
		printf '%s %s %s\n' "$bdf" "$dev" "$(ids_name "$dev")"
	done >"$TMP/gpus"
	if [ -n "$num" ] && [ "$num" -gt 0 ] 2>/dev/null; then
		head -n "$num" "$TMP/gpus" >"$TMP/gpus.cap" && mv "$TMP/gpus.cap" "$TMP/gpus"
	fi
	[ -s "$TMP/gpus" ] || { fail "$name: no GPUs with bus_id in profile"; continue; }
	echo "$name: $(wc -l <"$TMP/gpus") GPUs, Gen$gen x$width"

	ls "$R/sys/bus/pci/devices" 2>/dev/null | sort >"$TMP/mock"
	[ -s "$TMP/mock" ] || { fail "$name: worker rendered no R/sys/bus/pci/devices"; continue; }

	for way in shim sysfs proc; do
		check_way "$way" "$R" "$name" "$TMP/mock" "$TMP/gpus" "$speed" "$width"
	done
	[ "$NS" = yes ] && check_way ns "$R" "$name" "$TMP/mock" "$TMP/gpus" "$speed" "$width"
	rm -rf "$host"
done

[ "$nprof" -gt 0 ] || fail "no profiles in $S/etc/profiles"
exit $rc
