/* NETLINK_RDMA NLDEV requests answered from the node's state_ib, built and
 * parsed with libnl-3.  Kernel behaviour copied (drivers/infiniband/core/
 * netlink.c, nldev.c):
 *   - messages without NLM_F_REQUEST or of a control type are skipped
 *     (acked when NLM_F_ACK asks for it);
 *   - doit: one reply (flags 0), then NLMSG_ERROR(0) when NLM_F_ACK;
 *   - dump: parts with NLM_F_MULTI, then NLMSG_DONE carrying an int 0 (or
 *     the dump's error); never an ack;
 *   - errors: NLMSG_ERROR with -errno and the request appended; unknown
 *     clients/ops -EINVAL, known ops this mock does not model -EOPNOTSUPP.
 * Resources and counters: zero counts, empty tables (nothing is allocated).
 * Device index = HCA index; one port each. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ib_user_ioctl_verbs.h>	/* RDMA_DRIVER_MLX5 */
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include "ipc/log.h"
#include "workers/ib/mockib/mockib.h"
#include "workers/ib/mockib/mockib_netlink.h"

#define UMAD_MAJOR 231
#define UVERBS_MINOR_BASE 192
#define MLX5_UVERBS_ABI 1		/* mlx5's uverbs_abi_ver */
#define UMAD_ABI 5			/* IB_USER_MAD_ABI_VERSION */
#define NODE_TYPE_CA 1
#define SUBNET_PREFIX 0xfe80000000000000ull

/* IB_DEVICE_* bits an mlx5 IB port reports: RESIZE_MAX_WR, BAD_PKEY_CNT,
 * BAD_QKEY_CNT, AUTO_PATH_MIG, CHANGE_PHY_PORT, PORT_ACTIVE_EVENT,
 * SYS_IMAGE_GUID, RC_RNR_NAK_GEN, MEM_WINDOW, XRC, MEM_MGT_EXTENSIONS,
 * MEM_WINDOW_TYPE_2B, MANAGED_FLOW_STEERING, PCI_WRITE_END_PADDING. */
#define DEV_CAP_FLAGS (1ull << 0 | 1ull << 1 | 1ull << 2 | 1ull << 4 | 1ull << 5 | \
		       1ull << 10 | 1ull << 11 | 1ull << 12 | 1ull << 17 | 1ull << 20 | \
		       1ull << 21 | 1ull << 24 | 1ull << 29 | 1ull << 36)

struct nl_ctx {
	const struct state_ib *ib;
	uint32_t pid;
	struct nlmsghdr *req;
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	mib_nl_emit emit;
	void *arg;
};

uint64_t mib_nl_huge_dev(unsigned major, unsigned minor)
{
	return (minor & 0xffu) | (uint64_t)(major & 0xfffu) << 8 | (uint64_t)(minor & ~0xffu) << 12;
}

static int ndevs(const struct state_ib *ib)
{
	return ib->enabled ? ib->num_hcas : 0;
}

static const struct state_hca *dev_by_index(const struct state_ib *ib, uint32_t idx)
{
	for (int i = 0; i < ndevs(ib); i++)
		if ((uint32_t)ib->hcas[i].index == idx)
			return &ib->hcas[i];
	return NULL;
}

static struct nl_msg *new_msg(struct nl_ctx *c, int op, int flags)
{
	struct nl_msg *m = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op), flags);

	if (m) {
		nlmsg_hdr(m)->nlmsg_seq = c->req->nlmsg_seq;
		nlmsg_hdr(m)->nlmsg_pid = c->pid;
	}
	return m;
}

static void emit_msg(struct nl_ctx *c, struct nl_msg *m)
{
	struct nlmsghdr *h = nlmsg_hdr(m);

	c->emit(c->arg, h, h->nlmsg_len);
	nlmsg_free(m);
}

static void emit_error(struct nl_ctx *c, int err)
{
	struct nl_msg *m = nlmsg_alloc_simple(NLMSG_ERROR, err ? 0 : NLM_F_CAPPED);
	struct nlmsgerr *e;
	/* Errors carry the whole request, acks its header only (the kernel
	 * without NETLINK_CAP_ACK). */
	size_t body = err ? c->req->nlmsg_len : sizeof(struct nlmsghdr);

	if (!m)
		return;
	if (!(e = nlmsg_reserve(m, sizeof(e->error) + body, NLMSG_ALIGNTO))) {
		nlmsg_free(m);
		return;
	}
	e->error = err;
	memcpy(&e->msg, c->req, body);
	nlmsg_hdr(m)->nlmsg_seq = c->req->nlmsg_seq;
	nlmsg_hdr(m)->nlmsg_pid = c->pid;
	emit_msg(c, m);
}

