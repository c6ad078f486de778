#!/bin/bash
# etc/helm/mokka: `helm lint` passes, and `helm template` with the default
# values renders exactly the objects `kubectl apply -k etc/kubernetes` makes
# (the DaemonSet of etc/kubernetes/daemonset.yaml and the mokka-profile
# ConfigMap from etc/kubernetes/profile.yaml, in namespace mokka-system,
# image localhost/mokka:0.1.0).  The values move what they say:
# containerRuntime.enabled/restartMode, profile.name/inline, nodeSelector,
# tolerations, resources, imex.enabled/channelCount/topology, nri.enabled
# (default on: mokka-nri's socket and staging-lock mounts; false: neither,
# --nri-plugin=false) and nri.socketPath; maxSurge > 0, an unknown restart
# mode and a relative socket path are refused.  helm is the release pinned in
# tests/go/versions.env, built by scripts/install-deps.sh.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nvidia_stack_lib.sh"

HELM=$(nv_need helm)
C=$S/etc/helm/mokka
export HELM_CACHE_HOME=$T/helm/cache HELM_CONFIG_HOME=$T/helm/config HELM_DATA_HOME=$T/helm/data
/usr/bin/python3 -c 'import yaml' 2>/dev/null || die "python3-yaml missing"

"$HELM" lint "$C" > "$T/lint" 2>&1
check "helm lint etc/helm/mokka" grep -q '1 chart(s) linted, 0 chart(s) failed' "$T/lint"
sed 's/^/#   /' "$T/lint" | grep -v '^#   $' | head -10

render() { # render OUT [helm args...]
	local out=$1; shift
	"$HELM" template mokka "$C" --namespace mokka-system "$@" > "$out" 2> "$out.err"
}
render "$T/default.yaml" || die "helm template: $(cat "$T/default.yaml.err")"

