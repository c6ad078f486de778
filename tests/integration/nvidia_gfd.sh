#!/bin/bash
# NVIDIA's gpu-feature-discovery (k8s-device-plugin's release pinned in
# tests/go/versions.env, built unmodified by scripts/install-deps.sh) once
# (--oneshot --output-file, no Kubernetes API) over every shipped profile.
# The node: gpudriver and pcibus staged standalone in a temp host root; GFD
# loads the mock NVML from the staged driver root and runs in a private
# mount namespace where the staged PCI tree is /sys (it reads each GPU's
# PCI class there: gpu.mode) and the staged MIG capability files are
# /proc/driver/nvidia{,-caps} (as on a real node).
#  * each profile's labels are what the real board gives, stated below:
#    gpu.product (the marketing name, spaces as dashes), gpu.count,
#    gpu.memory (MiB), gpu.family, gpu.compute.major/minor, the driver's
#    cuda.driver.major/minor/rev and its CUDA cuda.runtime.major/minor,
#    mig.capable, gpu.mode=compute, gpu.clique where the profile's fabric
#    registers one; product and count also agree with the profile file;
#  * MIG on an H100 profile (declared layouts): --mig-strategy=single with
#    every GPU 7 x 1g.10gb labels 56 x NVIDIA-H100-80GB-HBM3-MIG-1g.10gb
#    with the MIG profile's memory, SMs, slices and engines (nvidia-smi mig
#    -lgip of a real H100 80GB); --mig-strategy=mixed with GPU 0 {1g.10gb:
#    3, 2g.20gb: 2} and GPU 1 {3g.40gb: 2} labels each MIG type's count and
#    attributes beside the 8 full GPUs.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nvidia_stack_lib.sh"

[ "$(id -u)" -eq 0 ] || die "needs root"
command -v unshare >/dev/null || die "unshare missing"
/usr/bin/python3 -c 'import yaml' 2>/dev/null || die "python3-yaml missing (scripts/install-deps.sh)"
GFD=$(nv_need gpu-feature-discovery)
export MOKKA_PKGLIBDIR=${MOKKA_PKGLIBDIR:-$B/.libs}
echo "Mokka simulated node" > "$T/product_name"

# gfd NAME PROFILE [FLAGS...]: stage PROFILE under $T/NAME, run GFD once
# with FLAGS; its labels in $T/NAME.labels (sorted).
gfd() {
	local n=$1 p=$2 h=$T/$1 dr w
	dr=$h$R/driver
	shift 2
	mkdir -p "$h"
	for w in gpudriver pcibus; do
		"$B/mokka-worker-$w" --host-root "$h" --config "$p" stage > "$T/$n.stage-$w.log" 2>&1 ||
			{ sed 's/^/#   /' "$T/$n.stage-$w.log" | tail -5; fail "$n: staging $w"; return 1; }
	done
	cat > "$T/$n.ns.sh" <<NSEOF
mount --bind "$h$R/sys" /sys || exit 90
mount -t tmpfs none /proc/driver && mkdir /proc/driver/nvidia /proc/driver/nvidia-caps || exit 92
mount --bind "$dr/proc/driver/nvidia" /proc/driver/nvidia || exit 93
mount --bind "$dr/proc/driver/nvidia-caps" /proc/driver/nvidia-caps || exit 94
exec env -u MOCK_NVML_CONFIG -u MOCK_NVML_OVERRIDES LD_LIBRARY_PATH="$dr/usr/lib64" \
	"$GFD" --oneshot --output-file="$T/$n.out" --driver-root-ctr-path="$dr" \
	--machine-type-file="$T/product_name" --no-timestamp --fail-on-init-error=true $*
NSEOF
	if ! timeout 60 unshare -m --propagation private bash "$T/$n.ns.sh" > "$T/$n.log" 2>&1; then
		grep -v '^ \|^[{}]' "$T/$n.log" | tail -10 | sed 's/^/#   /'
		fail "$n: gpu-feature-discovery $* exited non-zero"
		return 1
	fi
	sort "$T/$n.out" > "$T/$n.labels"
}

# expect NAME LABEL=VALUE...: GFD wrote each label with exactly that value
# ("LABEL=" alone: GFD wrote no such label).
expect() {
	local n=$1 kv l
	shift
	for kv in "$@"; do
		l=nvidia.com/${kv%%=*}
		if [ -z "${kv#*=}" ]; then
			check "$n: no $l" sh -c "! grep -q '^$l=' '$T/$n.labels'"
		else
			check "$n: $l=${kv#*=}" grep -qxF "nvidia.com/$kv" "$T/$n.labels"
		fi
	done
}