static void emit_done(struct nl_ctx *c, int err)
{
	struct nl_msg *m = nlmsg_alloc_simple(NLMSG_DONE, NLM_F_MULTI);

	if (!m)
		return;
	if (nlmsg_append(m, &err, sizeof(err), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(m);
		return;
	}
	nlmsg_hdr(m)->nlmsg_seq = c->req->nlmsg_seq;
	nlmsg_hdr(m)->nlmsg_pid = c->pid;
	emit_msg(c, m);
}

static int put_handle(struct nl_msg *m, const struct state_hca *h)
{
	return nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, (uint32_t)h->index) ?:
	       nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, h->name);
}

/* fill_dev_info() order. */
static int put_dev(const struct state_ib *ib, struct nl_msg *m, const struct state_hca *h)
{
	return put_handle(m, h) ?:
	       nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1) ?:
	       nla_put_u64(m, RDMA_NLDEV_ATTR_CAP_FLAGS, DEV_CAP_FLAGS) ?:
	       (ib->fw_version[0] ? nla_put_string(m, RDMA_NLDEV_ATTR_FW_VERSION, ib->fw_version)
				  : 0) ?:
	       nla_put_u64(m, RDMA_NLDEV_ATTR_NODE_GUID, h->node_guid) ?:
	       nla_put_u64(m, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, h->node_guid) ?:
	       nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, NODE_TYPE_CA) ?:
	       nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_DIM, 0) ?:
	       nla_put_string(m, RDMA_NLDEV_ATTR_DEV_PROTOCOL,
			      strcmp(ib->link_layer, "Ethernet") ? "ib" : "roce");
}

/* fill_port_info() order; the IB-only attributes for an IB link layer. */
static int put_port(const struct state_ib *ib, struct nl_msg *m, const struct state_hca *h)
{
	int r = put_handle(m, h) ?: nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1);

	if (!r && strcmp(ib->link_layer, "Ethernet"))
		r = nla_put_u64(m, RDMA_NLDEV_ATTR_CAP_FLAGS, ib->cap_mask) ?:
		    nla_put_u64(m, RDMA_NLDEV_ATTR_SUBNET_PREFIX, SUBNET_PREFIX) ?:
		    nla_put_u32(m, RDMA_NLDEV_ATTR_LID, h->lid) ?:
		    nla_put_u32(m, RDMA_NLDEV_ATTR_SM_LID, ib->sm_lid) ?:
		    nla_put_u8(m, RDMA_NLDEV_ATTR_LMC, 0);
	return r ?: nla_put_u8(m, RDMA_NLDEV_ATTR_PORT_STATE, (uint8_t)h->port_state) ?:
		    nla_put_u8(m, RDMA_NLDEV_ATTR_PORT_PHYS_STATE, (uint8_t)h->phys_state);
}

/* fill_res_info(): every resource count is 0 (nothing is allocated). */
static int put_res(const struct state_ib *ib, struct nl_msg *m, const struct state_hca *h)
{
	static const char *const names[] = { "pd", "cq", "qp", "cm_id", "mr", "ctx", "srq" };
	struct nlattr *t, *e;

	if (put_handle(m, h) || !(t = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_SUMMARY)))
		return -EMSGSIZE;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(e = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY)) ||
		    nla_put_string(m, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, names[i]) ||
		    nla_put_u64(m, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, 0))
			return -EMSGSIZE;
		nla_nest_end(m, e);
	}
	nla_nest_end(m, t);
	return 0;
}

/* mlx5's port hw counters (the names the tree's hw_counters/ holds); no
 * traffic ever flows, so all read 0. */
static const char *const hw_counters[] = {
	"duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err",
	"out_of_buffer", "out_of_sequence", "packet_seq_err", "req_cqe_error",
	"req_cqe_flush_error", "req_remote_access_errors", "req_remote_invalid_request",
	"resp_cqe_error", "resp_cqe_flush_error", "resp_local_length_error",
	"resp_remote_access_errors", "rnr_nak_retry_err", "rx_atomic_requests",
	"rx_read_requests", "rx_write_requests",
};

