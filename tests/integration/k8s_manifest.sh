#!/bin/bash
# etc/kubernetes: the DaemonSet and kustomization are valid YAML whose
# every flag, env, port, probe, hostPath and ConfigMap mount matches what
# mokka-supervisor reads.  Static checks parse the manifests; then the
# supervisor under test runs with the manifest's own args against a temp
# host root laid out like a node, the probe paths are fetched from it, and
# every path it writes must lie under a writable hostPath mount (the rest
# of the host is read-only at /host in the pod).  NRI is on (mokka-nri, the
# supervisor's daemon): containerd's NRI socket directory is mounted where
# the plugin resolves it inside /host, the staging lock lies under a
# writable mount, and the plugin runs with the manifest's socket.
. "$(dirname "$0")/../lib.sh"

K=$S/etc/kubernetes
PY=/usr/bin/python3
$PY -c 'import yaml' 2>/dev/null || die "python3-yaml missing (scripts/install-deps.sh installs it)"
VERSION=$("$B/mokka-supervisor" --version | awk '{print $2}')

# ---- static checks; facts for the dynamic part go to $T/facts.sh ----------
$PY - "$K" "$S" "$VERSION" "$T/facts.sh" <<'PY' || fail "static checks crashed"
import json, os, re, shlex, sys
import yaml

kdir, src, version, facts_out = sys.argv[1:5]
fails = 0

def ok(msg): print("ok: " + msg)
def bad(msg):
    global fails
    fails += 1
    print("FAIL: " + msg)
def check(cond, msg):
    ok(msg) if cond else bad(msg)

