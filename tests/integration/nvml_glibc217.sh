#!/bin/sh
# The mock libnvidia-ml.so.1 loads wherever NVIDIA's does: glibc 2.17 and
# later.  1) No shim (libnvidia-ml, libmockfs, the IB shims) references a
# GLIBC_ symbol version newer than 2.17 (objdump -T).  2) The real
# nvidia-smi 535, staged by mokka-worker-gpudriver over the mock, runs inside
# a Debian 11 root (glibc 2.31, older than the 2.33/2.34 versions a Debian
# 12 build would otherwise need; scripts/make-old-root.sh builds it once,
# from scripts/install-deps.sh): -L, -q -x and --query-gpu print what they
# print on the build host.  The root is used in a private mount namespace
# with the staged driver root bind-mounted at its /mnt and a private /proc;
# nothing is written into the cached root.
#
# Skips (77) only when not root (namespaces, chroot) or without the unpacked
# nvidia-smi (scripts/fetch-consumers.sh).  A missing old root is a FAIL:
# install-deps.sh makes it.
set -u
B=${MOKKA_BUILDDIR:?}
CONSUMERS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
SMI_SRC=${MOKKA_NVIDIA_SMI:-$CONSUMERS/nvidia-smi/usr/bin/nvidia-smi}
OLD=${MOKKA_OLD_ROOT:-/var/cache/mokka/bullseye-root}
PROFILE=${MOKKA_SRCDIR:?}/etc/profiles/${MOKKA_GLIBC_PROFILE:-h100}.yaml
LIBDIR=${MOKKA_PKGLIBDIR:-$B/.libs}
R=/var/lib/nvml-mock
rc=0
fail() { echo "FAIL: $*"; rc=1; }
pass() { echo "ok: $*"; }

# 1) symbol versions.
newest() { # newest SO: the highest GLIBC_x.y[.z] version SO references
	objdump -T "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' |
		sort -t. -k1,1n -k2,2n -k3,3n -u | tail -1
}
for so in libnvidia-ml.so.1 libmockfs.so libibmocksys.so libibmockumad.so libibmockverbs.so; do
	[ -f "$LIBDIR/$so" ] || { fail "$so not built in $LIBDIR"; continue; }
	v=$(newest "$LIBDIR/$so")
	case $v in
	2.[0-9] | 2.[0-9].* | 2.1[0-7] | 2.1[0-7].*) pass "$so needs GLIBC_$v at most" ;;
	*) fail "$so references GLIBC_$v (> 2.17):"
	   objdump -T "$LIBDIR/$so" | grep -E 'GLIBC_2\.(1[89]|[2-9][0-9])' | sed 's/^/#   /' ;;
	esac
done

# 2) nvidia-smi in the older root.
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (mount namespace, chroot)"; exit 77; }
[ -x "$SMI_SRC" ] || { echo "SKIP: no nvidia-smi at $SMI_SRC (run scripts/fetch-consumers.sh)"; exit 77; }
[ -x "$OLD/usr/bin/ldd" ] && [ -d "$OLD/mnt" ] && [ -d "$OLD/proc" ] ||
	{ fail "no older-glibc root at $OLD (scripts/make-old-root.sh, run by install-deps.sh)"; exit 1; }
[ -x "$B/mokka-worker-gpudriver" ] || { fail "$B/mokka-worker-gpudriver not built"; exit 1; }
old_glibc=$(chroot "$OLD" /usr/bin/ldd --version | sed -n '1s/.* //p')
case $old_glibc in
2.1[7-9] | 2.2[0-9] | 2.3[0-3]) pass "old root has glibc $old_glibc" ;;
*) fail "old root's glibc is '$old_glibc', want 2.17..2.33"; exit 1 ;;
esac

TMP=$(mktemp -d /tmp/mokka-glibc217-XXXXXX) || exit 1
mkdir -p "$TMP/host"
trap 'rm -rf "$TMP"' EXIT INT TERM
if ! MOKKA_PKGLIBDIR=$LIBDIR MOKKA_NVIDIA_SMI=$SMI_SRC "$B/mokka-worker-gpudriver" \
	--host-root "$TMP/host" --config "$PROFILE" --log-level warn stage > "$TMP/stage.log" 2>&1; then
	fail "stage $PROFILE"; sed 's/^/#   /' "$TMP/stage.log"; exit 1