# ---- every shipped profile: what its real board gives
# profile product count memory(MiB) family compute driver cuda mig.capable clique
CLQ=00000000-0000-0000-0000-000000000001.0
while read -r prof product count mem family cc drv cuda mig clique; do
	[ -f "$S/etc/profiles/$prof.yaml" ] || { fail "$prof: no etc/profiles/$prof.yaml"; continue; }
	gfd "$prof" "$S/etc/profiles/$prof.yaml" || continue
	IFS=. read -r dmaj dmin drev <<< "$drv"
	[ "$clique" = - ] && clique=
	expect "$prof" gpu.product="$product" gpu.count="$count" gpu.memory="$mem" \
		gpu.family="$family" gpu.compute.major="${cc%.*}" gpu.compute.minor="${cc#*.}" \
		cuda.driver.major="$dmaj" cuda.driver.minor="$dmin" cuda.driver.rev="$drev" \
		cuda.driver-version.full="$drv" cuda.runtime.major="${cuda%.*}" \
		cuda.runtime.minor="${cuda#*.}" mig.capable="$mig" gpu.mode=compute \
		gpu.clique="$clique" mig.strategy=
	# and the profile file says the same name and count
	/usr/bin/python3 - "$S/etc/profiles/$prof.yaml" "$product" "$count" <<'PYEOF' ||
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
name = (p.get("device_defaults") or {}).get("name") or p["devices"][0].get("name")
sys.exit(not (name.replace(" ", "-") == sys.argv[2] and len(p["devices"]) == int(sys.argv[3])))
PYEOF
		fail "$prof: the profile's name or GPU count differs from $product x $count"
done <<EOF
a100		NVIDIA-A100-SXM4-40GB	8 40960  ampere       8.0  550.163.01 12.4 true  -
b200		NVIDIA-B200		8 183359 blackwell    10.0 570.124.06 12.8 true  $CLQ
gb200		NVIDIA-GB200		8 189471 blackwell    10.0 580.65.06  13.0 true  $CLQ
gb300		NVIDIA-GB300		8 284208 blackwell    10.3 580.65.06  13.0 true  $CLQ
h100		NVIDIA-H100-80GB-HBM3	8 81559  hopper       9.0  550.163.01 12.4 true  $CLQ
h100-amd-metax	NVIDIA-H100-80GB-HBM3	8 81559  hopper       9.0  550.163.01 12.4 true  $CLQ
h200		NVIDIA-H200		8 143771 hopper       9.0  550.163.01 12.4 true  $CLQ
l40s		NVIDIA-L40S		8 46068  ada-lovelace 8.9  550.163.01 12.4 false -
t4		Tesla-T4		4 15360  turing       7.5  550.163.01 12.4 false -
EOF
n=$(ls "$S"/etc/profiles/*.yaml | wc -l)
check "every shipped profile ($n) was labelled" [ "$(ls "$T"/*.labels | wc -l)" -eq "$n" ]

# ---- MIG strategies over declared layouts (H100 80GB)
nv_mig_layouts "$S/etc/profiles/h100.yaml" "$T" 1g.10gb 2g.20gb 3g.40gb
# MIG profile facts of a real H100 80GB (nvidia-smi mig -lgip): memory
# MiB, SMs, slices, copy/decoder/encoder/JPEG/OFA engines.
P=NVIDIA-H100-80GB-HBM3
mig_attrs() { # mig_attrs PREFIX PROFILE MEM SM SLICES CE DEC ENC JPG OFA
	echo "$1product=$P-MIG-$2" "$1memory=$3" "$1multiprocessors=$4" "$1slices.gi=$5" \
		"$1slices.ci=$5" "$1engines.copy=$6" "$1engines.decoder=$7" \
		"$1engines.encoder=$8" "$1engines.jpeg=$9" "$1engines.ofa=${10}"
}
if gfd single "$T/single.yaml" --mig-strategy=single; then
	# shellcheck disable=SC2046
	expect single mig.strategy=single mig.capable=true gpu.count=56 gpu.family=hopper \
		gpu.compute.major=9 gpu.compute.minor=0 \
		$(mig_attrs gpu. 1g.10gb 9984 16 1 1 1 0 1 0)
fi
if gfd mixed "$T/mixed.yaml" --mig-strategy=mixed; then
	# shellcheck disable=SC2046
	expect mixed mig.strategy=mixed mig.capable=true gpu.count=8 gpu.product=$P \
		gpu.memory=81559 mig-1g.10gb.count=3 mig-2g.20gb.count=2 mig-3g.40gb.count=2 \
		$(mig_attrs mig-1g.10gb. 1g.10gb 9984 16 1 1 1 0 1 0) \
		$(mig_attrs mig-2g.20gb. 2g.20gb 20096 32 2 2 2 0 2 0) \
		$(mig_attrs mig-3g.40gb. 3g.40gb 40448 60 3 3 3 0 3 0)
fi
[ "$FAILS" -eq 0 ] || for f in "$T"/*.labels; do note "$(basename "$f"):"; sed 's/^/#   /' "$f"; done
finish
