/* Fuzz the MAD engine: the input is [sender CA selector, DLID selector,
 * ingress selector, MAD bytes...], run through mad_process (a local agent
 * sending) and mad_answer_local (a peer forwarding) on a small fabric with
 * a local and a remote member and one down port.  Aborts when a result
 * breaks the engine's contract; ASan/UBSan catch the rest. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/ib_mad_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint32_t lids[] = { 0, 1, 2, 3, 4, 5, 0x101, 0x102, 0x201, 0x202, 0x203,
				 0xbfff, 0xc000, 0xffff };

static struct ib_fabric *fabric(void)
{
	static struct ib_fabric f;
	static struct ib_member m[2];
	static int built;

	if (!built) {
		struct state_ib *a = fx_ib("node-a", 2, 0x101, 0xa088c20300ab0000ull, 4, 2);
		struct state_ib *b = fx_ib("node-b", 3, 0x201, 0xa088c20300cd0000ull, 4, 2);

		b->hcas[2].port_state = 1;
		b->hcas[2].phys_state = 2;
		a->hcas[0].counters[12] = UINT64_MAX;
		fx_member(&m[0], "node-b", b, false);
		fx_member(&m[1], "node-a", a, true);
		if (ib_fabric_build(&f, m, 2) != 0)
			abort();
		built = 1;
	}
	return &f;
}

static void check(const struct ib_fabric *f, int rc, struct mad_result *r)
{
	volatile unsigned sum = 0;

	if (rc != 0 && rc != -EINVAL)
		abort();
	if (rc == -EINVAL && (r->v != MAD_DROP || r->reply))
		abort();
	switch (r->v) {
	case MAD_REPLY:
		if (!r->reply || r->reply_len < 56 || r->reply[0] != 1 ||
		    !(r->reply[3] & 0x80) || r->reply_qpn > 1)
			abort();
		/* the buffer is at least 256 bytes whatever reply_len says */
		for (size_t i = 0; i < (r->reply_len < 256 ? 256 : r->reply_len); i++)
			sum += r->reply[i];
		break;
	case MAD_FORWARD:
		if (r->reply || r->target_ca < 0 || r->target_ca >= f->ncas ||
		    f->cas[r->target_ca].local || r->ingress_port != 1)
			abort();
		break;
	case MAD_DELIVER:
		if (r->reply || r->target_ca < 0 || r->target_ca >= f->ncas)
			abort();
		break;
	case MAD_DROP:
		if (r->reply)
			abort();
		break;
	default:
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ib_fabric *f = fabric();
	uint8_t sel[3] = { 0, 0, 0 };
	struct mad_result r;
	struct mad_in in;
	uint8_t *mad;
	size_t len;
	int rc;

	memcpy(sel, data, size < 3 ? size : 3);
	len = size > 3 ? size - 3 : 0;
	mad = malloc(len ? len : 1);		/* exact size: ASan sees overreads */
	if (!mad)
		abort();
	if (len)
		memcpy(mad, data + 3, len);
	in = (struct mad_in){ .ca = sel[0] % 2, .dlid = lids[sel[1] % (sizeof(lids) / sizeof(lids[0]))],
			      .qpn = sel[1] & 1, .mad = mad, .len = len };
	rc = mad_process(f, &in, &r);
	check(f, rc, &r);
	mad_result_free(&r);
	rc = mad_answer_local(f, sel[0] % f->ncas, sel[2] % 3, mad, len, &r);
	check(f, rc, &r);
	mad_result_free(&r);
	free(mad);
	return 0;
}
