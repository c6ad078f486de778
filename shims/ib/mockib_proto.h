/* The wire between the IB shims (libibmockumad.so, libibmockverbs.so) and
 * the mock-ib daemon.  Header-only, glibc types only: the shims are
 * self-contained.
 *
 * Transport: an AF_UNIX SOCK_SEQPACKET connection to the daemon's socket
 * ($MOCK_IB_SOCKET, default MOCKIB_DEFAULT_SOCKET).  One connection per
 * emulated fd, so message boundaries and poll() behave like the kernel's
 * char device / netlink socket.
 *
 * 1. The client's first frame is a struct mockib_hello.
 * 2. kind UMAD / ISSM ("umad<index>" / "issm<index>"):
 *    client -> daemon: either a struct mockib_ctl (exact size, magic), or a
 *      data frame = what the application write()s to the umad fd: the
 *      struct ib_user_mad header (64 bytes after ENABLE_PKEY, else the
 *      56-byte legacy header) followed by the MAD.
 *    daemon -> client: data frames only, exactly what the kernel's read()
 *      would return (header of the session's size + MAD, which may be
 *      longer than 256 bytes for reassembled RMPP replies).
 *    Control frames are one-way (no reply): the shim answers the ioctl
 *    itself (it assigns agent ids like the kernel: lowest free, from 0) and
 *    tells the daemon, which processes frames in order.
 * 3. kind NETLINK: client -> daemon one frame per sendmsg (one or more
 *    nlmsghdr-framed NETLINK_RDMA requests); daemon -> client one frame per
 *    kernel datagram (NLDEV replies, NLMSG_DONE, NLMSG_ERROR acks).  The
 *    shim fakes the sockaddr_nl side (bind, getsockname, recvmsg names).
 */
#ifndef MOKKA_SHIMS_IB_MOCKIB_PROTO_H
#define MOKKA_SHIMS_IB_MOCKIB_PROTO_H

#include <stdint.h>

#define MOCKIB_DEFAULT_SOCKET "/var/lib/nvml-mock/run/mock-ib.sock"
#define MOCKIB_SOCKET_ENV "MOCK_IB_SOCKET"

#define MOCKIB_HELLO_MAGIC "MOKKAIB1"	/* 8 bytes, no NUL stored */
#define MOCKIB_CTL_MAGIC "MOKKACTL"	/* 8 bytes, no NUL stored */

enum mockib_kind {
	MOCKIB_KIND_UMAD = 1,		/* /dev/infiniband/umad<index> */
	MOCKIB_KIND_ISSM = 2,		/* /dev/infiniband/issm<index> */
	MOCKIB_KIND_NETLINK = 3,	/* socket(AF_NETLINK, *, NETLINK_RDMA) */
};

struct mockib_hello {
	char magic[8];
	uint32_t kind;			/* enum mockib_kind */
	uint32_t index;			/* N of umadN / issmN; 0 for netlink */
	uint32_t pid;			/* the client's pid, for logs */
	uint32_t reserved;
};

enum mockib_ctl_op {
	MOCKIB_CTL_ENABLE_PKEY = 1,	/* header becomes 64 bytes (else 56) */
	MOCKIB_CTL_REGISTER = 2,	/* agent registered (REGISTER_AGENT{,2}) */
	MOCKIB_CTL_UNREGISTER = 3,	/* agent id released */
};

struct mockib_ctl {
	char magic[8];
	uint32_t op;			/* enum mockib_ctl_op */
	uint32_t agent_id;		/* REGISTER/UNREGISTER */
	/* REGISTER: the kernel's ib_user_mad_reg_req fields */
	uint32_t method_mask[4];	/* bit m set = agent receives requests of method m */
	uint8_t qpn;			/* 0 = SMI, 1 = GSI */
	uint8_t mgmt_class;		/* 0 = no unsolicited requests (send-only agent) */
	uint8_t mgmt_class_version;
	uint8_t oui[3];			/* vendor range 2 classes (0x30..0x4f) */
	uint8_t rmpp_version;
	uint8_t reserved[9];
};

/* Sizes are part of the wire. */
_Static_assert(sizeof(struct mockib_hello) == 24, "hello is 24 bytes");
_Static_assert(sizeof(struct mockib_ctl) == 48, "ctl is 48 bytes");

/* struct ib_user_mad header layout (IB.md §2.2), for both sides. */
#define MOCKIB_UMAD_HDR 64
#define MOCKIB_UMAD_HDR_LEGACY 56
#define MOCKIB_MAD_SIZE 256

#endif
