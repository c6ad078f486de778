#!/bin/bash
# The node image: the Dockerfile builds with podman from a Debian 12 base
# made here (debootstrap + `podman import`; no registry), and a container
# started from it the way the DaemonSet runs it (privileged, a host root
# at /host; podman with runc and cgroupfs as in CONSUMERS.md §1) reaches
# /readyz 200, stages the node into the mounted root (the staged real
# nvidia-smi loads the mock; the rdma-core tools in the image see the
# HCAs through the shims), and on `podman stop` leaves the root as it was.
#
# Slow (debootstrap about 1.5 min, the build several minutes; needs the
# network for apt): runs only with MOKKA_IMAGE_TEST=1 (scripts/test.sh sets
# it).  MOKKA_IMAGE_BASE_TAR=FILE reuses a debootstrap tarball (a tar of a
# bookworm root) instead of making one; MOKKA_DEBIAN_MIRROR picks the mirror.
#
# Podman's state lives under the temp dir (--root, --runroot, --tmpdir,
# CONTAINERS_CONF and friends point there) and the whole test runs in a
# private mount namespace where /run and /var/lib are overlays with their
# upper layers in the temp dir: what podman and runc still write there
# (CONSUMERS.md §1: /run/runc, /run/libpod, /var/lib/containers/cache)
# never reaches the host, and nothing another process does to those host
# directories (other podman users clean up /run/runc) reaches a running
# build.  cgroups go under a parent of our own, removed at the end.
if [ "${MOKKA_IMAGE_TEST:-0}" != 1 ]; then
	echo "skip: the image test runs only with MOKKA_IMAGE_TEST=1 (slow: debootstrap + podman build)"
	exit 77
fi
if [ -z "${MOKKA_IMAGE_NS:-}" ]; then
	MOKKA_IMAGE_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/../lib.sh"

for t in podman runc curl; do
	command -v "$t" >/dev/null || die "$t missing (scripts/install-deps.sh installs it)"
done
[ -n "${MOKKA_IMAGE_BASE_TAR:-}" ] || command -v debootstrap >/dev/null ||
	die "debootstrap missing (scripts/install-deps.sh installs it)"

t0=$(date +%s)
lap() { note "$1: $(( $(date +%s) - t0 )) s"; }

# ---- podman, confined to $T/pm ---------------------------------------------
PM=$T/pm
mkdir -p "$PM/root" "$PM/runroot" "$PM/tmp"
CG=mokka-image-test-$$
cat > "$PM/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$PM/events.log"
tmp_dir = "$PM/tmp"
EOF
printf 'unqualified-search-registries = []\n' > "$PM/registries.conf"
printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' "$PM/root" "$PM/runroot" > "$PM/storage.conf"
export CONTAINERS_CONF=$PM/containers.conf CONTAINERS_REGISTRIES_CONF=$PM/registries.conf \
	CONTAINERS_STORAGE_CONF=$PM/storage.conf
P=(podman --root "$PM/root" --runroot "$PM/runroot" --tmpdir "$PM/tmp" --storage-driver overlay
   --cgroup-manager cgroupfs --runtime runc --events-backend file)
ULIMITS=(--ulimit nofile=20000:20000 --ulimit nproc=32768:32768)
CTR=mokka-image-test-$$

