/* mock-ib's NETLINK_RDMA answers, parsed back with libnl-3 the way
 * libibverbs and `rdma` read them: attributes, flags, seq/pid echo, dump
 * termination, acks and errors like the kernel's. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include "workers/ib/mockib/mockib_netlink.h"

#define PID 4242
#define MAXD 32

static struct state_ib *ib;
static uint8_t *dgram[MAXD];
static size_t dlen[MAXD];
static int nd;

static void emit(void *arg, const void *buf, size_t len)
{
	cr_assert_lt(nd, MAXD);
	dgram[nd] = malloc(len);
	memcpy(dgram[nd], buf, len);
	dlen[nd++] = len;
}

static void setup(void)
{
	ib = calloc(1, sizeof(*ib));
	ib->enabled = true;
	snprintf(ib->fw_version, sizeof(ib->fw_version), "28.39.2048");
	snprintf(ib->link_layer, sizeof(ib->link_layer), "InfiniBand");
	ib->sm_lid = 1;
	ib->cap_mask = 0xa651e848;
	ib->num_hcas = 3;
	for (int i = 0; i < 3; i++) {
		ib->hcas[i].index = i;
		snprintf(ib->hcas[i].name, sizeof(ib->hcas[i].name), "mlx5_%d", i);
		ib->hcas[i].node_guid = 0xa088c20300ab0000ull + 2 * (uint64_t)i;
		ib->hcas[i].port_guid = ib->hcas[i].node_guid | 1;
		ib->hcas[i].lid = 0x4200 + (uint32_t)i;
		ib->hcas[i].port_state = i == 2 ? 1 : 4;
		ib->hcas[i].phys_state = i == 2 ? 3 : 5;
	}
	nd = 0;
}

static void teardown(void)
{
	for (int i = 0; i < nd; i++)
		free(dgram[i]);
	free(ib);
}

TestSuite(nl, .init = setup, .fini = teardown);

/* Build one request with optional u32 DEV_INDEX/PORT_INDEX and a string
 * CHARDEV_TYPE (negative / NULL = absent) and run it. */
static void request(int op, int flags, uint32_t seq, long dev, long port, const char *chardev)
{
	struct nl_msg *m = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op), flags);
	struct nlmsghdr *h;

	cr_assert(m);
	h = nlmsg_hdr(m);
	h->nlmsg_seq = seq;
	h->nlmsg_pid = PID;
	if (dev >= 0)
		nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, (uint32_t)dev);
	if (port >= 0)
		nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, (uint32_t)port);
	if (chardev)
		nla_put_string(m, RDMA_NLDEV_ATTR_CHARDEV_TYPE, chardev);
	mib_nl_handle(ib, PID, (const uint8_t *)nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len, emit, NULL);
	nlmsg_free(m);
}

static struct nlmsghdr *msg(int i)
{
	struct nlmsghdr *h;

	cr_assert_lt(i, nd);
	h = (struct nlmsghdr *)(void *)dgram[i];
	cr_assert(nlmsg_ok(h, (int)dlen[i]), "datagram %d holds one whole message", i);
	cr_assert_eq(NLMSG_ALIGN(h->nlmsg_len), NLMSG_ALIGN(dlen[i]));
	return h;
}

static void parse(int i, struct nlattr **tb)
{
	cr_assert_eq(nlmsg_parse(msg(i), 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL), 0);
}

static int error_of(int i)
{
	struct nlmsghdr *h = msg(i);

	cr_assert_eq(h->nlmsg_type, NLMSG_ERROR);
	return ((struct nlmsgerr *)nlmsg_data(h))->error;
}

