/* Fuzz what a relay peer sends mock-ib, as a byte stream on one
 * connection: the framing (mib_relay_parse), REGISTER payloads (the
 * member's config JSON: state_ib_decode, then the member joins or changes
 * and the fabric is rebuilt from it) and MAD frames (routing header + MAD,
 * answered or delivered as mockib_relay.c does).  This node is fz-a (2
 * HCAs) with one umad session on mlx5_0 over a socketpair, serving a vendor
 * class and the PMA class.  A framing
 * error ends the input, as it closes the connection.  Nothing may crash
 * or leak; every input starts from a fabric of this node alone. */
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