for d in run var/lib; do
	u=$T/ov/${d//\//_}
	mkdir -p "$u/up" "$u/work"
	mount -t overlay mokka-image-test -o "lowerdir=/$d,upperdir=$u/up,workdir=$u/work" "/$d" ||
		die "cannot overlay /$d in the test's mount namespace"
done

image_cleanup() {
	"${P[@]}" rm -f -t 0 "$CTR" >/dev/null 2>&1
	"${P[@]}" rmi -a -f >/dev/null 2>&1
	# Storage mounts exist in this private namespace only; drop them so
	# the temp dir can go.
	awk -v t="$T" 'index($2, t) == 1 { print $2 }' /proc/self/mounts | sort -r |
		while read -r m; do umount -l "$m" 2>/dev/null; done
	for c in /sys/fs/cgroup/*/"$CG" /sys/fs/cgroup/unified/"$CG"; do
		[ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	umount -l /run /var/lib 2>/dev/null
	cleanup
}
trap image_cleanup EXIT

# ---- the base: debootstrap + podman import --------------------------------------
if [ -n "${MOKKA_IMAGE_BASE_TAR:-}" ]; then
	cp "$MOKKA_IMAGE_BASE_TAR" "$T/base.tar" || die "cannot read $MOKKA_IMAGE_BASE_TAR"
else
	debootstrap --variant=minbase bookworm "$T/base" "${MOKKA_DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
		> "$T/debootstrap.log" 2>&1 || die "debootstrap failed: $(tail -5 "$T/debootstrap.log")"
	# What debian:bookworm-slim leaves out too (the build runs apt-get update).
	rm -rf "$T"/base/var/cache/apt/archives/*.deb "$T"/base/var/cache/apt/*.bin "$T"/base/var/lib/apt/lists/*
	tar -C "$T/base" -cf "$T/base.tar" . && rm -rf "$T/base"
fi
lap "debian base made"
"${P[@]}" import "$T/base.tar" localhost/mokka-test-base:bookworm > "$T/import.log" 2>&1 ||
	die "podman import: $(cat "$T/import.log")"
rm -f "$T/base.tar"

# ---- the build (apt needs the network: --network host) -----------------------
# The image ships NVIDIA's Container Toolkit; scripts/install-deps.sh built
# the pinned release here already, so the build borrows those binaries
# (Dockerfile: /mokka-go-bin) instead of compiling them again.
. "$S/tests/go/versions.env"
GOBIN=${MOKKA_GO_CACHE:-/var/cache/mokka/go}/bin
for b in nvidia-container-runtime nvidia-ctk nvidia-cdi-hook; do
	[ "$(cat "$GOBIN/.stamp/$b" 2>/dev/null)" = "$NVIDIA_CTK_VERSION" ] ||
		die "$b $NVIDIA_CTK_VERSION not built in $GOBIN (scripts/install-nvidia-stack.sh)"
done
if ! "${P[@]}" build --network host --pull=never "${ULIMITS[@]}" --cgroup-parent "/$CG" \
	-v "$GOBIN:/mokka-go-bin:ro" --build-arg NVIDIA_CTK_VERSION="$NVIDIA_CTK_VERSION" \
	--build-arg BASE=localhost/mokka-test-base:bookworm -t localhost/mokka:test \
	-f "$S/Dockerfile" "$S" > "$T/build.log" 2>&1; then
	tail -40 "$T/build.log"
	die "podman build failed"
fi
lap "image built"
"${P[@]}" image inspect --format '{{.Config.Entrypoint}} {{.Size}}' localhost/mokka:test | sed 's/^/# image: /'

# ---- a host root that looks like a node ---------------------------------------
mkdir -p "$ROOT/var" "$ROOT/run" "$ROOT/etc/containerd" "$ROOT/usr/bin"
ln -s /run "$ROOT/var/run"
printf 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n' > "$ROOT/etc/containerd/config.toml"
printf '#!/bin/sh\nexit 0\n' > "$ROOT/usr/bin/containerd" && chmod 755 "$ROOT/usr/bin/containerd"
echo image-test-node > "$ROOT/etc/hostname"
# A host's / has the C library: cri runs the toolkit's nvidia-ctk there.
for lib in $(ldd "$GOBIN/nvidia-ctk" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
	cp --parents -L "$lib" "$ROOT/"
done
tree_snapshot "$ROOT" > "$T/before"

# ---- run it as the DaemonSet does ------------------------------------------------
PORT=$(free_port)
"${P[@]}" run -d --name "$CTR" --privileged --network host "${ULIMITS[@]}" --cgroup-parent "/$CG" \
	-v "$ROOT:/host" -e NODE_NAME=image-test-node localhost/mokka:test \
	--health-addr "127.0.0.1:$PORT" --shutdown-timeout 20s --container-runtime-restart none \
	> "$T/run.log" 2>&1 || die "podman run: $(cat "$T/run.log")"
logs() { "${P[@]}" logs "$CTR" 2>&1 | tail -"${1:-40}" | sed 's/^/# /'; }
if wait_for 90 is_code /readyz 200; then
	pass "container: /readyz 200"
else
	fail "container: /readyz $(http /readyz): $(cat "$T/body")"; logs
fi
lap "container ready"
check "container: /healthz 200" is_code /healthz 200

# Staged into the mounted root.
D=$ROOT$R/driver
check "driver tree staged: /dev/nvidia0 is a char device" [ -c "$D/dev/nvidia0" ]
check "PCI tree staged" [ -d "$ROOT$R/sys/bus/pci/devices/0000:1a:00.0" ]
# The image's real nvidia-smi, staged with RUNPATH $ORIGIN/../lib64,
# answers from the mock on this machine, outside the container.
if "$D/usr/bin/nvidia-smi" -L > "$T/smi.txt" 2>&1; then
	n=$(grep -c '^GPU [0-9]*: NVIDIA H100 80GB HBM3' "$T/smi.txt")
	check "staged nvidia-smi -L lists 8 H100s (got $n)" [ "$n" -eq 8 ]
else
	fail "staged nvidia-smi -L: $(cat "$T/smi.txt")"
fi
# ... and inside the container, through /run/nvidia/driver.
"${P[@]}" exec "$CTR" /host/run/nvidia/driver/usr/bin/nvidia-smi --query-gpu=driver_version --format=csv,noheader \
	> "$T/smi2.txt" 2>&1
check "nvidia-smi in the container reports driver 550.163.01" grep -qx '550.163.01' <(head -1 "$T/smi2.txt")
# The image's rdma-core tools see the HCAs through the staged shims.
IB=/host$R/ib
"${P[@]}" exec -e MOCK_IB=full -e MOCK_IB_ROOT=$IB -e MOCK_IB_SOCKET=/host$R/run/mock-ib.sock \
	-e LD_PRELOAD=$IB/lib/libibmockumad.so:$IB/lib/libibmockverbs.so:$IB/lib/libibmocksys.so \
	"$CTR" ibstat > "$T/ibstat.txt" 2>&1
if grep -q "CA 'mlx5_0'" "$T/ibstat.txt" && grep -q 'Rate: 400' "$T/ibstat.txt"; then
	pass "ibstat in the container lists mlx5_0 at rate 400"
else
	fail "ibstat in the container: $(head -5 "$T/ibstat.txt")"
fi

# The DaemonSet's nvidia runtime is the real toolkit from the image.
TK=/usr/local/nvml-mock/toolkit
for b in nvidia-container-runtime nvidia-ctk nvidia-cdi-hook; do
	check "cri installed the image's $b ($NVIDIA_CTK_VERSION)" cmp -s "$GOBIN/$b" "$ROOT$TK/$b"
	check "/usr/bin/$b links to it" [ "$(readlink "$ROOT/usr/bin/$b")" = "$TK/$b" ]
done
check "the toolkit's runtime is in CDI mode" grep -qx 'mode = "cdi"' "$ROOT$TK/config.toml"
check "nvidia-ctk configured containerd: nvidia handler -> the real runtime" \
	grep -q 'BinaryName = "/usr/bin/nvidia-container-runtime"' "$ROOT/etc/containerd/conf.d/50-mokka.toml"
chroot "$ROOT" /usr/bin/nvidia-container-runtime --version > "$T/rtver" 2>&1
# (go install stamps no version: it says "version unknown", as on the host.)
check "it runs on the host: $(head -1 "$T/rtver")" grep -q "^NVIDIA Container Runtime version" "$T/rtver"

# ---- podman stop: teardown within the grace period ---------------------------------
"${P[@]}" stop -t 30 "$CTR" > /dev/null 2>&1
rc=$("${P[@]}" inspect --format '{{.State.ExitCode}}' "$CTR")
if [ "$rc" = 0 ]; then pass "container exited 0 on podman stop"; else fail "container exit status $rc on podman stop"; logs; fi
lap "stopped"
# The toolkit stays by design (containers created through the handler
# still exec the runtime after Mokka stops); everything else goes.
tree_snapshot "$ROOT" | grep -v -e '^\./usr/local/nvml-mock/toolkit' -e '^\./usr/bin/nvidia-' \
	-e '^\./etc/nvidia-container-runtime' -e "$TK/" -e '^\./usr/local \|^\./usr/local/nvml-mock ' \
	> "$T/after"
grep -q "^\./usr/local/nvml-mock/toolkit " <(tree_snapshot "$ROOT") &&
	pass "the toolkit stays installed after the stop" || fail "the toolkit was removed"
if diff -u "$T/before" "$T/after" > "$T/tree.diff"; then
	pass "root left exactly as it was, but for the toolkit"
else
	fail "the root changed"; sed 's/^/# /' "$T/tree.diff" | head -30
fi
finish