Test(nl, get_dump_lists_every_device_then_done)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];

	request(RDMA_NLDEV_CMD_GET, NLM_F_REQUEST | NLM_F_DUMP | NLM_F_ACK, 77, -1, -1, NULL);
	cr_assert_eq(nd, 4, "3 parts and NLMSG_DONE, no ack after a dump");
	for (int i = 0; i < 3; i++) {
		struct nlmsghdr *h = msg(i);

		cr_assert_eq(h->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET));
		cr_assert_eq(h->nlmsg_flags, NLM_F_MULTI);
		cr_assert_eq(h->nlmsg_seq, 77);
		cr_assert_eq(h->nlmsg_pid, PID);
		parse(i, tb);
		cr_assert_eq(nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), (uint32_t)i);
		cr_assert_str_eq(nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]), ib->hcas[i].name);
		cr_assert_eq(nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]), 1, "port count");
		cr_assert_str_eq(nla_get_string(tb[RDMA_NLDEV_ATTR_FW_VERSION]), "28.39.2048");
		cr_assert_eq(nla_get_u64(tb[RDMA_NLDEV_ATTR_NODE_GUID]), ib->hcas[i].node_guid,
			     "host order");
		cr_assert_eq(nla_get_u64(tb[RDMA_NLDEV_ATTR_SYS_IMAGE_GUID]), ib->hcas[i].node_guid);
		cr_assert_eq(nla_get_u8(tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE]), 1, "CA");
		cr_assert_str_eq(nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_PROTOCOL]), "ib");
		cr_assert(tb[RDMA_NLDEV_ATTR_CAP_FLAGS] && tb[RDMA_NLDEV_ATTR_DEV_DIM]);
	}
	cr_assert_eq(msg(3)->nlmsg_type, NLMSG_DONE);
	cr_assert_eq(msg(3)->nlmsg_flags & NLM_F_MULTI, NLM_F_MULTI);
	cr_assert_eq(msg(3)->nlmsg_seq, 77);
	cr_assert_eq(*(int *)nlmsg_data(msg(3)), 0);
}

Test(nl, get_doit_with_ack_is_reply_then_error_zero)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];

	request(RDMA_NLDEV_CMD_GET, NLM_F_REQUEST | NLM_F_ACK, 5, 1, -1, NULL);
	cr_assert_eq(nd, 2);
	cr_assert_eq(msg(0)->nlmsg_flags, 0);
	parse(0, tb);
	cr_assert_str_eq(nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]), "mlx5_1");
	cr_assert_eq(error_of(1), 0);
	cr_assert_eq(msg(1)->nlmsg_seq, 5);
	cr_assert_eq(msg(1)->nlmsg_pid, PID);
	/* Without NLM_F_ACK: the reply alone (libibverbs disables auto-ack). */
	request(RDMA_NLDEV_CMD_GET, NLM_F_REQUEST, 6, 0, -1, NULL);
	cr_assert_eq(nd, 3);
}

Test(nl, unknown_device_is_einval_with_the_request_attached)
{
	struct nlmsgerr *e;

	request(RDMA_NLDEV_CMD_GET, NLM_F_REQUEST, 9, 7, -1, NULL);
	cr_assert_eq(nd, 1);
	cr_assert_eq(error_of(0), -EINVAL);
	e = nlmsg_data(msg(0));
	cr_assert_eq(e->msg.nlmsg_seq, 9);
	cr_assert_eq(msg(0)->nlmsg_len, NLMSG_HDRLEN + sizeof(int) + e->msg.nlmsg_len);
	request(RDMA_NLDEV_CMD_GET, NLM_F_REQUEST, 9, -1, -1, NULL);
	cr_assert_eq(error_of(1), -EINVAL, "doit without DEV_INDEX");
}

Test(nl, port_get_carries_ib_port_attributes)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];

	request(RDMA_NLDEV_CMD_PORT_GET, NLM_F_REQUEST | NLM_F_ACK, 1, 2, 1, NULL);
	cr_assert_eq(nd, 2);
	parse(0, tb);
	cr_assert_eq(msg(0)->nlmsg_type, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_PORT_GET));
	cr_assert_eq(nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]), 1);
	cr_assert_eq(nla_get_u64(tb[RDMA_NLDEV_ATTR_CAP_FLAGS]), 0xa651e848);
	cr_assert_eq(nla_get_u64(tb[RDMA_NLDEV_ATTR_SUBNET_PREFIX]), 0xfe80000000000000ull);
	cr_assert_eq(nla_get_u32(tb[RDMA_NLDEV_ATTR_LID]), 0x4202);
	cr_assert_eq(nla_get_u32(tb[RDMA_NLDEV_ATTR_SM_LID]), 1);
	cr_assert_eq(nla_get_u8(tb[RDMA_NLDEV_ATTR_LMC]), 0);
	cr_assert_eq(nla_get_u8(tb[RDMA_NLDEV_ATTR_PORT_STATE]), 1, "DOWN from the state");
	cr_assert_eq(nla_get_u8(tb[RDMA_NLDEV_ATTR_PORT_PHYS_STATE]), 3, "Disabled");
	cr_assert_eq(error_of(1), 0);
	request(RDMA_NLDEV_CMD_PORT_GET, NLM_F_REQUEST, 2, 0, 2, NULL);
	cr_assert_eq(error_of(2), -EINVAL, "port 2 of a one-port HCA");
	/* The port dump is per device. */
	request(RDMA_NLDEV_CMD_PORT_GET, NLM_F_REQUEST | NLM_F_DUMP, 3, 0, -1, NULL);
	cr_assert_eq(nd, 5);
	cr_assert_eq(msg(3)->nlmsg_flags, NLM_F_MULTI);
	cr_assert_eq(msg(4)->nlmsg_type, NLMSG_DONE);
	request(RDMA_NLDEV_CMD_PORT_GET, NLM_F_REQUEST | NLM_F_DUMP, 4, -1, -1, NULL);
	cr_assert_eq(nd, 6);
	cr_assert_eq(msg(5)->nlmsg_type, NLMSG_DONE);
	cr_assert_eq(*(int *)nlmsg_data(msg(5)), -EINVAL, "the dump's error rides in DONE");
}

