# Real podman 4.3 (runc) against a staged node, for the CDI tests
# (cri_podman.sh, mig_podman.sh).  Sourced after tests/lib.sh, once the
# supervisor has staged $ROOT.  podman's CDI directories are fixed to
# /etc/cdi and /var/run/cdi, so it runs in a private mount namespace where
# /etc, /run and /var/lib are overlays (its writes land in $T) with the
# staged spec directory and the mock tree bound where the spec's host paths
# point.

# podman_image TAG "APPLETS" "COPY..." "LIBS_OF...": a busybox image with
# these applets, the COPY binaries under /usr/bin, and the glibc pieces of
# COPY and LIBS_OF (binaries the CDI spec mounts, such as nvidia-smi).
podman_image() {
	local img=$T/rootfs a b lib
	PODMAN_TAG=$1
	mkdir -p "$img/bin" "$img/usr/bin" "$img/tmp"
	cp /bin/busybox "$img/bin/"
	for a in $2; do ln -s busybox "$img/bin/$a"; done
	for b in $3; do cp "$b" "$img/usr/bin/"; done
	for lib in $(for b in $3 $4; do ldd "$b"; done | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
		cp --parents -L "$lib" "$img/"
	done
	tar -C "$img" -cf "$T/rootfs.tar" .
}

# podman_in_ns < BODY: runs the shell BODY in the namespace, with $P the
# podman command line and the image imported as localhost/$PODMAN_TAG;
# results go to files under $T.  Removes the containers, the image and the
# libpod cgroups it created; dies when the namespace cannot be set up.
podman_in_ns() {
	local cg_before nsrc d
	{
		cat <<EOF
set -u
for d in etc run var/lib; do
	n=\$(echo \$d | tr / _)
	mkdir -p "$T/ov/\$n/up" "$T/ov/\$n/work"
	mount -t overlay overlay -o "lowerdir=/\$d,upperdir=$T/ov/\$n/up,workdir=$T/ov/\$n/work" "/\$d" || exit 90
done
mkdir -p /etc/cdi /run/cdi /var/lib/nvml-mock
mount --bind "$ROOT/run/cdi" /run/cdi || exit 91
mount --bind "$ROOT/var/lib/nvml-mock" /var/lib/nvml-mock || exit 92
P="podman --root $T/pm/root --runroot $T/pm/runroot --tmpdir $T/pm/tmp --cgroup-manager cgroupfs --runtime runc"
\$P import -q "$T/rootfs.tar" localhost/$PODMAN_TAG:latest > "$T/out.import" 2>&1 || exit 93
EOF
		cat
		printf '%s\n' '$P rm -a -f > /dev/null 2>&1' '$P rmi -a -f > /dev/null 2>&1' 'exit 0'
	} > "$T/ns.sh"
	cg_before=$(ls -d /sys/fs/cgroup/*/libpod_parent 2>/dev/null)
	unshare -m --propagation private bash "$T/ns.sh"; nsrc=$?
	# runc's cgroups under cgroupfs: remove what this run created.
	for d in /sys/fs/cgroup/*/libpod_parent; do
		[ -d "$d" ] || continue
		printf '%s\n' "$cg_before" | grep -qx "$d" && continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	[ "$nsrc" -eq 0 ] || die "namespace setup failed (status $nsrc): $(cat "$T"/out.* 2>/dev/null | tail -5)"
}
