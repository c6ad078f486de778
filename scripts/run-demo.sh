#!/bin/bash
# Set up, build, and run mokka-supervisor on its built-in default profile
# (8x H100 SXM, 2 NUMA nodes) into a sandbox root.  Ctrl-C tears the node
# down and leaves the sandbox as it was.  Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
SANDBOX=${SANDBOX:-/tmp/mokka-sandbox}
PORT=${PORT:-9091}

[ "${MOKKA_SKIP_DEPS:-0}" = 1 ] || ./scripts/install-deps.sh
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
  lspci -A linux-sysfs -O sysfs.path=$R/sys/bus/pci -nn        # every GPU by name
  LD_PRELOAD=$PWD/.libs/libmockfs.so MOCK_PCI_ROOT=$R lspci -vv -d 10de:   # link caps decoded
  LD_PRELOAD=$PWD/.libs/libmockfs.so MOCK_PCI_ROOT=$R lspci -k -d 10de:    # driver nvidia
  cat $R/proc/bus/pci/devices
  cat $SANDBOX/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features
  ls -l $R/fabric-state/; pgrep -a nv-fabricmanager
  $PWD/mokka-worker-pcibus --help                                # one simulator alone

Ctrl-C stops it and restores $SANDBOX.
MSG
exec ./mokka-supervisor --foreground --host-root "$SANDBOX" --health-addr ":$PORT"
