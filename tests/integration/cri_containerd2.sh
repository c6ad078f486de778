#!/bin/bash
# containerd 2.x and 1.7 as real consumers (issue 18), built from the Go
# module proxy by scripts/install-containerd.sh.  The supervisor runs
# gpudriver, pcibus and cri (NRI on by default) into a temp host root with a
# fake systemctl and containerd on its PATH; then, per containerd version,
# in a private mount namespace (overlays over /etc, /run, /var/lib, /opt;
# the root's /etc/containerd, /run/cdi, /run/nri and mock tree bound where
# the host paths point) a private containerd daemon imports the root's
# config.toml:
#   * `config dump`: the nvidia handler is the default, CDI on, and the NRI
#     table from Mokka's drop-in (enabled, our socket path) is in force;
#   * the daemon honours it: its NRI socket appears at that path, and the
#     supervisor's own mokka-nri (which finds the socket inside the host
#     root) registers there, is configured and synchronized;
#   * 2.x: `ctr run --device nvidia.com/gpu=0` (CDI through ctr; 1.7's ctr
#     takes device paths only) gets exactly /dev/nvidia0 and the real
#     nvidia-smi lists one GPU; =all lists all.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in runc busybox unshare; do
	command -v "$t" >/dev/null || { echo "SKIP: $t missing (scripts/install-deps.sh)"; exit 77; }
done
[ -x "${MOKKA_NVIDIA_SMI:-}" ] || { echo "SKIP: no nvidia-smi (scripts/fetch-consumers.sh)"; exit 77; }
grep -qw overlay /proc/filesystems || { echo "SKIP: no overlayfs"; exit 77; }
GOBIN=${MOKKA_GO_CACHE:-/var/cache/mokka/go}/bin
VERSIONS="v2.2.9 v1.7.30"
for v in $VERSIONS; do
	[ -x "$GOBIN/containerd-$v/containerd" ] ||
		die "containerd $v not built in $GOBIN/containerd-$v (scripts/install-containerd.sh)"
done
NRI_SOCK=/run/nri/mokka-test.sock
export GPU_COUNT=2
unset MOKKA_CONTAINER_TOOLKIT_DIR

mkdir -p "$ROOT/bin" "$ROOT/etc/containerd" "$ROOT/var"
ln -s /run "$ROOT/var/run"
cp "$(command -v busybox)" "$ROOT/bin/busybox"
ln -s busybox "$ROOT/bin/sh"
mkdir -p "$ROOT/usr/bin"
printf '#!/bin/sh\n[ "$1" = is-active ] && { echo active; exit 0; }\necho "$*" >> /systemctl.calls\n' \
	> "$ROOT/usr/bin/systemctl"
printf '#!/bin/sh\nexit 0\n' > "$ROOT/usr/bin/containerd"
chmod 755 "$ROOT/usr/bin/systemctl" "$ROOT/usr/bin/containerd"
printf 'version = 2\n' > "$ROOT/etc/containerd/config.toml"

start_supervisor --simulators gpudriver,pcibus,cri --nri-socket "$NRI_SOCK"
wait_for 60 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"
check "the drop-in carries the NRI table" grep -q "socket_path = \"$NRI_SOCK\"" \
	"$ROOT/etc/containerd/conf.d/50-mokka.toml"

# The image: busybox and the glibc nvidia-smi needs (it and the mock
# library come from the CDI spec's mounts).
IMG=$T/rootfs
mkdir -p "$IMG/bin" "$IMG/tmp" "$IMG/proc" "$IMG/dev" "$IMG/sys"
cp /bin/busybox "$IMG/bin/"
for a in sh ls cat echo grep wc stat tr sort; do ln -s busybox "$IMG/bin/$a"; done
for lib in $(ldd "$MOKKA_NVIDIA_SMI" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
	cp --parents -L "$lib" "$IMG/"
done

cat > "$T/ns.sh" <<EOF
set -u
V=\$1
BIN=$GOBIN/containerd-\$V
O=$T/out.\$V
mkdir -p "\$O"
for d in etc run var/lib opt; do
	n=\$(echo \$d | tr / _)
	mkdir -p "$T/ov/\$V/\$n/up" "$T/ov/\$V/\$n/work"
	mount -t overlay overlay -o "lowerdir=/\$d,upperdir=$T/ov/\$V/\$n/up,workdir=$T/ov/\$V/\$n/work" "/\$d" || exit 90
done
mkdir -p /etc/containerd /run/cdi /var/lib/nvml-mock /run/nri "$ROOT/run/nri"
mount --bind "$ROOT/run/nri" /run/nri || exit 94
mount --bind "$ROOT/etc/containerd" /etc/containerd || exit 91
mount --bind "$ROOT/run/cdi" /run/cdi || exit 92
mount --bind "$ROOT/var/lib/nvml-mock" /var/lib/nvml-mock || exit 93
D=$T/ctrd-\$V
mkdir -p "\$D"
case \$V in v2.*) ver=3 ;; *) ver=2 ;; esac
cat > "\$D/daemon.toml" <<EOT
version = \$ver
root = "\$D/root"
state = "\$D/state"
imports = ["/etc/containerd/config.toml"]
[grpc]
  address = "\$D/c.sock"
