/* Fuzz what a relay peer sends mock-ib, as a byte stream on one
 * connection: the framing (mib_relay_parse), REGISTER payloads (the
 * member's config JSON: state_ib_decode, then the member joins or changes
 * and the fabric is rebuilt from it), MAD frames (routing header + MAD,
 * answered or delivered as mockib_relay.c does), member lists (MEMBERS:
 * every entry well formed, and encoding the entries again gives the same
 * bytes) and DIGESTs.  This node is fz-a (2 HCAs) with one umad session on
 * mlx5_0 over a socketpair, serving a vendor class and the PMA class.  A
 * framing error ends the input, as it closes the connection.  Nothing may
 * crash or leak; every input starts from a fabric of this node alone. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc/log.h"
#include "tests/fuzz/mockib_fixture.h"
#include "workers/ib/mockib/mockib.h"
#include "workers/ib/mockib/mockib_relay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct mockib d;
static struct mib_session *s;
static int peer = -1;

static void init(void)
{
	log_setup("fuzz_mockib_relay", LOG_LVL_ERROR, LOG_FMT_TEXT);
	s = fx_mockib_session(&d, NULL, &peer);
	/* Server agents, so delivered requests meet agent_wants: a vendor
	 * range 2 class (an OUI to compare) and the PMA class. */
	for (uint32_t i = 0; i < 2; i++) {
		struct mockib_ctl c = { .op = MOCKIB_CTL_REGISTER, .agent_id = i, .qpn = 1,
					.mgmt_class = i ? 0x04 : 0x32, .mgmt_class_version = 1,
					.oui = { 0x00, 0x14, 0x05 },
					.method_mask = { ~0u, ~0u, ~0u, ~0u } };

		memcpy(c.magic, MOCKIB_CTL_MAGIC, 8);
		mib_session_input(s, (const uint8_t *)&c, sizeof(c));
	}
	if (!s->hello || s->dead || !s->agents[0].used)
		abort();
}

static void drain(void)
{
	uint8_t buf[1 << 17];

	while (recv(peer, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* on_register() without the connection: the sender is who it says. */
static void on_register(const uint8_t *json, size_t len)
{
	char node[STATE_NAME_MAX] = "", err[256];
	struct state_ib *ib;

	if (!(ib = malloc(sizeof(*ib))))
		return;
	if (state_ib_decode((const char *)json, len, node, ib, err, sizeof(err)) < 0 || !node[0] ||
	    !strcmp(node, d.node)) {
		free(ib);
		return;
	}
	if (!mib_member_refresh(&d, node, json, len))
		mib_member_update(&d, node, ib, json, len, "fuzz");
	else
		free(ib);
	mib_fabric_flush(&d);	/* the loop's rebuild after the batch */
}

/* A member list: every entry the decoder hands out is well formed, and
 * encoding the entries again gives back the very bytes it accepted. */
static int check_entry(void *arg, const struct mib_gossip_entry *e)
{
	uint8_t *out = ((uint8_t **)arg)[0];
	size_t *off = ((size_t **)arg)[1];

	if (!e->node[0] || !memchr(e->node, 0, sizeof(e->node)) ||
	    !memchr(e->host, 0, sizeof(e->host)) || e->port < 1 || e->port > 65535)
		abort();
	if (mib_members_put(out, MIB_RELAY_MAX, off, e) < 0)
		abort();
	return 0;
}

static void on_members(const uint8_t *p, size_t len)
{
	static uint8_t *out;
	size_t off = 3;
	void *arg[2] = { NULL, &off };
	uint8_t flags;
	int n;

	if (!out && !(out = malloc(MIB_RELAY_MAX)))
		abort();
	arg[0] = out;
	n = mib_members_parse(p, len, &flags, check_entry, arg);
	if (n < 0)
		return;
	mib_members_head(out, flags, (unsigned)n);
	if (off != len || memcmp(out, p, len))
		abort();
}

static void on_digest(const uint8_t *p, size_t len)
{
	uint8_t back[MIB_DIGEST_LEN];
	uint32_t n;
	uint64_t h;

	if (mib_digest_parse(p, len, &n, &h) < 0)
		return;
	mib_digest_put(back, n, h);
	if (memcmp(back, p, sizeof(back)))
		abort();
}

/* on_mad() */
static void on_mad(uint8_t type, const uint8_t *p, size_t len)
{
	struct mib_relay_mad m;
	int ca;

	if (mib_relay_mad_parse(p, len, &m) < 0)
		return;
	if (type == MIB_RELAY_REPLY) {
		mib_mad_relay_reply(&d, m.req_id, m.mad, m.len, m.slid, m.src_qpn);
		return;
	}
	ca = d.fab_ok ? ib_fabric_ca_by_guid(&d.fab, m.dst_guid) : -1;
	if (ca < 0 || !d.fab.cas[ca].local)
		return;
	if (type == MIB_RELAY_ANSWER)
		mib_mad_answer_remote(&d, m.origin, m.req_id, ca, m.ingress_port, m.mad, m.len,
				      m.slid, m.src_qpn, m.src_guid);
	else
		mib_mad_deliver(&d, ca, m.mad, m.len, m.slid, m.src_qpn, m.src_guid);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	if (!s)
		init();
	for (;;) {
		uint8_t type;
		const uint8_t *p;
		size_t plen;
		long used = mib_relay_parse(data + off, size - off, &type, &p, &plen);

		if (used <= 0)
			break;
		if ((size_t)used > size - off || p < data || p + plen > data + size)
			abort();	/* a frame must lie inside the input */
		if (type == MIB_RELAY_REGISTER)
			on_register(p, plen);
		else if (type >= MIB_RELAY_ANSWER && type <= MIB_RELAY_REPLY)
			on_mad(type, p, plen);
		else if (type == MIB_RELAY_MEMBERS)
			on_members(p, plen);
		else if (type == MIB_RELAY_DIGEST)
			on_digest(p, plen);
		off += (size_t)used;
		drain();
	}
	/* Back to this node alone, nothing pending, for the next input. */
	mib_pending_expire(&d, UINT64_MAX);
	drain();
	mib_members_drop_all(&d);
	if (mib_fabric_rebuild(&d) < 0)
		abort();
	while (s->qhead) {
		struct mib_frame *f = s->qhead;

		s->qhead = f->next;
		free(f);
	}
	s->qtail = NULL;
	s->qframes = 0;
	s->qbytes = 0;
	return 0;
}
