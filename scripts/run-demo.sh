#!/bin/bash
# Set up, build, and run mokka-supervisor on its built-in default profile
# (8x H100 SXM, 2 NUMA nodes) into a sandbox root.  Ctrl-C tears the node
# down and leaves the sandbox as it was.  Needs root.  The real nvidia-smi
# (Debian's, unpacked by scripts/fetch-consumers.sh, which install-deps.sh
# runs) is staged into the driver root: without it gpudriver is not ready
# and /readyz stays 503.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
SANDBOX=${SANDBOX:-/tmp/mokka-sandbox}
PORT=${PORT:-9091}

[ "${MOKKA_SKIP_DEPS:-0}" = 1 ] || ./scripts/install-deps.sh
CONS=${MOKKA_CONSUMERS:-/var/cache/mokka-consumers}
if [ -z "${MOKKA_NVIDIA_SMI:-}" ]; then
	[ -x "$CONS/nvidia-smi/usr/bin/nvidia-smi" ] || MOKKA_CONSUMERS=$CONS ./scripts/fetch-consumers.sh >/dev/null
	export MOKKA_NVIDIA_SMI=$CONS/nvidia-smi/usr/bin/nvidia-smi
fi
[ -x "$MOKKA_NVIDIA_SMI" ] || { echo "run-demo: no nvidia-smi at $MOKKA_NVIDIA_SMI (scripts/fetch-consumers.sh)" >&2; exit 1; }
./autogen.sh >/dev/null
mkdir -p build && cd build
[ -f Makefile ] || "$top/configure" -q
make -j"$(nproc)" >/dev/null
mkdir -p "$SANDBOX"
R=$SANDBOX/var/lib/nvml-mock
cat <<MSG

Mokka is starting with the built-in profile (8x H100 SXM) into $SANDBOX.
Where to look, and the real tools to point at it (from another shell):

  curl -s localhost:$PORT/healthz; curl -s localhost:$PORT/readyz; curl -s localhost:$PORT/metrics

  # nvidia-smi (the real one, staged with the mock NVML beside it)
  $R/driver/usr/bin/nvidia-smi; $R/driver/usr/bin/nvidia-smi -L; $R/driver/usr/bin/nvidia-smi topo -m

  # change the running node (the mock NVML reacts within a second)
  $PWD/mokka-ctl --host-root $SANDBOX --gpu 2 xid 79; $PWD/mokka-ctl --host-root $SANDBOX --gpu 0 temp 85
  $PWD/mokka-ctl --host-root $SANDBOX --help

  # InfiniBand: the real tools through the shims
  (export MOCK_IB=full MOCK_IB_ROOT=$R/ib MOCK_IB_SOCKET=$R/run/mock-ib.sock
   export LD_PRELOAD=$R/ib/lib/libibmockumad.so:$R/ib/lib/libibmockverbs.so:$R/ib/lib/libibmocksys.so
   ibstat; ibv_devinfo; iblinkinfo)

  # PCI
  lspci -A linux-sysfs -O sysfs.path=$R/sys/bus/pci -nn        # every GPU by name
  LD_PRELOAD=$PWD/.libs/libmockfs.so MOCK_PCI_ROOT=$R lspci -vv -d 10de:   # link caps decoded
  LD_PRELOAD=$PWD/.libs/libmockfs.so MOCK_PCI_ROOT=$R lspci -k -d 10de:    # driver nvidia
  cat $R/proc/bus/pci/devices
  cat $SANDBOX/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features
  ls -l $R/fabric-state/; pgrep -a nv-fabricmanager
  $PWD/mokka-worker-pcibus --help                                # one simulator alone

Ctrl-C stops it and restores $SANDBOX.
MSG
(for _ in $(seq 120); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "localhost:$PORT/readyz" 2>/dev/null)" = 200 ] &&
		{ echo ">>> /readyz is 200: the node is ready (try the commands above)"; exit 0; }
	sleep 0.5
done; echo ">>> /readyz not 200 after 60 s: curl -s localhost:$PORT/readyz says why") &
exec ./mokka-supervisor --foreground --host-root "$SANDBOX" --health-addr ":$PORT"