Test(nl, ethernet_ports_omit_the_ib_attributes)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];

	snprintf(ib->link_layer, sizeof(ib->link_layer), "Ethernet");
	request(RDMA_NLDEV_CMD_PORT_GET, NLM_F_REQUEST, 1, 0, 1, NULL);
	parse(0, tb);
	cr_assert_null(tb[RDMA_NLDEV_ATTR_LID]);
	cr_assert_not_null(tb[RDMA_NLDEV_ATTR_PORT_STATE]);
}

Test(nl, sys_get_reports_shared_netns_and_copy_on_fork)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];

	request(RDMA_NLDEV_CMD_SYS_GET, NLM_F_REQUEST, 3, -1, -1, NULL);
	cr_assert_eq(nd, 1);
	parse(0, tb);
	cr_assert_eq(nla_get_u8(tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]), 1);
	cr_assert_eq(nla_get_u8(tb[RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK]), 1);
}

Test(nl, get_chardev_uverbs_and_umad)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	uint64_t dev;

	request(RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 1, 1, -1, "uverbs");
	cr_assert_eq(nd, 1);
	parse(0, tb);
	dev = nla_get_u64(tb[RDMA_NLDEV_ATTR_CHARDEV]);
	/* new_decode_dev as libibverbs does */
	cr_assert_eq((dev & 0xfff00) >> 8, 231);
	cr_assert_eq((dev & 0xff) | ((dev >> 12) & 0xfff00), 193);
	cr_assert_eq(nla_get_u64(tb[RDMA_NLDEV_ATTR_CHARDEV_ABI]), 1);
	cr_assert_str_eq(nla_get_string(tb[RDMA_NLDEV_ATTR_CHARDEV_NAME]), "uverbs1");
	cr_assert_eq(nla_get_u32(tb[RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID]), 1, "RDMA_DRIVER_MLX5");
	request(RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 2, 2, 1, "umad");
	parse(1, tb);
	cr_assert_eq(nla_get_u64(tb[RDMA_NLDEV_ATTR_CHARDEV]), mib_nl_huge_dev(231, 2));
	cr_assert_eq(nla_get_u64(tb[RDMA_NLDEV_ATTR_CHARDEV_ABI]), 5);
	cr_assert_str_eq(nla_get_string(tb[RDMA_NLDEV_ATTR_CHARDEV_NAME]), "umad2");
	cr_assert_null(tb[RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID]);
	request(RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 3, 0, -1, "umad");
	cr_assert_eq(error_of(2), -EINVAL, "umad needs a port");
	request(RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 4, 0, -1, "rdma_cm");
	cr_assert_eq(error_of(3), -EOPNOTSUPP);
	request(RDMA_NLDEV_CMD_GET_CHARDEV, NLM_F_REQUEST, 5, 0, -1, NULL);
	cr_assert_eq(error_of(4), -EINVAL, "no CHARDEV_TYPE");
	cr_assert_eq(mib_nl_huge_dev(231, 300), (300 & 0xff) | 231 << 8 | (uint64_t)(300 & ~0xff) << 12);
}

Test(nl, res_summary_and_empty_tables)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX], *e;
	int rem, names = 0;

	request(RDMA_NLDEV_CMD_RES_GET, NLM_F_REQUEST | NLM_F_DUMP, 1, -1, -1, NULL);
	cr_assert_eq(nd, 4);
	parse(0, tb);
	nla_for_each_nested(e, tb[RDMA_NLDEV_ATTR_RES_SUMMARY], rem) {
		struct nlattr *f[RDMA_NLDEV_ATTR_MAX];

		cr_assert_eq(nla_parse_nested(f, RDMA_NLDEV_ATTR_MAX - 1, e, NULL), 0);
		cr_assert_not_null(f[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME]);
		cr_assert_eq(nla_get_u64(f[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR]), 0);
		names++;
	}
	cr_assert_eq(names, 7);
	request(RDMA_NLDEV_CMD_RES_QP_GET, NLM_F_REQUEST | NLM_F_DUMP, 2, 0, -1, NULL);
	cr_assert_eq(nd, 5);
	cr_assert_eq(msg(4)->nlmsg_type, NLMSG_DONE);
}

