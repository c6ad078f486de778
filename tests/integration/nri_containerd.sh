#!/bin/bash
# The NRI plugin with real containerd 2.x (issue 18), on by default: the
# supervisor (gpudriver, pcibus, cri; no NRI flag) stages a 2-GPU node
# into a temp host root and runs mokka-nri itself, which dials the
# default socket /var/run/nri/nri.sock inside that root; in a private
# mount namespace (overlays over /etc, /run, /var/lib, /opt; the mock tree
# and the CDI directory bound where the host paths point) containerd 2.2.9
# runs with NRI on at that socket, the supervisor's mokka-nri registers,
# and crictl (built from the Go module proxy) runs pods from images made
# here (busybox + the glibc nvidia-smi needs; a sleeping pause image):
#   * a plain pod's container gets the mock driver view: /opt/nvml-mock,
#     PATH, the GPUs by CDI nvml-mock.nvidia.com/gpu=all; the real
#     nvidia-smi on its PATH lists both GPUs;
#   * a pod annotated nvml-mock.nvidia.com/inject=false gets nothing: no
#     overlay, no nvidia-smi, no /dev/nvidia*;
#   * a container created while the node re-stages (a profile edit, the
#     pass held open by cri's test delay) waits for the staging gate, then
#     gets the view.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in runc busybox unshare python3; do
	command -v "$t" >/dev/null || { echo "SKIP: $t missing (scripts/install-deps.sh)"; exit 77; }
done
[ -x "${MOKKA_NVIDIA_SMI:-}" ] || { echo "SKIP: no nvidia-smi (scripts/fetch-consumers.sh)"; exit 77; }
grep -qw overlay /proc/filesystems || { echo "SKIP: no overlayfs"; exit 77; }
GOBIN=${MOKKA_GO_CACHE:-/var/cache/mokka/go}/bin
C=$GOBIN/containerd-v2.2.9
CRICTL=$GOBIN/cri-tools-v1.34.0/crictl
[ -x "$C/containerd" ] || die "containerd v2.2.9 not built ($C; scripts/install-containerd.sh)"
[ -x "$CRICTL" ] || die "crictl not built ($CRICTL; scripts/install-containerd.sh)"
[ -x "$B/mokka-nri" ] || die "mokka-nri not built"
NRI_SOCK=$ROOT/var/run/nri/nri.sock	# the default, under the host root
NRI_LOG=$T/sup.log			# mokka-nri is the supervisor's daemon
D=$T/ctrd
export GPU_COUNT=2 MOKKA_TEST_CRI_STAGE_DELAY_MS=800
mkdir -p "$ROOT/var/run/cdi" "$D/logs"
cp "$S/etc/profiles/h100.yaml" "$T/p.yaml"
sed 's/^\(\s*driver_version:\).*/\1 "550.999.01"/' "$T/p.yaml" > "$T/p2.yaml"

start_supervisor --simulators gpudriver,pcibus,cri --container-runtime none --config "$T/p.yaml"
wait_for 60 is_code /stagedz 200 || die "/stagedz never 200: $(cat "$T/body")"
check "no flag: the supervisor runs mokka-nri" wait_for 10 pgrep -P "$SUP_PID" -f '^mokka-nri '
check "the NRI CDI spec is staged" test -f "$ROOT/var/run/cdi/nvml-mock-nri.yaml"

# Images: the workload (busybox, glibc for nvidia-smi) and a pause.
IMG=$T/rootfs
mkdir -p "$IMG/bin" "$IMG/tmp" "$IMG/proc" "$IMG/dev" "$IMG/sys" "$IMG/etc"
cp /bin/busybox "$IMG/bin/"
for a in sh ls cat echo grep wc tr sleep; do ln -s busybox "$IMG/bin/$a"; done
for lib in $(ldd "$MOKKA_NVIDIA_SMI" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
	cp --parents -L "$lib" "$IMG/"
done
python3 "$S/tests/integration/nri_image.py" "$IMG" localhost/mokka/test:1 "$T/test.tar" /bin/sh ||
	die "image"
python3 "$S/tests/integration/nri_image.py" "$IMG" localhost/mokka/pause:1 "$T/pause.tar" \
	/bin/sleep 86400 || die "pause image"

pod() { # pod NAME [ANNOTATION-JSON]
	printf '{"metadata":{"name":"%s","namespace":"default","uid":"%s","attempt":0},
	  "log_directory":"%s","annotations":{%s},
	  "linux":{"security_context":{"namespace_options":{"network":2}}}}\n' \
		"$1" "$1" "$D/logs/$1" "${2:-}" > "$T/pod.$1.json"
	cat > "$T/ctr.$1.json" <<EOF
{"metadata":{"name":"c"},"image":{"image":"localhost/mokka/test:1"},"log_path":"c.log",
 "command":["/bin/sh","-c","echo view: \$([ -d /opt/nvml-mock/driver ] && echo yes || echo no); echo nodes: \$(ls /dev | grep '^nvidia[0-9]' | tr '\\\\n' ' '); command -v nvidia-smi > /dev/null && nvidia-smi -L || echo 'smi: none'"]}
EOF
}
pod plain
pod optout '"nvml-mock.nvidia.com/inject":"false"'
pod gate

cat > "$D/daemon.toml" <<EOF
version = 3
root = "$D/root"
state = "$D/state"
[grpc]
  address = "$D/c.sock"
[ttrpc]
  address = "$D/c.sock.ttrpc"