/* stat_get_doit_default_counter(): the port's hw counters. */
static int put_stat(const struct state_ib *ib, struct nl_msg *m, const struct state_hca *h)
{
	struct nlattr *t, *e;

	if (put_handle(m, h) || nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1) ||
	    !(t = nla_nest_start(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS)))
		return -EMSGSIZE;
	for (size_t i = 0; i < sizeof(hw_counters) / sizeof(hw_counters[0]); i++) {
		if (!(e = nla_nest_start(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)) ||
		    nla_put_string(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, hw_counters[i]) ||
		    nla_put_u64(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 0))
			return -EMSGSIZE;
		nla_nest_end(m, e);
	}
	nla_nest_end(m, t);
	return 0;
}

typedef int (*fill_fn)(const struct state_ib *, struct nl_msg *, const struct state_hca *);

/* One device (doit) or all of them (dump). */
static int per_dev_doit(struct nl_ctx *c, int op, fill_fn fill)
{
	const struct state_hca *h;
	struct nl_msg *m;

	if (!c->tb[RDMA_NLDEV_ATTR_DEV_INDEX] ||
	    !(h = dev_by_index(c->ib, nla_get_u32(c->tb[RDMA_NLDEV_ATTR_DEV_INDEX]))))
		return -EINVAL;
	if ((op == RDMA_NLDEV_CMD_PORT_GET || op == RDMA_NLDEV_CMD_STAT_GET) &&
	    (!c->tb[RDMA_NLDEV_ATTR_PORT_INDEX] ||
	     nla_get_u32(c->tb[RDMA_NLDEV_ATTR_PORT_INDEX]) != 1))
		return -EINVAL;
	if (!(m = new_msg(c, op, 0)))
		return -ENOMEM;
	if (fill(c->ib, m, h) < 0) {
		nlmsg_free(m);
		return -EMSGSIZE;
	}
	emit_msg(c, m);
	return 0;
}

static int per_dev_dump(struct nl_ctx *c, int op, fill_fn fill)
{
	for (int i = 0; i < ndevs(c->ib); i++) {
		struct nl_msg *m = new_msg(c, op, NLM_F_MULTI);

		if (!m)
			return -ENOMEM;
		if (fill(c->ib, m, &c->ib->hcas[i]) < 0) {
			nlmsg_free(m);
			return -EMSGSIZE;
		}
		emit_msg(c, m);
	}
	return 0;
}

static int get_doit(struct nl_ctx *c) { return per_dev_doit(c, RDMA_NLDEV_CMD_GET, put_dev); }
static int get_dump(struct nl_ctx *c) { return per_dev_dump(c, RDMA_NLDEV_CMD_GET, put_dev); }
static int port_doit(struct nl_ctx *c) { return per_dev_doit(c, RDMA_NLDEV_CMD_PORT_GET, put_port); }
static int res_doit(struct nl_ctx *c) { return per_dev_doit(c, RDMA_NLDEV_CMD_RES_GET, put_res); }
static int res_dump(struct nl_ctx *c) { return per_dev_dump(c, RDMA_NLDEV_CMD_RES_GET, put_res); }

/* The default (hw) counters of a port; per-QP counters and modes are not
 * modelled. */
static int stat_doit(struct nl_ctx *c)
{
	if (c->tb[RDMA_NLDEV_ATTR_STAT_RES] || c->tb[RDMA_NLDEV_ATTR_STAT_MODE])
		return -EOPNOTSUPP;
	return per_dev_doit(c, RDMA_NLDEV_CMD_STAT_GET, put_stat);
}

/* The port dump is per device (DEV_INDEX required), one port here. */
static int port_dump(struct nl_ctx *c)
{
	const struct state_hca *h;
	struct nl_msg *m;

	if (!c->tb[RDMA_NLDEV_ATTR_DEV_INDEX] ||
	    !(h = dev_by_index(c->ib, nla_get_u32(c->tb[RDMA_NLDEV_ATTR_DEV_INDEX]))))
		return -EINVAL;
	if (!(m = new_msg(c, RDMA_NLDEV_CMD_PORT_GET, NLM_F_MULTI)))
		return -ENOMEM;
	if (put_port(c->ib, m, h) < 0) {
		nlmsg_free(m);
		return -EMSGSIZE;
	}
	emit_msg(c, m);
	return 0;
}

/* Nothing allocated: the resource tables and counters dump empty. */
static int empty_dump(struct nl_ctx *c)
{
	return 0;
}

