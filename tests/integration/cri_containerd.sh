#!/bin/bash
# containerd setup through the supervisor into a temp host root that has a
# static busybox shell, a fake systemctl recording its calls (the restart
# is chrooted into the root: the real containerd is never touched), a fake
# containerd on the PATH and a site config.toml with comments and its own
# cri table.  Then the real containerd 1.6 reads the result, in a private
# mount namespace with the root's /etc/containerd bound over the real one:
# `config dump` shows the nvidia handler as the default (with the site's
# cri settings kept) and a private daemon (own root, state, sockets) starts
# with it.  Re-apply is byte-stable and restarts nothing; Revoke removes
# the drop-in, queues a restart and leaves config.toml as it was but for
# the imports entry.  Then: restart mode none with the NRI plugin on, and
# the toolkit + nvidia-ctk path (a fake nvidia-ctk), including a broken
# drop-in from it being undone.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
for t in containerd ctr busybox unshare; do
	command -v "$t" >/dev/null || { echo "SKIP: $t missing (scripts/install-deps.sh)"; exit 77; }
done
[ -d /etc/containerd ] || { echo "SKIP: no /etc/containerd to bind over"; exit 77; }
[ -x "${MOKKA_NVIDIA_SMI:-}" ] || { echo "SKIP: no nvidia-smi (scripts/fetch-consumers.sh)"; exit 77; }

CFG=$ROOT/etc/containerd/config.toml
DROPIN=$ROOT/etc/containerd/conf.d/50-mokka.toml
cat > "$T/fixture.toml" <<'EOF'
# Site containerd config: every byte of this must survive.
version = 2
oom_score = -999