fi
SMI=$R/driver/usr/bin/nvidia-smi
Q=index,name,uuid,serial,pci.bus_id,memory.total,power.limit,clocks.max.sm,pcie.link.gen.max,compute_cap

# The same three views on the host (reference) and in the old root.
for args in "L -L" "qx -q -x" "csv --query-gpu=$Q --format=csv,noheader"; do
	name=${args%% *} a=${args#* }
	# shellcheck disable=SC2086 # $a is the argument list
	env -i PATH=/usr/bin:/bin timeout 60 "$TMP/host$SMI" $a > "$TMP/$name.host" 2>&1
	echo $? > "$TMP/$name.host.rc"
done
# In a private mount namespace: the staged driver root at the old root's
# /mnt, a fresh /proc (nvidia-smi reads /proc/self/maps and cpuinfo).
unshare -m --propagation private sh -c '
	set -e
	old=$1 drv=$2 tmp=$3 smi=$4
	shift 4
	mount --bind "$drv" "$old/mnt"
	mount -t proc proc "$old/proc"
	for args in "$@"; do
		name=${args%% *} a=${args#* }
		set +e
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin timeout 60 chroot "$old" "$smi" $a > "$tmp/$name.old" 2>&1
		echo $? > "$tmp/$name.old.rc"
		set -e
	done
' sh "$OLD" "$TMP/host$R" "$TMP" /mnt/driver/usr/bin/nvidia-smi \
	"L -L" "qx -q -x" "csv --query-gpu=$Q --format=csv,noheader" \
	> "$TMP/ns.log" 2>&1 || { fail "mount namespace: $(cat "$TMP/ns.log")"; exit 1; }

for name in L qx csv; do
	r=$(cat "$TMP/$name.old.rc" 2>/dev/null)
	[ "$r" = 0 ] || { fail "nvidia-smi ($name) in the glibc $old_glibc root exited ${r:-?}"; sed 's/^/#   /' "$TMP/$name.old" | head -5; }
done
if grep -q '^GPU 0: ' "$TMP/L.old" && cmp -s "$TMP/L.host" "$TMP/L.old"; then
	pass "-L in the old root lists what it lists on the host ($(grep -c '^GPU ' "$TMP/L.old") GPUs)"
else
	fail "-L differs:"; diff "$TMP/L.host" "$TMP/L.old" | head -10 | sed 's/^/#   /'
fi
if [ -s "$TMP/csv.old" ] && cmp -s "$TMP/csv.host" "$TMP/csv.old"; then
	pass "--query-gpu in the old root matches the host"
else
	fail "--query-gpu differs:"; diff "$TMP/csv.host" "$TMP/csv.old" | head -10 | sed 's/^/#   /'
fi
# -q -x: the same elements, N/A in the same places (readings may move).
shape() {
	python3 - "$1" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
def walk(e, path):
    kids = list(e)
    if not kids:
        t = (e.text or "").strip()
        if path.endswith("/timestamp"):
            t = "-"
        print(path, "N/A" if t == "N/A" else "value")
    for k in kids:
        walk(k, path + "/" + k.tag)
walk(ET.parse(sys.argv[1]).getroot(), "")
PYEOF
}
if shape "$TMP/qx.host" > "$TMP/qx.host.shape" 2>&1 && shape "$TMP/qx.old" > "$TMP/qx.old.shape" 2>&1 &&
   cmp -s "$TMP/qx.host.shape" "$TMP/qx.old.shape"; then
	pass "-q -x in the old root: $(wc -l < "$TMP/qx.old.shape") elements, as on the host"
else
	fail "-q -x differs:"; diff "$TMP/qx.host.shape" "$TMP/qx.old.shape" | head -10 | sed 's/^/#   /'
fi
[ "$rc" = 0 ] && echo "PASS: glibc 2.17 symbol versions; nvidia-smi over the mock in a glibc $old_glibc root"
exit "$rc"