static int unsupported(struct nl_ctx *c)
{
	return -EOPNOTSUPP;
}

static int sys_doit(struct nl_ctx *c)
{
	struct nl_msg *m = new_msg(c, RDMA_NLDEV_CMD_SYS_GET, 0);

	if (!m)
		return -ENOMEM;
	/* Shared netns mode (the default), copy-on-fork supported. */
	if (nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1) ||
	    nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1)) {
		nlmsg_free(m);
		return -EMSGSIZE;
	}
	emit_msg(c, m);
	return 0;
}

/* GET_CHARDEV: "uverbs" (device, no port) -> uverbsN 231:192+N ABI 1 with
 * the mlx5 driver id; "umad" (device and port 1) -> umadN 231:N ABI 5.
 * Other clients (rdma_cm, global lookups) are not modelled. */
static int chardev_doit(struct nl_ctx *c)
{
	const struct state_hca *h = NULL;
	char type[32], name[32];
	uint64_t dev, abi;
	bool has_port = c->tb[RDMA_NLDEV_ATTR_PORT_INDEX] != NULL;
	struct nl_msg *m;
	int r;

	if (!c->tb[RDMA_NLDEV_ATTR_CHARDEV_TYPE])
		return -EINVAL;
	nla_strlcpy(type, c->tb[RDMA_NLDEV_ATTR_CHARDEV_TYPE], sizeof(type));
	if (c->tb[RDMA_NLDEV_ATTR_DEV_INDEX]) {
		if (!(h = dev_by_index(c->ib, nla_get_u32(c->tb[RDMA_NLDEV_ATTR_DEV_INDEX]))))
			return -EINVAL;
		if (has_port && nla_get_u32(c->tb[RDMA_NLDEV_ATTR_PORT_INDEX]) != 1)
			return -EINVAL;
	} else if (has_port) {
		return -EINVAL;
	}
	if (!h)
		return -EOPNOTSUPP;
	if (!strcmp(type, "uverbs")) {
		if (has_port)
			return -EINVAL;
		dev = mib_nl_huge_dev(UMAD_MAJOR, UVERBS_MINOR_BASE + (unsigned)h->index);
		abi = MLX5_UVERBS_ABI;
		snprintf(name, sizeof(name), "uverbs%d", h->index);
	} else if (!strcmp(type, "umad")) {
		if (!has_port)
			return -EINVAL;
		dev = mib_nl_huge_dev(UMAD_MAJOR, (unsigned)h->index);
		abi = UMAD_ABI;
		snprintf(name, sizeof(name), "umad%d", h->index);
	} else {
		return -EOPNOTSUPP;
	}
	if (!(m = new_msg(c, RDMA_NLDEV_CMD_GET_CHARDEV, 0)))
		return -ENOMEM;
	r = (!strcmp(type, "uverbs") ? nla_put_u32(m, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID,
						   RDMA_DRIVER_MLX5) : 0) ?:
	    nla_put_u64(m, RDMA_NLDEV_ATTR_CHARDEV, dev) ?:
	    nla_put_u64(m, RDMA_NLDEV_ATTR_CHARDEV_ABI, abi) ?:
	    nla_put_string(m, RDMA_NLDEV_ATTR_CHARDEV_NAME, name);
	if (r < 0) {
		nlmsg_free(m);
		return -EMSGSIZE;
	}
	emit_msg(c, m);
	return 0;
}

struct nl_op {
	int (*doit)(struct nl_ctx *c);
	int (*dump)(struct nl_ctx *c);
};