[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.9"   # pinned
    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = true
EOF

exe() { # exe PATH-UNDER-ROOT < script
	mkdir -p "$(dirname "$ROOT$1")"
	cat > "$ROOT$1"
	chmod 755 "$ROOT$1"
}

make_root() {
	rm -rf "$ROOT"
	mkdir -p "$ROOT/bin" "$ROOT/etc/containerd"
	cp "$(command -v busybox)" "$ROOT/bin/busybox"
	for a in sh cat mkdir dirname; do ln -s busybox "$ROOT/bin/$a"; done
	exe /usr/bin/systemctl <<'EOF'
#!/bin/sh
# is-active: the restarted containerd came back (not a call we count)
[ "$1" = is-active ] && { echo active; exit 0; }
echo "IN_CHROOT=$SYSTEMD_IN_CHROOT IGNORE_CHROOT=$SYSTEMD_IGNORE_CHROOT $*" >> /systemctl.calls
EOF
	exe /usr/bin/containerd <<'EOF'
#!/bin/sh
exit 0
EOF
	cp "$T/fixture.toml" "$CFG"
	tree_snapshot "$ROOT" > "$T/before"
}

calls() { [ -f "$ROOT/systemctl.calls" ] && wc -l < "$ROOT/systemctl.calls" || echo 0; }

stop() { # stop: SIGTERM, wait for the teardown
	kill -TERM "$SUP_PID"
	wait_for 20 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "supervisor did not exit"
	wait "$SUP_PID" 2>/dev/null
	SUP_PID=
}

# The config.toml we expect after Apply: the fixture with one line added.
imports_only() {
	diff "$T/fixture.toml" "$CFG" > "$T/cfg.diff"
	[ "$(grep -c '^[<>]' "$T/cfg.diff")" -eq 2 ] &&
		grep -qx '> imports = \["/etc/containerd/conf.d/\*.toml"\]' "$T/cfg.diff" &&
		grep -qx '> ' "$T/cfg.diff"
}

# Real containerd over the root's /etc/containerd, in a private namespace
# whose /run, /var/lib and /opt are overlays (nothing it does can land on
# this machine).
real_containerd() {
	mkdir -p "$T/ctrd"
	cat > "$T/daemon.toml" <<EOF
version = 2
root = "$T/ctrd/root"
state = "$T/ctrd/state"
imports = ["/etc/containerd/config.toml"]
[grpc]
  address = "$T/ctrd/c.sock"
[ttrpc]
  address = "$T/ctrd/c.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$T/ctrd/opt"
EOF
	cat > "$T/ctrd.sh" <<EOF
for d in run var/lib opt; do
	n=\$(echo \$d | tr / _)
	mkdir -p "$T/ov/\$n/up" "$T/ov/\$n/work"
	mount -t overlay overlay -o "lowerdir=/\$d,upperdir=$T/ov/\$n/up,workdir=$T/ov/\$n/work" "/\$d" || exit 90
done
mount --bind "$ROOT/etc/containerd" /etc/containerd || exit 91
containerd --config /etc/containerd/config.toml config dump > "$T/dump.toml" 2> "$T/dump.err"
echo \$? > "$T/dump.rc"
timeout -s INT 20 containerd --config "$T/daemon.toml" > "$T/ctrd.log" 2>&1 &
c=\$!
for i in \$(seq 100); do [ -S "$T/ctrd/c.sock" ] && break; sleep 0.1; done
ctr --address "$T/ctrd/c.sock" version > "$T/ctr.out" 2>&1
echo \$? > "$T/ctr.rc"
kill -INT \$c
wait \$c
exit 0
EOF
	unshare -m --propagation private bash "$T/ctrd.sh" || fail "namespace setup for containerd failed"
}

# ---- A: restart through the host root's systemd ----
make_root
start_supervisor --simulators gpudriver,cri --config "$S/etc/profiles/h100.yaml"
wait_for 30 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"
check "A: drop-in written" test -f "$DROPIN"
check "A: drop-in starts with Mokka's mark" grep -q '^# Written by Mokka (mokka-worker-cri)' "$DROPIN"
check "A: config.toml gained only the imports entry" imports_only
check "A: containerd restarted once, through the root's systemctl, chroot env set" \
	sh -c "[ \$(cat '$ROOT/systemctl.calls' | wc -l) -eq 1 ] &&
	       grep -qx 'IN_CHROOT=0 IGNORE_CHROOT=1 restart containerd.service' '$ROOT/systemctl.calls'"
check "A: specs published too" test -f "$ROOT/var/run/cdi/nvidia.yaml"
real_containerd
check "A: containerd config dump rc 0 ($(cat "$T/dump.err" | head -2))" grep -qx 0 "$T/dump.rc"
check "A: dump: nvidia is the default runtime" \
	sh -c "grep -A1 'plugins.\"io.containerd.grpc.v1.cri\".containerd\]\$' '$T/dump.toml' | grep -q 'default_runtime_name = \"nvidia\"'"
check "A: dump: the nvidia runtime is runc.v2 with the site's SystemdCgroup" \
	sh -c "grep -A10 'runtimes.nvidia\]\$' '$T/dump.toml' | grep -q 'runtime_type = \"io.containerd.runc.v2\"' &&
	       grep -A1 'runtimes.nvidia.options\]\$' '$T/dump.toml' | grep -q 'SystemdCgroup = true'"
check "A: dump: the site's sandbox_image kept" grep -q 'sandbox_image = "registry.k8s.io/pause:3.9"' "$T/dump.toml"
check "A: dump: the drop-in is imported" grep -q '50-mokka.toml' "$T/dump.toml"
check "A: private containerd started with it (ctr version answered)" grep -qx 0 "$T/ctr.rc"
check "A: its cri plugin runs nvidia by default" grep -q 'DefaultRuntimeName:nvidia' "$T/ctrd.log"
check "A: nothing under this machine's containerd dirs" \
	sh -c "! ls /run/containerd /var/lib/containerd /opt/containerd >/dev/null 2>&1"

stop
check "A: Revoke removed the drop-in" test ! -e "$DROPIN"
check "A: Revoke queued a restart (--no-block)" \
	sh -c "[ \$(wc -l < '$ROOT/systemctl.calls') -eq 2 ] &&
	       tail -1 '$ROOT/systemctl.calls' | grep -qx 'IN_CHROOT=0 IGNORE_CHROOT=1 restart --no-block containerd.service'"
check "A: Revoke left config.toml as it was but for the imports entry" imports_only
cp "$T/fixture.toml" "$CFG"
rm -f "$ROOT/systemctl.calls"
check_root_restored

# Re-apply: a new generation, the same bytes, no restart.
ident() { stat -c '%i %Y' "$DROPIN" "$CFG"; sha1sum "$DROPIN" "$CFG"; }
make_root
cp "$S/etc/profiles/h100.yaml" "$T/p1.yaml"
sed 's/^\(\s*driver_version:\).*/\1 "550.999.01"/' "$T/p1.yaml" > "$T/p2.yaml"
start_supervisor --simulators gpudriver,cri --config "$T/p1.yaml"
wait_for 30 is_code /readyz 200 || die "/readyz never became 200: $(cat "$T/body")"
check "A2: one restart for the first Apply" [ "$(calls)" -eq 1 ]
ident > "$T/ident.1"
cp "$T/p2.yaml" "$T/p1.yaml.new" && mv "$T/p1.yaml.new" "$T/p1.yaml"
wait_for 20 grep -q 'generation 2 published' "$T/sup.log" || fail "A2: no generation 2"
ident > "$T/ident.2"
check "A2: re-apply is byte-stable (same inodes, times, bytes)" cmp -s "$T/ident.1" "$T/ident.2"
check "A2: re-apply restarted nothing" [ "$(calls)" -eq 1 ]
stop

# ---- B: restart mode none, NRI plugin on ----
make_root
start_supervisor --simulators cri --container-runtime-restart none --nri-plugin \
	--nri-socket /run/nri/test.sock
wait_for 30 is_code /readyz 200 || die "B: /readyz never became 200: $(cat "$T/body")"
check "B: ready, and the log says a restart is pending" grep -q 'restart pending' "$T/sup.log"
check "B: systemctl never called" [ "$(calls)" -eq 0 ]
check "B: the drop-in carries the whole NRI table" \
	sh -c "grep -A8 'io.containerd.nri.v1.nri' '$DROPIN' | tr -d ' ' > '$T/nri' &&
	       for k in disable=false disable_connections=false 'socket_path=\"/run/nri/test.sock\"' \
	                'plugin_path=\"/opt/nri/plugins\"' 'plugin_config_path=\"/etc/nri/conf.d\"' \
	                'plugin_registration_timeout=\"5s\"' 'plugin_request_timeout=\"2s\"'; do
	           grep -qx \"\$k\" '$T/nri' || exit 1; done"
real_containerd
check "B: containerd 1.6 still loads it (it ignores the NRI table)" grep -qx 0 "$T/dump.rc"
stop
check "B: Revoke removed the drop-in and said the restart is pending" \
	sh -c "test ! -e '$DROPIN' && [ \$(grep -c 'restart pending' '$T/sup.log') -ge 2 ]"
cp "$T/fixture.toml" "$CFG"
check_root_restored

# ---- C: the toolkit, and nvidia-ctk doing the drop-in ----
make_root
TK=$T/toolkit
mkdir -p "$TK"
for b in nvidia-container-runtime nvidia-cdi-hook; do printf '#!/bin/sh\nexit 0\n' > "$TK/$b"; done
cat > "$TK/nvidia-ctk" <<'EOF'
#!/bin/sh
echo "$*" >> /ctk.calls
for a; do case $a in --drop-in-config=*) d=${a#--drop-in-config=} ;; esac; done
mkdir -p "$(dirname "$d")"
if [ -e /ctk.broken ]; then echo '[plugins' > "$d"; exit 0; fi
cat > "$d" <<'TOML'
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "nvidia"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
        BinaryName = "/usr/bin/nvidia-container-runtime"
TOML
EOF
chmod 755 "$TK"/*
export MOKKA_CONTAINER_TOOLKIT_DIR=$TK
start_supervisor --simulators gpudriver,cri --nri-plugin
wait_for 30 is_code /readyz 200 || die "C: /readyz never became 200: $(cat "$T/body")"
for b in nvidia-container-runtime nvidia-ctk nvidia-cdi-hook; do
	check "C: $b installed and linked from /usr/bin" \
		sh -c "cmp -s '$TK/$b' '$ROOT/usr/local/nvml-mock/toolkit/$b' &&
		       [ \"\$(readlink '$ROOT/usr/bin/$b')\" = /usr/local/nvml-mock/toolkit/$b ]"
done
check "C: runtime config in CDI mode, linked from /etc/nvidia-container-runtime" \
	sh -c "grep -q 'mode = \"cdi\"' '$ROOT/usr/local/nvml-mock/toolkit/config.toml' &&
	       [ \"\$(readlink '$ROOT/etc/nvidia-container-runtime/config.toml')\" = /usr/local/nvml-mock/toolkit/config.toml ]"
check "C: nvidia-ctk ran with the seed's command line" grep -qx \
	'runtime configure --runtime=containerd --config-source=file --config=/etc/containerd/config.toml --drop-in-config=/etc/containerd/conf.d/50-mokka.toml --nvidia-runtime-name=nvidia --nvidia-runtime-path=/usr/bin/nvidia-container-runtime --nvidia-set-as-default --cdi.enabled' \
	"$ROOT/ctk.calls"
check "C: its drop-in got Mokka's mark and the NRI table" \
	sh -c "head -1 '$DROPIN' | grep -q '^# Written by Mokka' && grep -q 'io.containerd.nri.v1.nri' '$DROPIN' &&
	       grep -q 'BinaryName = \"/usr/bin/nvidia-container-runtime\"' '$DROPIN'"
check "C: the spec calls the toolkit's ldcache hook" grep -q 'path: "/usr/bin/nvidia-cdi-hook"' "$ROOT/var/run/cdi/nvidia.yaml"
check "C: one restart" [ "$(calls)" -eq 1 ]
stop
check "C: Revoke removed the drop-in" test ! -e "$DROPIN"
check "C: the toolkit stays (running containers still exec it)" \
	sh -c "test -x '$ROOT/usr/local/nvml-mock/toolkit/nvidia-container-runtime' && test -L '$ROOT/usr/bin/nvidia-ctk'"

touch "$ROOT/ctk.broken"
start_supervisor --simulators gpudriver,cri
wait_for 30 is_code /readyz 503 || fail "C2: /readyz not 503 with a broken nvidia-ctk drop-in"
readyz_undone() { is_code /readyz 503 && grep -q undone "$T/body"; }
wait_for 10 readyz_undone || fail "C2: /readyz does not say the changes were undone: $(cat "$T/body")"
check "C2: the broken drop-in was taken back" test ! -e "$DROPIN"
check "C2: config.toml untouched" cmp -s "$T/fixture.toml" "$CFG"
check "C2: specs still published" test -f "$ROOT/var/run/cdi/nvidia.yaml"
stop
unset MOKKA_CONTAINER_TOOLKIT_DIR
finish
