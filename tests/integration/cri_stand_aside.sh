#!/bin/bash
# The stand-aside rules (SURFACES.md §2.1), each through the supervisor
# into a temp host root that has a fake systemctl and a toolkit to install
# ($MOKKA_CONTAINER_TOOLKIT_DIR): no containerd on the host PATH; a
# toolkit another installer placed; a config.toml that does not parse;
# --container-runtime none.  Every case: nothing installed (no drop-in, no
# toolkit, config.toml byte for byte), no restart, /readyz 200, and a log
# line saying why; after shutdown the root is exactly as before.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v busybox >/dev/null || { echo "SKIP: busybox missing (scripts/install-deps.sh)"; exit 77; }

TK=$T/toolkit
mkdir -p "$TK"
for b in nvidia-container-runtime nvidia-ctk nvidia-cdi-hook; do printf '#!/bin/sh\nexit 0\n' > "$TK/$b"; done
chmod 755 "$TK"/*
export MOKKA_CONTAINER_TOOLKIT_DIR=$TK

exe() { mkdir -p "$(dirname "$ROOT$1")"; printf '#!/bin/sh\n%s\n' "$2" > "$ROOT$1"; chmod 755 "$ROOT$1"; }

# case NAME WHY-PATTERN [SUPERVISOR ARGS...]; the root is prepared by the caller
case_() {
	local name=$1 why=$2 rc
	shift 2
	tree_snapshot "$ROOT" > "$T/before"
	start_supervisor --simulators cri "$@"
	wait_for 20 is_code /readyz 200 || fail "$name: /readyz not 200: $(cat "$T/body")"
	check "$name: the log says why" grep -q "$why" "$T/sup.log"
	check "$name: no drop-in" test ! -e "$ROOT/etc/containerd/conf.d"
	check "$name: no toolkit installed" test ! -e "$ROOT/usr/local/nvml-mock"
	check "$name: no restart" test ! -e "$ROOT/systemctl.calls"
	kill -TERM "$SUP_PID"
	wait_for 20 sh -c "! kill -0 $SUP_PID 2>/dev/null" || fail "$name: supervisor did not exit"
	wait "$SUP_PID"; rc=$?
	SUP_PID=
	check "$name: exit status 0 ($rc)" [ "$rc" -eq 0 ]
	check_root_restored
	rm -rf "$ROOT" && mkdir -p "$ROOT"
}

base() { # a root with a shell, systemctl and config.toml; containerd unless told
	mkdir -p "$ROOT/bin" "$ROOT/etc/containerd"
	cp "$(command -v busybox)" "$ROOT/bin/busybox"
	ln -s busybox "$ROOT/bin/sh"
	exe /usr/bin/systemctl 'echo "$*" >> /systemctl.calls'
	[ "${1:-}" = no-containerd ] || exe /usr/sbin/containerd 'exit 0'
	printf 'version = 2\n# site\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"\n' \
		> "$ROOT/etc/containerd/config.toml"
}

base no-containerd
case_ "no containerd" "no containerd on the host PATH"

base
exe /usr/bin/nvidia-container-runtime 'exit 0'	# another installer's
case_ "foreign toolkit" "/usr/bin/nvidia-container-runtime exists and is not Mokka's link"

base
mkdir -p "$ROOT/etc/nvidia-container-runtime"
ln -s /usr/local/nvidia/toolkit/config.toml "$ROOT/etc/nvidia-container-runtime/config.toml"
case_ "foreign runtime config link" "another installer owns the NVIDIA Container Toolkit"

base
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri"\n  sandbox_image = "x"\n' > "$ROOT/etc/containerd/config.toml"
case_ "broken config.toml" "containerd's config does not parse (/etc/containerd/config.toml:2:"

base
case_ "runtime none" "container runtime setup off" --container-runtime none

# A bad flag is refused at startup, naming it.
refused() { # refused PATTERN ARGS...
	local pat=$1
	shift
	! "$B/mokka-supervisor" "$@" > "$T/flag.out" 2>&1 && grep -q -- "$pat" "$T/flag.out"
}
check "a drop-in dir outside the config's dir is refused at startup" \
	refused "container-runtime-config-dir: '/etc/other' must lie under" \
	--container-runtime-config /etc/containerd/config.toml --container-runtime-config-dir /etc/other
check "an unknown restart mode is refused at startup" \
	refused "want systemd or none" --container-runtime-restart sometimes
check "an unknown runtime is refused at startup" refused "want containerd or none" --container-runtime crio
check "a relative config path is refused at startup" \
	refused "must be an absolute path" --container-runtime-config etc/config.toml
finish