/* The kernel's cb_table for the NLDEV client, as far as it is read-only. */
static const struct nl_op ops[RDMA_NLDEV_NUM_OPS] = {
	[RDMA_NLDEV_CMD_GET] = { get_doit, get_dump },
	[RDMA_NLDEV_CMD_SET] = { unsupported, NULL },
	[RDMA_NLDEV_CMD_NEWLINK] = { unsupported, NULL },
	[RDMA_NLDEV_CMD_DELLINK] = { unsupported, NULL },
	[RDMA_NLDEV_CMD_PORT_GET] = { port_doit, port_dump },
	[RDMA_NLDEV_CMD_SYS_GET] = { sys_doit, NULL },
	[RDMA_NLDEV_CMD_SYS_SET] = { unsupported, NULL },
	[RDMA_NLDEV_CMD_RES_GET] = { res_doit, res_dump },
	[RDMA_NLDEV_CMD_RES_QP_GET] = { unsupported, empty_dump },
	[RDMA_NLDEV_CMD_RES_CM_ID_GET] = { unsupported, empty_dump },
	[RDMA_NLDEV_CMD_RES_CQ_GET] = { unsupported, empty_dump },
	[RDMA_NLDEV_CMD_RES_MR_GET] = { unsupported, empty_dump },
	[RDMA_NLDEV_CMD_RES_PD_GET] = { unsupported, empty_dump },
	[RDMA_NLDEV_CMD_GET_CHARDEV] = { chardev_doit, NULL },
	[RDMA_NLDEV_CMD_STAT_SET] = { unsupported, NULL },
	[RDMA_NLDEV_CMD_STAT_GET] = { stat_doit, empty_dump },
	[RDMA_NLDEV_CMD_STAT_DEL] = { unsupported, NULL },
	[RDMA_NLDEV_CMD_RES_QP_GET_RAW] = { unsupported, empty_dump },
	[RDMA_NLDEV_CMD_RES_CQ_GET_RAW] = { unsupported, empty_dump },
	[RDMA_NLDEV_CMD_RES_MR_GET_RAW] = { unsupported, empty_dump },
	[RDMA_NLDEV_CMD_RES_CTX_GET] = { unsupported, empty_dump },
	[RDMA_NLDEV_CMD_RES_SRQ_GET] = { unsupported, empty_dump },
	[RDMA_NLDEV_CMD_STAT_GET_STATUS] = { unsupported, empty_dump },
};

static struct nla_policy policy[RDMA_NLDEV_ATTR_MAX] = {
	[RDMA_NLDEV_ATTR_DEV_INDEX] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_PORT_INDEX] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_CHARDEV_TYPE] = { .type = NLA_NUL_STRING, .maxlen = 32 },
	[RDMA_NLDEV_ATTR_STAT_RES] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_STAT_MODE] = { .type = NLA_U32 },
};

/* One request; the error (or 0) decides whether an NLMSG_ERROR follows. */
static void handle_one(struct nl_ctx *c)
{
	struct nlmsghdr *h = c->req;
	unsigned client = RDMA_NL_GET_CLIENT(h->nlmsg_type), op = RDMA_NL_GET_OP(h->nlmsg_type);
	const struct nl_op *o = client == RDMA_NL_NLDEV && op < RDMA_NLDEV_NUM_OPS ? &ops[op]
										    : NULL;
	int err = -EINVAL;

	if (!(h->nlmsg_flags & NLM_F_REQUEST) || h->nlmsg_type < NLMSG_MIN_TYPE) {
		err = 0;
		goto ack;
	}
	if (!o || (!o->doit && !o->dump))
		goto ack;
	memset(c->tb, 0, sizeof(c->tb));
	if (nlmsg_parse(h, 0, c->tb, RDMA_NLDEV_ATTR_MAX - 1, policy) < 0)
		goto ack;
	if (h->nlmsg_flags & NLM_F_DUMP) {
		if (!o->dump)
			goto ack;
		emit_done(c, o->dump(c));
		return;		/* a started dump is never acked */
	}
	if (o->doit)
		err = o->doit(c);
ack:
	if (err || (h->nlmsg_flags & NLM_F_ACK))
		emit_error(c, err);
}

void mib_nl_handle(const struct state_ib *ib, uint32_t pid, const uint8_t *buf, size_t len,
		   mib_nl_emit emit, void *arg)
{
	struct nl_ctx c = { .ib = ib, .pid = pid, .emit = emit, .arg = arg };
	struct nlmsghdr *h;
	void *copy;
	int rem = (int)len;

	if (len > INT32_MAX || !(copy = malloc(len ? len : 1)))
		return;
	/* An aligned copy: the frame buffer guarantees no alignment. */
	memcpy(copy, buf, len);
	for (h = copy; nlmsg_ok(h, rem); h = nlmsg_next(h, &rem)) {
		c.req = h;
		handle_one(&c);
	}
	free(copy);
}

static void emit_session(void *arg, const void *buf, size_t len)
{
	mib_session_send(arg, buf, len);
}

void mib_netlink_request(struct mib_session *s, const uint8_t *buf, size_t len)
{
	mib_nl_handle(s->d->ib, s->pid, buf, len, emit_session, s);
}