[ttrpc]
  address = "\$D/c.sock.ttrpc"
EOT
export PATH=\$BIN:\$PATH
containerd --config "\$D/daemon.toml" config dump > "\$O/dump" 2> "\$O/dump.err"
echo \$? > "\$O/dump.rc"
containerd --config "\$D/daemon.toml" > "\$O/ctrd.log" 2>&1 &
c=\$!
for i in \$(seq 150); do [ -S "\$D/c.sock" ] && break; sleep 0.1; done
for i in \$(seq 50); do [ -S "$NRI_SOCK" ] && break; sleep 0.1; done
[ -S "$NRI_SOCK" ] && echo yes > "\$O/nri.sock" || echo no > "\$O/nri.sock"
# The supervisor's mokka-nri (it redials every second) with this version:
# register, Configure, Synchronize; its lines since the daemon started.
for i in \$(seq 100); do tail -n +\$2 "$T/sup.log" | grep -q 'nri: synchronized' && break; sleep 0.1; done
tail -n +\$2 "$T/sup.log" | grep 'mokka-nri' > "\$O/nri.log"
run() { # run NAME DEVICE
	ctr -a "\$D/c.sock" run --rm --rootfs --env PATH=/bin:/usr/bin --device "\$2" "$IMG" "mokka-\$1" /bin/sh -c '
		echo "nodes: \$(ls /dev | grep "^nvidia[0-9]" | sort | tr "\n" " ")"
		/usr/bin/nvidia-smi -L' > "\$O/\$1" 2>&1
	echo "rc=\$?" >> "\$O/\$1"
}
case \$V in v2.*) run gpu0 nvidia.com/gpu=0; run all nvidia.com/gpu=all ;; esac
kill -TERM \$c
for i in \$(seq 100); do kill -0 \$c 2>/dev/null || break; sleep 0.1; done
kill -KILL \$c 2>/dev/null
wait \$c 2>/dev/null
exit 0
EOF

cgroups_before=$(ls -d /sys/fs/cgroup/*/default 2>/dev/null)
for v in $VERSIONS; do
	O=$T/out.$v
	from=$(( $(wc -l < "$T/sup.log") + 1 ))
	unshare -m --propagation private bash "$T/ns.sh" "$v" "$from" || fail "$v: namespace setup failed ($?)"
	check "$v: config dump rc 0 ($(head -c 300 "$O/dump.err" 2>/dev/null))" grep -qx 0 "$O/dump.rc"
	check "$v: dump: nvidia is the default runtime" grep -Eq "default_runtime_name = [\"']nvidia[\"']" "$O/dump"
	check "$v: dump: CDI on" grep -q 'enable_cdi = true' "$O/dump"
	grep -A12 'io.containerd.nri.v1.nri' "$O/dump" | tr "'" '"' > "$O/nri.table"
	check "$v: dump: NRI enabled at our socket" sh -c "grep -q 'socket_path = \"$NRI_SOCK\"' '$O/nri.table' &&
		grep -q 'disable = false' '$O/nri.table'"
	check "$v: the daemon honours the NRI table (its socket at $NRI_SOCK)" grep -qx yes "$O/nri.sock"
	check "$v: mokka-nri registers, is configured and synchronized" sh -c "grep -q 'registered as 10-mokka' '$O/nri.log' &&
		grep -q 'configured by containerd' '$O/nri.log' && grep -q synchronized '$O/nri.log'"
	# ctr 1.7 has no CDI (its --device takes paths only): CDI through ctr is 2.x's.
	case $v in v2.*) ;; *) continue ;; esac
	note "$v: ctr run --device nvidia.com/gpu=0:"; sed 's/^/#   /' "$O/gpu0"
	check "$v: =0: container ran" grep -qx 'rc=0' "$O/gpu0"
	check "$v: =0: only /dev/nvidia0" grep -qx 'nodes: nvidia0 ' "$O/gpu0"
	check "$v: =0: nvidia-smi lists one GPU" [ "$(grep -c '^GPU [0-9]' "$O/gpu0")" -eq 1 ]
	check "$v: =all: nvidia-smi lists both GPUs" [ "$(grep -c '^GPU [0-9]' "$O/all")" -eq 2 ]
done
# runc's cgroups under cgroupfs (ctr's namespace "default"): what we made goes.
for d in /sys/fs/cgroup/*/default; do
	[ -d "$d" ] || continue
	printf '%s\n' "$cgroups_before" | grep -qx "$d" && continue
	find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
done
check "no cgroups left behind" sh -c "[ \"\$(ls -d /sys/fs/cgroup/*/default 2>/dev/null)\" = '$cgroups_before' ]"
check "this machine's containerd dirs untouched" \
	sh -c "! ls /run/containerd/mokka* /var/lib/containerd/mokka* >/dev/null 2>&1"
finish
