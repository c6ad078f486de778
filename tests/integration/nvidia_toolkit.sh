#!/bin/bash
# NVIDIA Container Toolkit, the real one (nvidia-ctk, nvidia-container-
# runtime, nvidia-cdi-hook at the release pinned in tests/go/versions.env,
# built by scripts/install-deps.sh), against the node the supervisor runs
# (gpudriver, pcibus, cri; 4 GPUs) in a temp host root:
#  1. cri installs the real toolkit from $MOKKA_CONTAINER_TOOLKIT_DIR: the
#     binaries, the CDI-mode config.toml and the /usr/bin links;
#  2. `nvidia-ctk cdi generate` over (a copy of) the staged driver root names
#     the same device nodes per device, the same control nodes and the same
#     driver files as Mokka's own nvidia.yaml (a placeholder libcuda.so.<ver>
#     is added to the copy: nvidia-ctk refuses a driver root without one);
#  3. end to end, in a private mount namespace (overlays on /etc, /run,
#     /var/lib, /opt; the root's spec directory and toolkit config bound in):
#     podman with --runtime <the installed nvidia-container-runtime>, and a
#     private containerd with `ctr run --runtime io.containerd.runc.v2
#     --runc-binary <it>`, start a busybox container with
#     NVIDIA_VISIBLE_DEVICES=0,2 / all / none: the runtime (CDI mode) injects
#     the devices from nvidia.yaml, and the real nvidia-smi inside lists
#     exactly GPUs 0 and 2 / all 4 / none, with exactly their /dev/nvidia*.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nvidia_stack_lib.sh"

[ "$(id -u)" -eq 0 ] || die "needs root"
for t in podman runc conmon containerd ctr busybox unshare /usr/bin/python3; do
	command -v "$t" >/dev/null || die "$t missing (scripts/install-deps.sh)"
done
[ -x "${MOKKA_NVIDIA_SMI:-}" ] || die "no nvidia-smi (scripts/fetch-consumers.sh)"
grep -qw overlay /proc/filesystems || die "no overlayfs"
CTK=$(nv_need nvidia-ctk)
nv_need nvidia-container-runtime > /dev/null
nv_need nvidia-cdi-hook > /dev/null