def load(name):
    with open(os.path.join(kdir, name)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    return docs

def duration_s(v):
    units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    total, pos = 0.0, 0
    for m in re.finditer(r"([0-9.]+)(ns|us|ms|s|m|h)", v):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * units[m.group(2)]
        pos = m.end()
    return total if pos == len(v) and v else None

kust = load("kustomization.yaml")
check(len(kust) == 1 and kust[0].get("kind") == "Kustomization", "kustomization.yaml is one Kustomization")
kust = kust[0]
docs = {}
for r in kust.get("resources", []):
    path = os.path.join(kdir, r)
    if not os.path.isfile(path):
        bad("kustomization resource %s does not exist" % r)
        continue
    for d in load(r):
        docs[d["kind"]] = d
ds = docs.get("DaemonSet")
if not ds:
    bad("no DaemonSet among the kustomization's resources")
    sys.exit(1)
check(ds.get("apiVersion") == "apps/v1", "DaemonSet is apps/v1")
ns = docs.get("Namespace")
check(ns is not None and ns["metadata"]["name"] == kust.get("namespace"),
      "the kustomization's namespace (%s) is the Namespace it creates" % kust.get("namespace"))
check(ns is not None and ns["metadata"].get("labels", {}).get("pod-security.kubernetes.io/enforce") == "privileged",
      "the namespace admits privileged pods")

spec = ds["spec"]
tmpl = spec["template"]
pod = tmpl["spec"]
sel = spec["selector"]["matchLabels"]
check(all(tmpl["metadata"]["labels"].get(k) == v for k, v in sel.items()),
      "selector matches the pod template's labels")
check(len(pod["containers"]) == 1, "one container")
c = pod["containers"][0]
check(c.get("securityContext", {}).get("privileged") is True, "container is privileged")

# The image the kustomization sets, at this version.
imgs = {i["name"]: i for i in kust.get("images", [])}
check(c["image"] in imgs and str(imgs[c["image"]].get("newTag")) == version,
      "kustomization sets image %s to tag %s" % (c["image"], version))

# command: the binary the Dockerfile's ENTRYPOINT names.
with open(os.path.join(src, "Dockerfile")) as f:
    ep = [json.loads(l.split(None, 1)[1]) for l in f if l.startswith("ENTRYPOINT")]
check(ep and c.get("command") == ep[-1][:1],
      "command %s is the image's ENTRYPOINT binary" % c.get("command"))

# args: --name=value or --name
args = c.get("args", [])
flags = {}
for a in args:
    m = re.fullmatch(r"--([a-z][a-z0-9-]*)(?:=(.*))?", a)
    if not m:
        bad("arg %r is not --name or --name=value" % a)
        continue
    flags[m.group(1)] = m.group(2)
host_root = flags.get("host-root", "/")
check(host_root == "/host", "--host-root=/host")

# Health: port, probes, grace period.
m = re.fullmatch(r"(.*):([0-9]+)", flags.get("health-addr", ":9091"))
hport = int(m.group(2)) if m else None
# Set explicitly, on every interface: the kubelet probes the pod IP.
check("health-addr" in flags, "--health-addr is set explicitly")
check(m is not None and m.group(1) in ("", "0.0.0.0", "[::]"),
      "--health-addr %s listens on every interface (kubelet probes the pod IP)"
      % flags.get("health-addr"))
check(not pod.get("hostNetwork"), "no hostNetwork: the health port is on the pod network only")
ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
check(ports.get("health") == hport, "containerPort 'health' (%s) is --health-addr's port (%s)" % (ports.get("health"), hport))
probe_paths = set()
for probe, want in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
    p = c.get(probe, {}).get("httpGet")
    if not p:
        bad("%s is not an httpGet probe" % probe)
        continue
    check(p["path"] == want and p["port"] in ("health", hport),
          "%s: GET %s on the health port" % (probe, p["path"]))
    probe_paths.add(p["path"])
grace = pod.get("terminationGracePeriodSeconds", 30)
shut = duration_s(flags.get("shutdown-timeout", "8s"))
check(shut is not None and grace >= shut + 5,
      "terminationGracePeriodSeconds %s leaves room after --shutdown-timeout %ss" % (grace, shut))

rt = flags.get("container-runtime", "containerd")
ru = spec.get("updateStrategy", {}).get("rollingUpdate", {})
check(rt == "none" or (spec["updateStrategy"]["type"] == "RollingUpdate" and ru.get("maxSurge") == 0),
      "maxSurge 0 while --container-runtime=%s" % rt)
restart = flags.get("container-runtime-restart", "systemd")
check(rt == "none" or restart != "systemd" or pod.get("hostPID") is True,
      "hostPID for --container-runtime-restart=systemd")

# Env: NODE_NAME from the downward API.
env = {e["name"]: e for e in c.get("env", [])}
check(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName",
      "NODE_NAME comes from spec.nodeName")

# Volumes and mounts.
vols = {v["name"]: v for v in pod.get("volumes", [])}
mounts = c.get("volumeMounts", [])
used = {vm["name"] for vm in mounts}
check(all(vm["name"] in vols for vm in mounts), "every volumeMount has a volume")
check(set(vols) <= used, "every volume is mounted")
writable, bidir = [], []
kernel_log = flags.get("kernel-log", "/dev/kmsg")
for vm in mounts:
    v = vols.get(vm["name"], {})
    if "hostPath" in v:
        hp = v["hostPath"]["path"]
        if hp == "/":
            check(vm["mountPath"] == host_root and vm.get("readOnly") is True
                  and vm.get("mountPropagation") == "HostToContainer",
                  "host / is mounted read-only at %s (HostToContainer)" % host_root)
        elif v["hostPath"].get("type") == "CharDevice":
            check(hp == kernel_log and vm["mountPath"] == kernel_log,
                  "the kernel log device %s is mounted at --kernel-log's path" % hp)
        else:
            check(vm["mountPath"] == host_root.rstrip("/") + hp and not vm.get("readOnly"),
                  "hostPath %s is writable at %s%s" % (hp, host_root, hp))
            check(v["hostPath"].get("type") == "DirectoryOrCreate", "hostPath %s is DirectoryOrCreate" % hp)
            writable.append(hp)
            if vm.get("mountPropagation") == "Bidirectional":
                bidir.append(hp)
# gpudriver bind-mounts the driver tree at /run/nvidia/driver: the host
# sees it only through a Bidirectional mount.
check(any("/run/nvidia/driver".startswith(b.rstrip("/") + "/") for b in bidir),
      "/run/nvidia/driver lies under a Bidirectional mount")

# NRI (on unless --nri-plugin=false): mokka-nri dials --nri-socket inside
# the host root, where /var/run is a link to /run, so that directory must
# be a mount at /host + its /run path; the staging lock lies under a
# writable mount (the supervisor creates it).
nri_on = str(flags.get("nri-plugin", "true")).lower() not in ("false", "0", "no", "off")
nri_sock = flags.get("nri-socket") or "/var/run/nri/nri.sock"
nri_dir = re.sub(r"^/var/run(/|$)", r"/run\1", os.path.dirname(nri_sock))
lock = flags.get("staging-lock-path", "/run/nvml-mock/nri-staging.lock")
check(nri_on, "NRI is on (--nri-plugin=%s): the node runs mokka-nri" % flags.get("nri-plugin", "(default)"))
if nri_on:
    check(any(vols.get(vm["name"], {}).get("hostPath", {}).get("path") == nri_dir and
              vm["mountPath"] == host_root.rstrip("/") + nri_dir for vm in mounts),
          "containerd's NRI socket directory %s is mounted at %s%s" % (nri_dir, host_root, nri_dir))
    check(lock == "" or any(lock.startswith(w.rstrip("/") + "/") for w in writable),
          "the staging lock %s lies under a writable mount" % lock)
    check(env.get("NVML_MOCK_EXCLUDED_NAMESPACES", {}).get("valueFrom", {}).get("fieldRef", {})
          .get("fieldPath") == "metadata.namespace",
          "mokka-nri leaves the node pod's own namespace alone (NVML_MOCK_EXCLUDED_NAMESPACES)")

# ConfigMaps: --config and --topology are files in directory mounts.
gen = {g["name"]: g for g in kust.get("configMapGenerator", [])}
check(kust.get("generatorOptions", {}).get("disableNameSuffixHash") is True,
      "generated ConfigMaps keep their names (edits reach pods via ..data)")
cm_dirs = {}
for flag in ("config", "topology"):
    path = flags.get(flag)
    if not path:
        bad("--%s is not set" % flag)
        continue
    d, key = os.path.split(path)
    vm = [m for m in mounts if m["mountPath"] == d]
    if not vm:
        bad("--%s=%s: no volume is mounted at %s" % (flag, path, d))
        continue
    vm = vm[0]
    v = vols[vm["name"]]
    check("configMap" in v and "subPath" not in vm,
          "--%s lives in a ConfigMap mounted as a directory (%s)" % (flag, d))
    cm = v.get("configMap", {})
    g = gen.get(cm.get("name"))
    if g:
        keys = {f.split("=", 1)[0] if "=" in f else os.path.basename(f): f.split("=", 1)[-1]
                for f in g.get("files", [])}
        check(key in keys and os.path.isfile(os.path.join(kdir, keys[key])),
              "ConfigMap %s (generated) has key %s from an existing file" % (cm["name"], key))
        cm_dirs[flag] = (d, os.path.join(kdir, keys.get(key, "")))
    else:
        check(cm.get("optional") is True,
              "ConfigMap %s is not generated, so it is optional" % cm.get("name"))
        cm_dirs[flag] = (d, "")

with open(os.path.join(kdir, "profile.yaml"), "rb") as a, \
     open(os.path.join(src, "etc/profiles/h100.yaml"), "rb") as b:
    check(a.read() == b.read(), "etc/kubernetes/profile.yaml is etc/profiles/h100.yaml")

with open(facts_out, "w") as f:
    f.write("ARGS=(%s)\n" % " ".join(shlex.quote(a) for a in args))
    f.write("FLAGS=(%s)\n" % " ".join(shlex.quote(k) for k in flags))
    f.write("ENVS=(%s)\n" % " ".join(shlex.quote(k) for k in env))
    f.write("WRITABLE=(%s)\n" % " ".join(shlex.quote(w) for w in writable))
    f.write("PROBES=(%s)\n" % " ".join(sorted(probe_paths)))
    f.write("NRI_SOCK=%s\n" % shlex.quote(nri_sock if nri_on else ""))
    for flag, (d, file) in cm_dirs.items():
        f.write("CM_%s_DIR=%s\nCM_%s_FILE=%s\n" % (flag, shlex.quote(d), flag, shlex.quote(file)))
sys.exit(1 if fails else 0)
PY
[ $? -eq 0 ] || FAILS=$((FAILS + 1))
[ -f "$T/facts.sh" ] || die "static checks wrote no facts"
. "$T/facts.sh"

# ---- flags and env against the binary --------------------------------------
"$B/mokka-supervisor" --help > "$T/help.txt"
for f in "${FLAGS[@]}"; do
	grep -q -- "--$f\b" "$T/help.txt" || fail "--$f is not a mokka-supervisor option"
done
check "all ${#FLAGS[@]} flags are mokka-supervisor options" true
# mokka-nri inherits the supervisor's environment and reads its own names
for e in "${ENVS[@]}"; do
	grep -aqx "$e" <(strings "$B/mokka-supervisor" "$B/mokka-nri") ||
		fail "env $e is read by neither mokka-supervisor nor mokka-nri"
done

# ---- run the supervisor with the manifest's args -----------------------------
# The host root looks like a node: /var/run -> /run, containerd's config.
mkdir -p "$ROOT/var" "$ROOT/run" "$ROOT/etc/containerd" "$ROOT/usr/bin"
ln -s /run "$ROOT/var/run"
# Its config already imports conf.d (cri would add that entry and, by
# design, leave it on shutdown; here the root must come back unchanged).
printf 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n' > "$ROOT/etc/containerd/config.toml"
# cri looks for containerd on the host's PATH (it never runs it here).
printf '#!/bin/sh\nexit 0\n' > "$ROOT/usr/bin/containerd" && chmod 755 "$ROOT/usr/bin/containerd"
# The ConfigMaps as kubelet lays them out: <dir>/<key> -> ..data/<key>,
# ..data -> ..<timestamp>/ (an absent optional one is an empty directory).
cm_dir() { # cm_dir DIR [FILE]
	local d=$T/cm$1
	mkdir -p "$d"
	[ -n "${2:-}" ] || return 0
	mkdir -p "$d/..2024_01_01_00_00_00.1"
	cp "$2" "$d/..2024_01_01_00_00_00.1/"
	ln -s ..2024_01_01_00_00_00.1 "$d/..data"
	ln -s "..data/$(basename "$2")" "$d/$(basename "$2")"
}
cm_dir "$CM_config_DIR" "$CM_config_FILE"
cm_dir "$CM_topology_DIR" "$CM_topology_FILE"
# The mount points kubelet creates (DirectoryOrCreate) exist before the pod.
for w in "${WRITABLE[@]}"; do mkdir -p "$ROOT$w"; done
tree_snapshot "$ROOT" > "$T/before"

run_args=()
for a in "${ARGS[@]}"; do
	case $a in
	# start_supervisor gives the temp root and a free port.
	--host-root=*|--health-addr=*) ;;
	--config=*|--topology=*) run_args+=("${a%%=*}=$T/cm${a#*=}") ;;
	# Restarting containerd through the host's systemd has no place here.
	--container-runtime-restart=*) run_args+=(--container-runtime-restart=none) ;;
	# The kernel log is the real one: keep this test's lines out of it.
	--kernel-log=*) ;;
	*) run_args+=("$a") ;;
	esac
