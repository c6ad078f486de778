#!/bin/bash
# No write escapes the host root (issue 19), for the PCI bus and the
# writers beside it: links to a directory (or file) outside the root are
# planted at each place they write or bind from; each is refused with an
# error naming the link, and a full listing of the outside directory does
# not change.
#   P  mokka-pcifs: the binding file R/driver/config/pci-drivers (written
#      and removed at exit), its mount point R/run/pcifs
#   V  mokka-pcifs's reads: a staged file linked outside is not served
#   L  mokka-pcifs's model: a staged id file linked outside is not read
#   X  mokka-ctl exec: a source it bind-mounts (R/ib)
#   G  the supervisor's NRI staging lock's directory /run/nvml-mock
#   K  pcibus keeping a foreign NFD features file aside (its read)
#   B  the binding file as pcibus's NFD step reads it (GPUs held)
#   N  pcibus's teardown putting a foreign NFD features file back
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (mounts)"; exit 77; }
[ -e /dev/fuse ] || { echo "FAIL: /dev/fuse missing"; exit 1; }
CTL=$B/mokka-ctl
OUT=$T/outside
mkdir -p "$OUT"
echo "not the simulator's" > "$OUT/witness"

listing() { find "$OUT" -printf '%P %y %m %s %T@ %l\n' | sort; }
plant() { # plant HOSTPATH [file]: HOSTPATH becomes a link to a fresh dir (file) outside
	local d
	d=$OUT/$(echo "$1" | tr / _)
	rm -rf "${ROOT:?}$1"
	mkdir -p "$(dirname "$ROOT$1")"
	if [ "${2:-}" = file ]; then echo keep > "$d"; else mkdir -p "$d" && echo keep > "$d/keep"; fi
	ln -s "$d" "$ROOT$1" || die "cannot plant $1"
}
named() { grep -qF "$ROOT$2 is a symbolic link" "$1"; }
same_outside() {
	listing > "$T/out-after"
	if diff -u "$T/out-before" "$T/out-after" > "$T/out.diff"; then
		pass "$1: nothing outside the root changed"
	else
		fail "$1: the outside directory changed"; sed 's/^/# /' "$T/out.diff" | head -20
	fi
}

cp "$S/etc/profiles/h100.yaml" "$T/profile.yaml"
for w in pcibus gpudriver; do
	MOKKA_PKGLIBDIR=$B/.libs "$B/mokka-worker-$w" --host-root "$ROOT" --config "$T/profile.yaml" \
		--log-level warn stage > /dev/null 2>&1 || die "$w stage"
done
mkdir -p "$ROOT$R/run"

# ---- P: mokka-pcifs ----
pcifs() { # pcifs LOG SCRIPT: mokka-pcifs in a private mount namespace, SCRIPT beside it
	unshare -m --propagation private bash -c '
		"$1/mokka-pcifs" --host-root "$2" --mock-root "$3" > "$4" 2>&1 & p=$!
		eval "$5"
		kill -TERM $p 2>/dev/null; wait $p' _ "$B" "$ROOT" "$R" "$1" "$2"
}
plant "$R/run/pcifs"
listing > "$T/out-before"
pcifs "$T/p1.log" 'for i in $(seq 50); do kill -0 $p 2>/dev/null || break; sleep 0.1; done
	grep -q " fuse" /proc/self/mounts && grep " fuse" /proc/self/mounts >&2'
check "P: mokka-pcifs refuses the mount point R/run/pcifs (exits)" grep -q "mount point refused" "$T/p1.log"
check "P: the log names $R/run/pcifs" named "$T/p1.log" "$R/run/pcifs"
check "P: the link at the mount point is left" test -L "$ROOT$R/run/pcifs"
same_outside "P $R/run/pcifs"
rm -f "$ROOT$R/run/pcifs"

STATE=$R/driver/config/pci-drivers
plant "$STATE" file
listing > "$T/out-before"
VIEW=$ROOT$R/run/pcifs
pcifs "$T/p2.log" 'for i in $(seq 100); do [ -e "$2$3/run/pcifs/sys/bus/pci/devices" ] && break; sleep 0.1; done
	echo 0000:1a:00.0 > "$2$3/run/pcifs/sys/bus/pci/drivers/nvidia/unbind"'
check "P: the log names the binding file $STATE" named "$T/p2.log" "$STATE"
check "P: the link at the binding file is left (not replaced, not removed)" test -L "$ROOT$STATE"
same_outside "P $STATE"
rm -f "$ROOT$STATE"
# Without links it serves and writes the binding file (the same run).
pcifs "$T/p3.log" 'for i in $(seq 100); do [ -e "$2$3/run/pcifs/sys/bus/pci/devices" ] && break; sleep 0.1; done
	echo 0000:1a:00.0 > "$2$3/run/pcifs/sys/bus/pci/drivers/nvidia/unbind"
	grep -qx "0000:1a:00.0 -" "$2$3/driver/config/pci-drivers" && touch "$2/ok"'
