/* Fuzz mock-ib's inputs with an in-process daemon: a fabric of this node
 * (fz-a, 2 HCAs) and a remote member (fz-b, 2 HCAs), one umad session on
 * mlx5_0 over a socketpair.  An input is a sequence of records
 *   [u8 target][u16 big-endian length][bytes]
 * target % 4: 0 a frame from the umad client (control frames, MADs with
 * any header), 1 a netlink request, 2 a relay MAD frame ([u8 type] then
 * routing header + MAD) as if from peer fz-b, 3 a jump in time (every
 * pending request expires).  Nothing may crash, leak or break the pending
 * list's invariants (sorted, counted per session and in total). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc/log.h"
#include "tests/fuzz/mockib_fixture.h"
#include "workers/ib/mockib/mockib.h"
#include "workers/ib/mockib/mockib_netlink.h"
#include "workers/ib/mockib/mockib_relay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct mockib d;
static struct mib_session *s;
static int peer = -1;

static void nl_sink(void *arg, const void *buf, size_t len)
{
	if (!buf || len < 16)
		abort();
}

static void drain(void)
{
	uint8_t buf[1 << 17];

	while (recv(peer, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* FUZZ_STATS=1: how much of the daemon the inputs reached. */
static void stats(void)
{
	fprintf(stderr, "fuzz_mockib: %llu MADs in, %llu out, %llu timeouts, %llu drops\n",
		(unsigned long long)d.mads_in, (unsigned long long)d.mads_out,
		(unsigned long long)d.timeouts, (unsigned long long)d.drops);
}

static void init(void)
{
	static struct mib_member remote;

	log_setup("fuzz_mockib", LOG_LVL_ERROR, LOG_FMT_TEXT);
	if (getenv("FUZZ_STATS"))
		atexit(stats);
	snprintf(remote.node, sizeof(remote.node), "fz-b");
	remote.ib = fx_ib("fz-b", 2, 0x201, 0xa088c20300cd0000ull, 2, 1);
	s = fx_mockib_session(&d, &remote, &peer);
	if (!s->hello || s->dead)
		abort();
}

static void check_pending(void)
{
	uint64_t last = 0;
	int n = 0;

	for (struct mib_pending *p = d.pending; p; p = p->next, n++) {
		if (p->deadline < last || p->s != s)
			abort();
		last = p->deadline;
	}
	if (n != d.npending || n != s->npending)
		abort();
}

static void relay_frame(const uint8_t *p, size_t len)
{
	struct mib_relay_mad m;
	int ca;

	if (len < 1 || mib_relay_mad_parse(p + 1, len - 1, &m) < 0)
		return;
	switch (p[0] % 3) {
	case 0:
		mib_mad_relay_reply(&d, m.req_id, m.mad, m.len, m.slid, m.src_qpn);
		break;
	case 1:
		ca = ib_fabric_ca_by_guid(&d.fab, m.dst_guid);
		if (ca >= 0 && d.fab.cas[ca].local)
			mib_mad_answer_remote(&d, "fz-b", m.req_id, ca, m.ingress_port, m.mad, m.len,
					      m.slid, m.src_qpn, m.src_guid);
		break;
	default:
		ca = ib_fabric_ca_by_guid(&d.fab, m.dst_guid);
		if (ca >= 0 && d.fab.cas[ca].local)
			mib_mad_deliver(&d, ca, m.mad, m.len, m.slid, m.src_qpn, m.src_guid);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!s)
		init();
	while (size >= 3) {
		uint8_t target = data[0];
		size_t len = (size_t)data[1] << 8 | data[2];

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		switch (target % 4) {
		case 0:
			mib_session_input(s, data, len);
			break;
		case 1:
			mib_nl_handle(d.ib, 7, data, len, nl_sink, NULL);
			break;
		case 2:
			relay_frame(data, len);
			break;
		default:
			mib_pending_expire(&d, UINT64_MAX);
		}
		if (s->dead)
			abort();	/* nothing a client sends closes its session */
		check_pending();
		data += len;
		size -= len;
		drain();
	}
	/* Leave nothing behind for the next input (and for LeakSanitizer). */
	mib_pending_expire(&d, UINT64_MAX);
	drain();
	while (s->qhead) {
		struct mib_frame *f = s->qhead;

		s->qhead = f->next;
		free(f);
	}
	s->qtail = NULL;
	s->qframes = 0;
	s->qbytes = 0;
	/* Registrations and the header size carry over inputs by design; reset
	 * them so every input starts from the same session. */
	memset(s->agents, 0, sizeof(s->agents));
	s->hdr_len = MOCKIB_UMAD_HDR_LEGACY;
	return 0;
}