done
run_args+=(--kernel-log=)
note "args: ${run_args[*]}"
start_supervisor "${run_args[@]}"
wait_for 30 is_code /healthz 200 || fail "/healthz: $(http /healthz) $(cat "$T/body")"
wait_for 30 is_code /readyz 200 || note "/readyz: $(http /readyz) $(cat "$T/body")"
for p in "${PROBES[@]}"; do
	code=$(http "$p")
	check "probe path $p is served (HTTP $code)" [ "$code" = 200 ]
done
grep -q '"level"' "$T/sup.log" || fail "--log-format=json: the log is not JSON"
# Every line, the workers' and daemons' included (they take the format
# from MOKKA_LOG_FORMAT), is one JSON record with a level and component.
notjson() {
	python3 -c 'import json, sys
bad = 0
for line in open(sys.argv[1], errors="replace"):
    if not line.strip():
        continue
    try:
        r = json.loads(line)
        assert isinstance(r, dict) and "level" in r and "component" in r
    except Exception:
        bad += 1
        print(line.rstrip()[:200], file=sys.stderr)
sys.exit(1 if bad else 0)' "$1"
}
wait_for 10 test -e "$ROOT$R/driver/usr/bin/nvidia-smi" || fail "driver tree not staged"
if [ -n "$NRI_SOCK" ]; then
	nri=$(pgrep -P "$SUP_PID" -f '^mokka-nri ' | head -1)
	check "mokka-nri runs under the supervisor" test -n "$nri"
	check "mokka-nri dials $NRI_SOCK inside the host root" \
		grep -q -- "--host-root $ROOT --socket-path $NRI_SOCK " <(tr '\0' ' ' < "/proc/${nri:-0}/cmdline")
fi

# Everything written lies under a writable mount.
tree_snapshot "$ROOT" > "$T/during"
# New or changed entries: the snapshot's path field is the one starting "./".
diff "$T/before" "$T/during" | awk '/^>/ { for (i = 2; i <= NF; i++) if ($i ~ /^\.\//) { print substr($i, 2); break } }' |
	sort -u > "$T/written"
while read -r p; do
	under=
	for w in "${WRITABLE[@]}"; do
		case $p in "$w"|"$w"/*) under=$w; break ;; esac
	done
	[ -n "$under" ] || fail "wrote $p, outside every writable hostPath mount"
done < "$T/written"
check "the supervisor wrote $(wc -l < "$T/written") paths, all under writable mounts" [ -s "$T/written" ]

stop_and_check_teardown "$(daemon_pid)"
check "--log-format=json: every line of the supervisor's, workers' and daemons' log is a JSON record" \
	notjson "$T/sup.log"
finish