check "P: without links the binding file is written" test -e "$ROOT/ok"
check "P: and removed at exit" test ! -e "$ROOT$STATE"
rm -f "$ROOT/ok"

# ---- V: what mokka-pcifs reads and serves to every user ----
# A link in the staged tree to a file outside the root (a ConnectX PF's
# config, which the view rewrites with its SR-IOV capability, and
# R/proc/bus/pci/devices) is resolved inside the root, never out of it:
# the view must not serve the outside file's bytes.  (A leaf link the view
# serves as a link is the reader's to follow, with the reader's rights.)
echo "SECRET-OUTSIDE" > "$OUT/secret"
PF=$(grep -l 0x15b3 "$ROOT$R"/sys/bus/pci/devices/*/vendor | head -1)
DEV=$(readlink -f "$(dirname "$PF")")
case $DEV in "$ROOT$R"/sys/devices/*) ;; *) die "no staged ConnectX PF ($PF -> $DEV)" ;; esac
BDF=$(basename "$DEV")
mv "$DEV/config" "$T/config.saved" && ln -s "$OUT/secret" "$DEV/config"
mv "$ROOT$R/proc/bus/pci/devices" "$T/devices.saved" && ln -s "$OUT/secret" "$ROOT$R/proc/bus/pci/devices"
listing > "$T/out-before"
pcifs "$T/v.log" 'for i in $(seq 100); do [ -e "$2$3/run/pcifs/sys/bus/pci/devices" ] && break; sleep 0.1; done
	cat "$2$3/run/pcifs/sys/bus/pci/devices/'"$BDF"'/config" > "$2/v-config" 2>&1
	cat "$2$3/run/pcifs/proc/bus/pci/devices" > "$2/v-devices" 2>&1
	test -e "$2$3/run/pcifs/sys/bus/pci/devices/0000:1a:00.0/vendor" && touch "$2/v-ok"'
check "V: the view served (sanity)" test -e "$ROOT/v-ok"
check "V: a ConnectX PF's config linked outside: the outside bytes are not served" \
	sh -c "! grep -q SECRET-OUTSIDE '$ROOT/v-config'"
check "V: proc/bus/pci/devices linked outside: the outside bytes are not served" \
	sh -c "! grep -q SECRET-OUTSIDE '$ROOT/v-devices'"
same_outside "V"
rm -f "$DEV/config" "$ROOT$R/proc/bus/pci/devices" "$ROOT"/v-*
mv "$T/config.saved" "$DEV/config" && mv "$T/devices.saved" "$ROOT$R/proc/bus/pci/devices"

# ---- L: what mokka-pcifs builds its model from ----
# A GPU's staged vendor and class linked to files outside the root that
# say "ConnectX network function": read outside, the model would give the
# GPU a ConnectX PF's VF slots (sriov_totalvfs in the view).  Resolved
# inside the root, the links lead nowhere and the GPU gets none.
GPU=$(readlink -f "$ROOT$R/sys/bus/pci/devices/0000:1a:00.0")
case $GPU in "$ROOT$R"/sys/devices/*) ;; *) die "no staged GPU 0000:1a:00.0 ($GPU)" ;; esac
# The same plant with the targets inside the root first: the model reads
# the ids through the links (the check below can fail).
mkdir -p "$ROOT/ids" && echo 0x15b3 > "$ROOT/ids/vendor" && echo 0x020000 > "$ROOT/ids/class"
for a in vendor class; do mv "$GPU/$a" "$T/$a.saved" && ln -s /ids/$a "$GPU/$a"; done
pcifs "$T/l0.log" 'for i in $(seq 100); do [ -e "$2$3/run/pcifs/sys/bus/pci/devices" ] && break; sleep 0.1; done
	test -e "$2$3/run/pcifs/sys/bus/pci/devices/0000:1a:00.0/sriov_totalvfs" && touch "$2/l-in"'
check "L: ids linked inside the root are read (the GPU looks like a ConnectX PF)" test -e "$ROOT/l-in"
rm -rf "$ROOT/ids"
echo 0x15b3 > "$OUT/vendor" && echo 0x020000 > "$OUT/class"
for a in vendor class; do ln -sfn "$OUT/$a" "$GPU/$a"; done
listing > "$T/out-before"
pcifs "$T/l.log" 'for i in $(seq 100); do [ -e "$2$3/run/pcifs/sys/bus/pci/devices" ] && break; sleep 0.1; done
	test -e "$2$3/run/pcifs/sys/bus/pci/devices/0000:1a:00.0/sriov_totalvfs" && touch "$2/l-out"
	test -e "$2$3/run/pcifs/sys/bus/pci/devices/0000:1a:00.0/driver" && touch "$2/l-ok"'
check "L: the view served (sanity)" test -e "$ROOT/l-ok"
check "L: ids linked outside the root are not read (no VF slots on the GPU)" test ! -e "$ROOT/l-out"
same_outside "L"
for a in vendor class; do rm -f "$GPU/$a" && mv "$T/$a.saved" "$GPU/$a"; done
rm -f "$ROOT"/l-*

# ---- X: mokka-ctl exec's sources ----
plant "$R/ib"
mkdir -p "$OUT/_var_lib_nvml-mock_ib/dev/infiniband" && echo x > "$OUT/_var_lib_nvml-mock_ib/dev/infiniband/umad0"
listing > "$T/out-before"
env -u MOCK_NVML_OVERRIDES -u MOCK_NVML_CONFIG "$CTL" --host-root "$ROOT" exec -- \
	sh -c 'test -e /dev/infiniband/umad0 && echo LEAKED' > "$T/x.log" 2>&1 &&
	fail "X: mokka-ctl exec ran with a link at $R/ib"
check "X: the command never saw the outside content" sh -c "! grep -q LEAKED '$T/x.log'"
check "X: the error names $R/ib" named "$T/x.log" "$R/ib"
same_outside "X $R/ib"
rm -f "$ROOT$R/ib"
env -u MOCK_NVML_OVERRIDES -u MOCK_NVML_CONFIG "$CTL" --host-root "$ROOT" exec -- \
	sh -c 'test -e /dev/nvidia0' > "$T/x2.log" 2>&1
check "X: without links it runs the command with the node's /dev/nvidia0" [ $? = 0 ]

# ---- G: the NRI staging lock ----
rm -rf "$ROOT"
mkdir -p "$ROOT"
plant /run/nvml-mock
listing > "$T/out-before"
start_supervisor --simulators gpudriver,cri --container-runtime none --nri-plugin --config "$T/profile.yaml"
check "G: the log names /run/nvml-mock" wait_for 30 named "$T/sup.log" /run/nvml-mock
stop_supervisor
check "G: the link is left" test -L "$ROOT/run/nvml-mock"
same_outside "G /run/nvml-mock"

# ---- K: pcibus keeps a foreign NFD features file aside (the read) ----
# The features directory a link to an outside directory holding a file of
# that name: read through the link, a root-only file outside (mode 0600)
# would be copied into R/state, and put back inside the root at teardown.
rm -rf "$ROOT"
FEAT=/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features
plant "$(dirname "$FEAT")"
echo "secret.outside=1" > "$OUT/$(dirname "$FEAT" | tr / _)/$(basename "$FEAT")"
chmod 0600 "$OUT/$(dirname "$FEAT" | tr / _)/$(basename "$FEAT")"
listing > "$T/out-before"
start_supervisor --simulators pcibus
check "K: the log names the features directory" wait_for 30 named "$T/sup.log" "$(dirname "$FEAT")"
check "K: the outside file was not copied into the root" \
	sh -c "! grep -rqs secret.outside '$ROOT$R'"
stop_supervisor
check "K: the link is left" test -L "$ROOT$(dirname "$FEAT")"
check "K: nothing of the outside file inside the root after teardown" \
	sh -c "! grep -rqs secret.outside '$ROOT'"
same_outside "K $(dirname "$FEAT")"

# ---- B: the binding file R/driver/config/pci-drivers, read ----
# Linked to an outside file that says GPU 0000:1a:00.0 is on vfio-pci: read
# through the link, the NFD count would say 7 GPUs.  Refused, named, and
# read as no binding file: all 8 held.
rm -rf "$ROOT"
plant "$STATE" file
echo "0000:1a:00.0 vfio-pci" > "$OUT/$(echo "$STATE" | tr / _)"
listing > "$T/out-before"
start_supervisor --simulators pcibus
check "B: the NFD count is not read through the link (8 GPUs held)" \
	wait_for 30 grep -qx 'mokka.gpu.count=8' "$ROOT$FEAT"
check "B: the log names the binding file" named "$T/sup.log" "$STATE"
stop_supervisor
check "B: the link is left" test -L "$ROOT$STATE"
same_outside "B $STATE"

# ---- N: teardown puts a foreign NFD features file back (renameat) ----
rm -rf "$ROOT"
mkdir -p "$(dirname "$ROOT$FEAT")"
echo someone.else=1 > "$ROOT$FEAT"
start_supervisor --simulators pcibus
wait_for 30 is_code /readyz 200 || die "N: not ready: $(cat "$T/body")"
wait_for 10 test -e "$ROOT$R/state/pcibus.nfd-foreign" || fail "N: the foreign file was not kept"
plant "$FEAT" file
listing > "$T/out-before"
stop_supervisor
check "N: the log names $FEAT" named "$T/sup.log" "$FEAT"
check "N: the link is left (not replaced by the put-back)" test -L "$ROOT$FEAT"
same_outside "N $FEAT"

[ "$FAILS" -eq 0 ] || exit 1