NGPU=4
# The host root: /var/run -> /run, a static busybox, a fake containerd on
# its PATH and a fake systemctl (cri's restart is chrooted into the root:
# the real containerd is never touched), a minimal containerd config, and
# the C library the real nvidia-ctk needs when cri runs it chrooted there
# (`nvidia-ctk runtime configure` writes cri's drop-in).
mkdir -p "$ROOT/var" "$ROOT/bin" "$ROOT/usr/bin" "$ROOT/etc/containerd"
ln -s /run "$ROOT/var/run"
cp "$(command -v busybox)" "$ROOT/bin/busybox"
for a in sh cat mkdir dirname; do ln -s busybox "$ROOT/bin/$a"; done
printf '#!/bin/sh\necho "$*" >> /systemctl.calls\n' > "$ROOT/usr/bin/systemctl"
printf '#!/bin/sh\nexit 0\n' > "$ROOT/usr/bin/containerd"
chmod 755 "$ROOT/usr/bin/systemctl" "$ROOT/usr/bin/containerd"
echo 'version = 2' > "$ROOT/etc/containerd/config.toml"
for lib in $(ldd "$CTK" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
	cp --parents -L "$lib" "$ROOT/"
done
cgroups_before=$(ls -d /sys/fs/cgroup/*/libpod_parent /sys/fs/cgroup/*/default 2>/dev/null)
export GPU_COUNT=$NGPU MOKKA_CONTAINER_TOOLKIT_DIR=$NVBIN
start_supervisor --simulators gpudriver,pcibus,cri
wait_for 30 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"
SPEC=$ROOT/run/cdi/nvidia.yaml
[ -f "$SPEC" ] || die "no $SPEC"

# ---- 1. the toolkit cri installed
TKDIR=$ROOT/usr/local/nvml-mock/toolkit
RT=$TKDIR/nvidia-container-runtime
for b in nvidia-container-runtime nvidia-ctk nvidia-cdi-hook; do
	check "cri installed the real $b" cmp -s "$NVBIN/$b" "$TKDIR/$b"
	check "/usr/bin/$b links to it" [ "$(readlink "$ROOT/usr/bin/$b")" = /usr/local/nvml-mock/toolkit/$b ]
done
check "its config.toml is in CDI mode" grep -qx 'mode = "cdi"' "$TKDIR/config.toml"
check "the real nvidia-ctk configured containerd: nvidia handler -> /usr/bin/nvidia-container-runtime" \
	grep -q 'BinaryName = "/usr/bin/nvidia-container-runtime"' "$ROOT/etc/containerd/conf.d/50-mokka.toml"
"$RT" --version > "$T/rtver" 2>&1
check "the installed nvidia-container-runtime runs" grep -q "NVIDIA Container Runtime" "$T/rtver"

# ---- 2. nvidia-ctk cdi generate vs nvidia.yaml
DR=$T/driver-copy
cp -a "$ROOT$R/driver" "$DR"
VER=$(sed -n 's/^ *driver_version: *"\(.*\)"/\1/p' "$ROOT$R/driver/config/config.yaml" | head -1)
: > "$DR/usr/lib64/libcuda.so.$VER"
env -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES LD_LIBRARY_PATH="$DR/usr/lib64" \
	"$CTK" cdi generate --driver-root="$DR" --dev-root="$DR" --library-search-path="$DR/usr/lib64" \
	--nvidia-cdi-hook-path=/usr/bin/nvidia-cdi-hook --output="$T/ctk.yaml" > "$T/ctk.log" 2>&1 ||
	{ sed 's/^/#   /' "$T/ctk.log" | tail -5; fail "nvidia-ctk cdi generate failed"; }
cat > "$T/diff.py" <<'PYEOF'
import os, sys, yaml
ctk, mok, root, dr = yaml.safe_load(open(sys.argv[1])), yaml.safe_load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
def nodes(edits):
    return sorted(n["path"] for n in (edits or {}).get("deviceNodes") or [])
def devs(spec):   # "none": Mokka's for NVIDIA_VISIBLE_DEVICES=none (the runtime's JIT specs have it)
    return {d["name"]: nodes(d.get("containerEdits")) for d in spec["devices"] if d["name"] != "none"}
def files(spec, base):
    out = set()
    for m in (spec.get("containerEdits") or {}).get("mounts") or []:
        h = m["hostPath"] if m["hostPath"].startswith(base) else root + m["hostPath"]
        if os.path.isfile(h):
            out.add(os.path.basename(os.path.realpath(h)))
    return out
bad = 0
def cmp(what, a, b):
    global bad
    print("%s %s: nvidia-ctk %s, Mokka %s" % ("ok:" if a == b else "FAIL:", what, a, b))
    bad += a != b
cmp("kind", ctk["kind"], mok["kind"])
cmp("control nodes", nodes(ctk["containerEdits"]), nodes(mok["containerEdits"]))
cmp("device names", sorted(devs(ctk)), sorted(devs(mok)))
for name in sorted(devs(ctk)):
    if name in devs(mok):
        cmp("device %s nodes" % name, devs(ctk)[name], devs(mok)[name])
cf = files(ctk, dr) - {f for f in files(ctk, dr) if f.startswith("libcuda.so")}
cmp("driver files (libcuda placeholder aside)", sorted(cf), sorted(files(mok, "/nonexistent") - {"config.yaml"}))
sys.exit(1 if bad else 0)
PYEOF
if [ -f "$T/ctk.yaml" ]; then
	/usr/bin/python3 "$T/diff.py" "$T/ctk.yaml" "$SPEC" "$ROOT" "$DR" > "$T/diff.out" 2>&1
	check "nvidia-ctk cdi generate names the same devices, nodes and driver files as nvidia.yaml" [ $? -eq 0 ]
	sed 's/^/#   /' "$T/diff.out"
fi
rm -rf "$DR"

# ---- 3. end to end: podman and containerd through nvidia-container-runtime
IMG=$T/rootfs
mkdir -p "$IMG/bin" "$IMG/usr/bin" "$IMG/tmp" "$IMG/proc" "$IMG/sys" "$IMG/dev"
cp /bin/busybox "$IMG/bin/"
for a in sh ls cat echo grep sort tr; do ln -s busybox "$IMG/bin/$a"; done
for lib in $(ldd "$MOKKA_NVIDIA_SMI" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
	cp --parents -L "$lib" "$IMG/"
done
tar -C "$IMG" -cf "$T/rootfs.tar" .
# What each container prints: its GPU nodes and nvidia-smi's GPUs.
PROBE='echo "nodes: $(ls /dev | grep "^nvidia[0-9]" | sort | tr "\n" " ")"; if [ -s /usr/bin/nvidia-smi ]; then /usr/bin/nvidia-smi -L; else echo "no nvidia-smi"; fi'
cat > "$T/ns.sh" <<NSEOF
set -u
for d in etc run var/lib opt; do
	n=\$(echo \$d | tr / _)
	mkdir -p "$T/ov/\$n/up" "$T/ov/\$n/work"
	mount -t overlay overlay -o "lowerdir=/\$d,upperdir=$T/ov/\$n/up,workdir=$T/ov/\$n/work" "/\$d" || exit 90
done
mkdir -p "$T/ov/usr_bin/up" "$T/ov/usr_bin/work"
mount -t overlay overlay -o "lowerdir=/usr/bin,upperdir=$T/ov/usr_bin/up,workdir=$T/ov/usr_bin/work" /usr/bin || exit 95
# As on the node: cri's links in /usr/bin (the runtime and the spec's hooks run /usr/bin/nvidia-cdi-hook).
for b in nvidia-container-runtime nvidia-ctk nvidia-cdi-hook; do ln -sf "$TKDIR/\$b" /usr/bin/\$b; done
mkdir -p /etc/cdi /run/cdi /var/lib/nvml-mock /etc/nvidia-container-runtime /etc/containerd
rm -f /etc/cdi/*
mount --bind "$ROOT/run/cdi" /run/cdi || exit 91
mount --bind "$ROOT/var/lib/nvml-mock" /var/lib/nvml-mock || exit 92
cp "$TKDIR/config.toml" /etc/nvidia-container-runtime/config.toml || exit 93
P="podman --root $T/pm/root --runroot $T/pm/runroot --tmpdir $T/pm/tmp --cgroup-manager cgroupfs --runtime $RT"
\$P import -q "$T/rootfs.tar" localhost/mokka-nv-test:latest > "$T/out.import" 2>&1 || exit 94
for v in 0,2 all none; do
	\$P run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=32768:32768 \\
		-e NVIDIA_VISIBLE_DEVICES=\$v localhost/mokka-nv-test sh -c '$PROBE' > "$T/out.podman.\$v" 2>&1
	echo "rc=\$?" >> "$T/out.podman.\$v"
done
\$P rm -a -f > /dev/null 2>&1
\$P rmi -a -f > /dev/null 2>&1
mkdir -p "$T/ctrd"
cat > "$T/ctrd.toml" <<EOT
version = 2
root = "$T/ctrd/root"
state = "$T/ctrd/state"
[grpc]
  address = "$T/ctrd/c.sock"
[ttrpc]
  address = "$T/ctrd/c.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$T/ctrd/opt"
EOT
containerd --config "$T/ctrd.toml" > "$T/ctrd.log" 2>&1 &
c=\$!
for i in \$(seq 150); do [ -S "$T/ctrd/c.sock" ] && break; sleep 0.1; done
n=0
for v in 0,2 all none; do
	n=\$((n + 1))
	timeout 60 ctr --address "$T/ctrd/c.sock" run --rm --rootfs --runtime io.containerd.runc.v2 \\
		--runc-binary "$RT" --env NVIDIA_VISIBLE_DEVICES=\$v --cgroup "mokka-nv-test/c\$n" \\
		--env PATH=/bin:/usr/bin "$IMG" mokka-nv-\$\$-\$n /bin/sh -c '$PROBE' > "$T/out.ctr.\$v" 2>&1
	echo "rc=\$?" >> "$T/out.ctr.\$v"
done
kill -TERM \$c
wait \$c
exit 0
NSEOF
unshare -m --propagation private bash "$T/ns.sh"; nsrc=$?
# The cgroups runc made under cgroupfs for this test's containers only.
for d in /sys/fs/cgroup/*/libpod_parent /sys/fs/cgroup/*/mokka-nv-test; do
	[ -d "$d" ] || continue
	printf '%s\n' "$cgroups_before" | grep -qx "$d" && continue
	find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
done
[ "$nsrc" -eq 0 ] || die "namespace setup failed (status $nsrc): $(cat "$T"/out.* "$T/ctrd.log" 2>/dev/null | tail -5)"

UUIDS=$(awk '/name: "GPU-/ { gsub(/"/, "", $3); print $3 }' "$SPEC")
uuid() { printf '%s\n' "$UUIDS" | sed -n "$(($1 + 1))p"; }
for eng in podman ctr; do
	o=$T/out.$eng
	note "$eng, NVIDIA_VISIBLE_DEVICES=0,2:"; sed 's/^/#   /' "$o.0,2"
	check "$eng =0,2: container ran" grep -qx 'rc=0' "$o.0,2"
	check "$eng =0,2: exactly /dev/nvidia0 and /dev/nvidia2" grep -qx 'nodes: nvidia0 nvidia2 ' "$o.0,2"
	check "$eng =0,2: nvidia-smi lists exactly GPUs 0 and 2" sh -c "[ \$(grep -c '^GPU [0-9]' '$o.0,2') -eq 2 ] &&
		grep -q 'UUID: $(uuid 0)' '$o.0,2' && grep -q 'UUID: $(uuid 2)' '$o.0,2'"
	note "$eng, NVIDIA_VISIBLE_DEVICES=all:"; sed 's/^/#   /' "$o.all"
	check "$eng =all: container ran" grep -qx 'rc=0' "$o.all"
	check "$eng =all: nvidia-smi lists all $NGPU GPUs" [ "$(grep -c '^GPU [0-9]' "$o.all")" -eq "$NGPU" ]
	check "$eng =all: $NGPU GPU nodes" grep -qx 'nodes: nvidia0 nvidia1 nvidia2 nvidia3 ' "$o.all"
	note "$eng, NVIDIA_VISIBLE_DEVICES=none:"; sed 's/^/#   /' "$o.none"
	check "$eng =none: container ran" grep -qx 'rc=0' "$o.none"
	check "$eng =none: no GPU node" grep -qx 'nodes: ' "$o.none"
	# nvidiactl without any /dev/nvidia<N>: the mock, like the driver, lists none.
	check "$eng =none: nvidia-smi lists no GPU" sh -c "! grep -q '^GPU [0-9]' '$o.none'"
done
finish