[plugins.'io.containerd.nri.v1.nri']
  disable = false
  socket_path = "$NRI_SOCK"
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "localhost/mokka/pause:1"
[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = true
  cdi_spec_dirs = ["/var/run/cdi"]
  # a sandboxed test machine may refuse a lower oom_score_adj (the pause's -998)
  restrict_oom_score_adj = true
EOF

cat > "$T/ns.sh" <<EOF
set -u
for d in etc run var/lib opt; do
	n=\$(echo \$d | tr / _)
	mkdir -p "$T/ov/\$n/up" "$T/ov/\$n/work"
	mount -t overlay overlay -o "lowerdir=/\$d,upperdir=$T/ov/\$n/up,workdir=$T/ov/\$n/work" "/\$d" || exit 90
done
mkdir -p /run/cdi /var/lib/nvml-mock
mount --bind "$ROOT/var/run/cdi" /run/cdi || exit 91
mount --bind "$ROOT/var/lib/nvml-mock" /var/lib/nvml-mock || exit 92
export PATH=$C:\$PATH
containerd --config "$D/daemon.toml" > "$T/ctrd.log" 2>&1 &
c=\$!
for i in \$(seq 150); do [ -S "$D/c.sock" ] && [ -S "$NRI_SOCK" ] && break; sleep 0.1; done
for i in pause test; do ctr -a "$D/c.sock" -n k8s.io images import "$T/\$i.tar" > "$T/import.\$i" 2>&1; done
# the supervisor's mokka-nri redials every second
for i in \$(seq 100); do grep -q 'registered as' "$NRI_LOG" && break; sleep 0.1; done
export CONTAINER_RUNTIME_ENDPOINT=unix://$D/c.sock IMAGE_SERVICE_ENDPOINT=unix://$D/c.sock
cr() { timeout 60 "$CRICTL" --timeout 30s "\$@"; }
finish_pod() { # finish_pod NAME CID
	for i in \$(seq 200); do
		cr inspect -o go-template --template '{{.status.state}}' "\$2" 2>/dev/null |
			grep -q EXITED && break
		sleep 0.1
	done
	cat "$D/logs/\$1/c.log" > "$T/out.\$1" 2>&1
}
run() { # run NAME: pod, container, wait for its exit
	local p cid
	p=\$(cr runp "$T/pod.\$1.json" 2> "$T/runp.\$1.err") || return
	cid=\$(cr create "\$p" "$T/ctr.\$1.json" "$T/pod.\$1.json" 2> "$T/create.\$1.err") || return
	cr start "\$cid" > /dev/null 2>&1
	finish_pod "\$1" "\$cid"
}
run plain
run optout
# A container created while the node re-stages: the pod first, then the
# profile edit, then the container as soon as the pass has begun.
p=\$(cr runp "$T/pod.gate.json" 2> "$T/runp.gate.err")
mv "$T/p2.yaml" "$T/p.yaml"
for i in \$(seq 300); do grep -q 'generation 2: stage' "$NRI_LOG" && break; sleep 0.02; done
cid=\$(cr create "\$p" "$T/ctr.gate.json" "$T/pod.gate.json" 2> "$T/create.gate.err")
cr start "\$cid" > /dev/null 2>&1
finish_pod gate "\$cid"
for id in \$(cr pods -q); do cr stopp "\$id" > /dev/null 2>&1; cr rmp "\$id" > /dev/null 2>&1; done
kill -TERM \$c
for i in \$(seq 100); do kill -0 \$c 2>/dev/null || break; sleep 0.1; done
kill -KILL \$c 2>/dev/null
wait
exit 0
EOF
cgroups_before=$(ls -d /sys/fs/cgroup/*/k8s.io 2>/dev/null)
unshare -m --propagation private bash "$T/ns.sh" || fail "namespace setup failed ($?)"
for d in /sys/fs/cgroup/*/k8s.io; do
	[ -d "$d" ] || continue
	printf '%s\n' "$cgroups_before" | grep -qx "$d" && continue
	find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
done
note "mokka-nri:"; grep 'mokka-nri' "$NRI_LOG" | sed 's/^/#   /' | tail -12
check "the plugin registered with containerd 2.2.9" grep -q 'registered as 10-mokka' "$NRI_LOG"
check "it was configured by containerd" grep -q 'configured by containerd' "$NRI_LOG"
for n in plain optout gate; do note "$n:"; sed 's/^/#   /' "$T/out.$n" 2>/dev/null | head -8; done
check "plain pod: the mock driver view" grep -q 'view: yes' "$T/out.plain"
check "plain pod: the GPUs by CDI (/dev/nvidia0 and nvidia1)" grep -q 'nodes: nvidia0 nvidia1' "$T/out.plain"
check "plain pod: nvidia-smi on its PATH lists both GPUs" [ "$(grep -c 'GPU [0-9]: ' "$T/out.plain")" -eq 2 ]
check "plain pod: by CDI nvml-mock.nvidia.com/gpu=all" grep -q 'CDI nvml-mock.nvidia.com/gpu=all' "$NRI_LOG"
check "opted-out pod: no view" grep -q 'view: no' "$T/out.optout"
check "opted-out pod: no nvidia-smi" grep -q 'smi: none' "$T/out.optout"
check "opted-out pod: no GPU nodes" grep -qx '.*nodes: *$' "$T/out.optout"
check "re-staging: the container waited for the gate" grep -q 'waited [0-9]* ms for the staging gate' "$NRI_LOG"
check "re-staging: then got the view and the GPUs" \
	sh -c "grep -q 'view: yes' '$T/out.gate' && [ \$(grep -c 'GPU [0-9]: ' '$T/out.gate') -eq 2 ]"
check "no k8s.io cgroups left behind" sh -c "[ \"\$(ls -d /sys/fs/cgroup/*/k8s.io 2>/dev/null)\" = '$cgroups_before' ]"
finish
