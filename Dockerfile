# The Mokka node image: mokka-supervisor, its workers, daemons and shims,
# the shipped profiles, and the third-party programs the simulators stage
# into the host (NVIDIA's real nvidia-smi, the rdma-core tools).
#
#   podman build --network host -t mokka .                  # from Docker Hub's Debian 12
#   podman build --network host --build-arg BASE=localhost/debian:bookworm -t mokka .
#
# BASE is any Debian 12 (bookworm) root file system with apt: the slim
# image, or one made locally with debootstrap and `podman import` (what
# tests/integration/image.sh does; no registry needed).  apt needs the
# network during the build, hence --network host.
#
# The container runs privileged with the host's root at /host (see
# etc/kubernetes/daemonset.yaml): simulators mknod device nodes, make bind
# mounts and write under /host.  Running it unprivileged or as non-root is
# not possible.
ARG BASE=docker.io/library/debian:bookworm-slim

# ---- build: compile and install into /out ---------------------------------
FROM ${BASE} AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q && \
    apt-get install -y -q --no-install-recommends \
	build-essential autoconf automake libtool pkg-config autoconf-archive \
	libyaml-dev libcjson-dev libnl-3-dev libnl-route-3-dev libcap-dev \
	libcriterion-dev libibumad-dev libibverbs-dev libibmad-dev libibnetdisc-dev \
	libfuse3-dev && \
    rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cd /src && ./autogen.sh && mkdir -p /build && cd /build && \
    /src/configure -q --prefix=/usr --sysconfdir=/etc --localstatedir=/var && \
    make -j"$(nproc)" && make install-strip DESTDIR=/out && \
    find /out -name '*.la' -delete

# ---- NVIDIA Container Toolkit, the real one ---------------------------------
# nvidia-container-runtime, nvidia-ctk and nvidia-cdi-hook, built unmodified
# from the Go module proxy at the release tests/go/versions.env pins (keep
# NVIDIA_CTK_VERSION in step).  cri installs them on the host from
# /usr/libexec/mokka/container-toolkit, so containerd's nvidia handler runs
# the real runtime in CDI mode.  Debian 12's Go (1.19) is too old to build
# them; it fetches the Go toolchain, which the proxy serves as a module.
# A machine that already built the pinned release (scripts/install-deps.sh
# keeps them in /var/cache/mokka/go/bin, with a stamp per program) can lend
# them: `podman build -v /var/cache/mokka/go/bin:/mokka-go-bin:ro` (what
# tests/integration/image.sh does).  --build-arg NVIDIA_CTK_VERSION= builds
# an image without the toolkit (containerd's runc then serves the nvidia
# handler with its own CDI support).  The toolkit needs the DaemonSet to
# mount /usr/bin and /etc/nvidia-container-runtime writable at /host (cri
# links them there) and a host whose / has the C library (cri runs
# nvidia-ctk chrooted).
FROM ${BASE} AS toolkit
ENV DEBIAN_FRONTEND=noninteractive
ARG NVIDIA_CTK_VERSION=v1.19.1
ARG GO_TOOLCHAIN=go1.25.5
RUN set -eu; mkdir -p /toolkit; [ -n "$NVIDIA_CTK_VERSION" ] || exit 0; \
    tk="nvidia-container-runtime nvidia-ctk nvidia-cdi-hook"; pre=/mokka-go-bin; lent=1; \
    for c in $tk; do \
	[ "$(cat "$pre/.stamp/$c" 2>/dev/null)" = "$NVIDIA_CTK_VERSION" ] || lent=0; \
    done; \
    if [ $lent = 1 ]; then \
	for c in $tk; do install -m 0755 "$pre/$c" /toolkit/; done; exit 0; \
    fi; \
    apt-get update -q; \
    apt-get install -y -q --no-install-recommends golang-go gcc libc6-dev ca-certificates; \
    tc=golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.linux-$(dpkg --print-architecture); \
    cd /tmp && GOPATH=/go GOFLAGS=-modcacherw go mod download "$tc"; \
    for c in $tk; do \
	GOPATH=/go GOBIN=/toolkit GOTOOLCHAIN=local GOFLAGS=-buildvcs=false \
	    "/go/pkg/mod/$tc/bin/go" install "github.com/NVIDIA/nvidia-container-toolkit/cmd/$c@$NVIDIA_CTK_VERSION"; \
    done; \
    rm -rf /go /root/.cache /var/lib/apt/lists/*

# ---- the node image --------------------------------------------------------
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive
# Runtime libraries, the rdma-core tools the ib simulator works with,
# patchelf (gpudriver sets nvidia-smi's run path) and fuse3 (libfuse3 for
# mokka-pcifs, which mounts by descriptor itself).  contrib and non-free:
# nvidia-smi lives in non-free; both apt source formats occur, deb822 (the
# slim image) and sources.list (debootstrap).  NVIDIA's real nvidia-smi is
# unpacked rather than installed: the package would pull in the real
# libnvidia-ml1, which must never compete with the mock.  gpudriver copies
# it from /usr/share/mokka into the driver tree with RUNPATH
# $ORIGIN/../lib64, so it loads the mock library beside it.
RUN set -eu; \
    src=/etc/apt/sources.list.d/debian.sources; \
    if [ -f "$src" ]; then \
	sed -i 's/^Components: main$/Components: main contrib non-free non-free-firmware/' "$src"; \
    fi; \
    if [ -f /etc/apt/sources.list ]; then \
	sed -i -E 's/^(deb[[:space:]].*)[[:space:]]main$/\1 main contrib non-free/' /etc/apt/sources.list; \
    fi; \
    apt-get update -q; \
    apt-get install -y -q --no-install-recommends \
	libyaml-0-2 libcjson1 libcap2 libnl-3-200 libnl-route-3-200 \
	libibumad3 libibverbs1 libibmad5 libibnetdisc5 \
	infiniband-diags ibverbs-utils ibverbs-providers rdma-core iproute2 \
	patchelf pciutils util-linux procps ca-certificates libfuse3-3 fuse3; \
    mkdir -p /tmp/smi && cd /tmp/smi; \
    apt-get download -q nvidia-smi; \
    dpkg-deb -x nvidia-smi_*.deb x; \
    install -D -m 0755 x/usr/lib/nvidia/current/nvidia-smi /usr/share/mokka/nvidia-smi; \
    cd / && rm -rf /tmp/smi /var/lib/apt/lists/*
COPY --from=build /out/ /
COPY --from=toolkit /toolkit/ /usr/libexec/mokka/container-toolkit/
# Every program and shim resolves its libraries here (fails the build if not).
RUN set -eu; for f in /usr/bin/mokka-* /usr/libexec/mokka/* /usr/lib/mokka/*.so*; do \
	if ldd "$f" | grep 'not found'; then echo "$f: missing libraries" >&2; exit 1; fi; \
    done
LABEL org.opencontainers.image.title="mokka" \
      org.opencontainers.image.description="Mokka GPU node simulator (run privileged, host root at /host)"
EXPOSE 9091
STOPSIGNAL SIGTERM
# The DaemonSet passes the rest (profile, topology, timeouts) as args.
ENTRYPOINT ["/usr/bin/mokka-supervisor", "--host-root", "/host"]
