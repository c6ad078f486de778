#!/bin/sh
# Install every build and test dependency of Mokka on a fresh Debian 12 machine.
# Idempotent; needs root. Enables contrib/non-free (some real consumers live there).
set -eu
export DEBIAN_FRONTEND=noninteractive
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

src=/etc/apt/sources.list.d/debian.sources
if [ -f "$src" ] && grep -q '^Components: main$' "$src"; then
	$SUDO sed -i 's/^Components: main$/Components: main contrib non-free non-free-firmware/' "$src"
fi

$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
	build-essential autoconf automake libtool pkg-config autoconf-archive \
	libyaml-dev libcjson-dev libnl-3-dev libnl-route-3-dev libcap-dev \
	libcriterion-dev libibumad-dev libibverbs-dev rdma-core \
	pciutils kmod curl util-linux iproute2 procps psmisc \
	clang libclang-rt-dev \
	systemd python3 file diffutils findutils xz-utils patchelf libxml2-utils python3-yaml \
	slurmd hwloc libhwloc-contrib-plugins \
	infiniband-diags ibverbs-utils ibverbs-providers libibmad-dev libibnetdisc-dev ibsim-utils \
	prometheus-node-exporter \
	podman runc debootstrap man-db \
	conmon containerd busybox-static \
	libfuse3-dev fuse3 driverctl
# tests/bench/nvml_instr.sh counts instructions with callgrind.
$SUDO apt-get install -y -q --no-install-recommends valgrind

# The real consumers tests run over the mock (unpacked, not installed).
sh "$(dirname "$0")/fetch-consumers.sh"

# The older-glibc (Debian 11) root the glibc 2.17 test runs nvidia-smi in.
sh "$(dirname "$0")/make-old-root.sh"

# NVIDIA's Go programs (Container Toolkit, device plugin, helm) from the Go
# module proxy and nvidia-ml-py from PyPI, pinned in tests/go/versions.env.
bash "$(dirname "$0")/install-nvidia-stack.sh"

# containerd 2.x and 1.7 from the Go module proxy (Debian's 1.6 drops
# enable_cdi and the NRI table), pinned in the script.
bash "$(dirname "$0")/install-containerd.sh"