Test(nl, stat_get_lists_the_port_hw_counters)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX], *e;
	int rem, n = 0;

	request(RDMA_NLDEV_CMD_STAT_GET, NLM_F_REQUEST | NLM_F_ACK, 3, 0, 1, NULL);
	cr_assert_eq(nd, 2);
	parse(0, tb);
	cr_assert_eq(nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]), 1);
	nla_for_each_nested(e, tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS], rem) {
		struct nlattr *f[RDMA_NLDEV_ATTR_MAX];

		cr_assert_eq(nla_parse_nested(f, RDMA_NLDEV_ATTR_MAX - 1, e, NULL), 0);
		if (!n)
			cr_assert_str_eq(nla_get_string(f[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME]),
					 "duplicate_request");
		cr_assert_eq(nla_get_u64(f[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE]), 0);
		n++;
	}
	cr_assert_eq(n, 18);
	cr_assert_eq(error_of(1), 0);
	request(RDMA_NLDEV_CMD_STAT_GET, NLM_F_REQUEST, 4, 0, -1, NULL);
	cr_assert_eq(error_of(2), -EINVAL, "no port");
}

Test(nl, unknown_ops_clients_and_non_requests)
{
	request(RDMA_NLDEV_NUM_OPS + 3, NLM_F_REQUEST, 1, -1, -1, NULL);
	cr_assert_eq(error_of(0), -EINVAL);
	request(RDMA_NLDEV_CMD_SYS_GET, NLM_F_REQUEST | NLM_F_DUMP, 2, -1, -1, NULL);
	cr_assert_eq(error_of(1), -EINVAL, "SYS_GET cannot dump");
	request(RDMA_NLDEV_CMD_GET, 0, 3, 0, -1, NULL);
	cr_assert_eq(nd, 2, "no NLM_F_REQUEST: ignored");
	request(RDMA_NLDEV_CMD_GET, NLM_F_ACK, 4, 0, -1, NULL);
	cr_assert_eq(error_of(2), 0, "ignored but acked");
}

Test(nl, several_messages_in_one_send_and_garbage)
{
	uint8_t buf[64] __attribute__((aligned(4))) = { 0 };
	struct nlmsghdr h = { .nlmsg_len = NLMSG_HDRLEN,
			      .nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET),
			      .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1 };

	memcpy(buf, &h, sizeof(h));
	h.nlmsg_seq = 2;
	memcpy(buf + NLMSG_HDRLEN, &h, sizeof(h));
	mib_nl_handle(ib, PID, buf + 0, 2 * NLMSG_HDRLEN, emit, NULL);
	cr_assert_eq(nd, 2);
	cr_assert_eq(msg(1)->nlmsg_seq, 2);
	/* A length beyond the datagram, a tiny datagram, an unaligned one:
	 * nothing happens, nothing breaks. */
	h.nlmsg_len = 4000;
	memcpy(buf, &h, sizeof(h));
	mib_nl_handle(ib, PID, buf, sizeof(buf), emit, NULL);
	mib_nl_handle(ib, PID, buf, 3, emit, NULL);
	mib_nl_handle(ib, PID, buf + 1, 40, emit, NULL);
	mib_nl_handle(ib, PID, buf, 0, emit, NULL);
	cr_assert_eq(nd, 2);
	/* Bad attribute payloads fail the policy check. */
	{
		struct nl_msg *m = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
								       RDMA_NLDEV_CMD_GET), NLM_F_REQUEST);

		nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
		mib_nl_handle(ib, PID, (const uint8_t *)nlmsg_hdr(m), nlmsg_hdr(m)->nlmsg_len, emit,
			      NULL);
		nlmsg_free(m);
		cr_assert_eq(error_of(2), -EINVAL);
	}
}

Test(nl, disabled_ib_has_no_devices)
{
	ib->enabled = false;
	request(RDMA_NLDEV_CMD_GET, NLM_F_REQUEST | NLM_F_DUMP, 1, -1, -1, NULL);
	cr_assert_eq(nd, 1);
	cr_assert_eq(msg(0)->nlmsg_type, NLMSG_DONE);
}