cat > "$T/cmp.py" <<'PYEOF'
import copy, sys, yaml
mode, rendered, src = sys.argv[1], sys.argv[2], sys.argv[3]
docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open(rendered)) if d}
ds = docs.get(("DaemonSet", "mokka"))
c = ds["spec"]["template"]["spec"]["containers"][0] if ds else None
args = c["args"] if c else []
fails = []
def want(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    cond or fails.append(what)
if mode == "default":
    exp = yaml.safe_load(open(src + "/etc/kubernetes/daemonset.yaml"))
    exp["metadata"]["namespace"] = "mokka-system"
    exp["spec"]["template"]["spec"]["containers"][0]["image"] = "localhost/mokka:0.1.0"
    want(ds == exp, "the DaemonSet equals etc/kubernetes/daemonset.yaml as kustomize sets it")
    if ds != exp:
        import difflib
        a = yaml.safe_dump(exp, sort_keys=True).splitlines()
        b = yaml.safe_dump(ds, sort_keys=True).splitlines()
        print("\n".join("#   " + l for l in difflib.unified_diff(a, b, "kustomize", "helm", lineterm="")))
    cm = docs.get(("ConfigMap", "mokka-profile"))
    prof = open(src + "/etc/kubernetes/profile.yaml").read()
    want(cm is not None and cm["metadata"].get("namespace") == "mokka-system" and
         cm["data"]["profile.yaml"].rstrip("\n") == prof.rstrip("\n"),
         "ConfigMap mokka-profile holds etc/kubernetes/profile.yaml")
    want(sorted(docs) == [("ConfigMap", "mokka-profile"), ("DaemonSet", "mokka")], "nothing else: %s" % sorted(docs))
    spec = ds["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in spec["volumes"]}
    mnts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    want("--nri-plugin=true" in args and "--nri-socket=/var/run/nri/nri.sock" in args and
         vols.get("nri-socket", {}).get("hostPath", {}).get("path") == "/run/nri" and
         mnts.get("nri-socket") == "/host/run/nri" and mnts.get("nri-staging") == "/host/run/nvml-mock",
         "nri (default on): mokka-nri's socket dir and staging lock dir are mounted")
elif mode == "nri-off":
    spec = ds["spec"]["template"]["spec"]
    names = {v["name"] for v in spec["volumes"]} | {m["name"] for m in c["volumeMounts"]}
    want("--nri-plugin=false" in args and not [a for a in args if a.startswith(("--nri-socket", "--staging-lock"))],
         "nri.enabled=false: --nri-plugin=false")
    want(not names & {"nri-socket", "nri-staging"}, "nri.enabled=false: no NRI mounts")
elif mode == "nri-socket":
    mnts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    want("--nri-socket=/var/run/containerd/nri/x.sock" in args and
         mnts.get("nri-socket") == "/host/run/containerd/nri",
         "nri.socketPath: the flag, and its directory mounted at its /run path")
elif mode == "values":
    want("--container-runtime=none" in args, "containerRuntime.enabled=false: --container-runtime=none")
    want("--container-runtime-restart=none" in args, "containerRuntime.restartMode=none")
    want("--imex-channels=false" in args and "--imex-channel-count=64" in args, "imex.enabled/channelCount")
    spec = ds["spec"]["template"]["spec"]
    want(spec["nodeSelector"] == {"pool": "gpu-sim"}, "nodeSelector")
    want(spec["tolerations"] == [{"key": "sim", "operator": "Exists", "effect": "NoSchedule"}], "tolerations")
    want(c["resources"] == {"limits": {"memory": "1Gi"}}, "resources")
    cm = docs[("ConfigMap", "mokka-profile")]
    want(cm["data"]["profile.yaml"].rstrip("\n") == open(src + "/etc/profiles/t4.yaml").read().rstrip("\n"),
         "profile.name=t4: the ConfigMap holds etc/profiles/t4.yaml")
    topo = docs.get(("ConfigMap", "mokka-topology"))
    want(topo is not None and yaml.safe_load(topo["data"]["topology.yaml"]) == {"clique": "x"},
         "imex.topology: ConfigMap mokka-topology made")
    vol = [v for v in spec["volumes"] if v["name"] == "topology"][0]
    want("optional" not in vol["configMap"], "the topology ConfigMap is then required")
elif mode == "inline":
    cm = docs[("ConfigMap", "mokka-profile")]
    want(yaml.safe_load(cm["data"]["profile.yaml"]) == {"version": "1.0", "system": {"driver_version": "1.2.3"}},
         "profile.inline is the ConfigMap's profile.yaml")
sys.exit(1 if fails else 0)
PYEOF
/usr/bin/python3 "$T/cmp.py" default "$T/default.yaml" "$S" || fail "default values"

cat > "$T/values.yaml" <<'EOF'
containerRuntime: {enabled: false, restartMode: none}
imex: {enabled: false, channelCount: 64, topology: "clique: x\n"}
profile: {name: t4}
nodeSelector: {mokka/simulate: null, pool: gpu-sim}    # null drops a default key
tolerations: [{key: sim, operator: Exists, effect: NoSchedule}]
resources: {requests: null, limits: {memory: 1Gi}}
EOF
render "$T/values.out" -f "$T/values.yaml" || fail "helm template -f values: $(cat "$T/values.out.err")"
/usr/bin/python3 "$T/cmp.py" values "$T/values.out" "$S" || fail "values"
render "$T/inline.out" --set-string 'profile.inline=version: "1.0"
system: {driver_version: "1.2.3"}' || fail "helm template profile.inline: $(cat "$T/inline.out.err")"
/usr/bin/python3 "$T/cmp.py" inline "$T/inline.out" "$S" || fail "inline"

render "$T/nri-off.out" --set nri.enabled=false || fail "helm template nri.enabled=false"
/usr/bin/python3 "$T/cmp.py" nri-off "$T/nri-off.out" "$S" || fail "nri.enabled=false"
render "$T/nri-sock.out" --set nri.socketPath=/var/run/containerd/nri/x.sock || fail "nri.socketPath"
/usr/bin/python3 "$T/cmp.py" nri-socket "$T/nri-sock.out" "$S" || fail "nri.socketPath"
if render "$T/nri-rel.out" --set nri.socketPath=nri.sock; then
	fail "a relative nri.socketPath rendered"
else
	check "a relative nri.socketPath refused" grep -q 'an absolute host path' "$T/nri-rel.out.err"
fi
if render "$T/surge.out" --set updateStrategy.maxSurge=1; then
	fail "maxSurge=1 rendered"
else
	check "maxSurge=1 refused with a reason" grep -q 'maxSurge must be 0' "$T/surge.out.err"
fi
if render "$T/mode.out" --set containerRuntime.restartMode=sometimes; then
	fail "restartMode=sometimes rendered"
else
	check "an unknown restartMode refused" grep -q 'systemd or none' "$T/mode.out.err"
fi
render "$T/bad.out" --set profile.name=nope && fail "profile.name=nope rendered"
check "an unknown profile name refused" grep -q 'no profiles/nope.yaml' "$T/bad.out.err"
finish
