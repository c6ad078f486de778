/* The subnet administrator next to the SM: Get/GetTable of NodeRecord,
 * PortInfoRecord, PathRecord, SMInfoRecord, LinkRecord, ClassPortInfo.
 * Records are filtered by the ComponentMask fields that sit on byte
 * boundaries.  As OpenSM: Get with no match is ERR_NO_RECORDS, with more
 * than one ERR_TOO_MANY_RECORDS; GetTable with no match is an empty
 * success.  A GetTableResp is returned the way the kernel hands a
 * reassembled RMPP transfer to user space: the first segment's headers
 * and all records, 56 + records x size bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "workers/ib/mad/mad_internal.h"

#define RMPP_VERSION 1
#define RMPP_TYPE_DATA 1
#define RMPP_FLAG_ACTIVE 0x01
#define RMPP_FLAG_FIRST 0x02
#define RMPP_FLAG_LAST 0x04
#define RMPP_RESP_TIME_NONE 0x1f
#define SA_CLASS_VERSION 2
#define SA_HDR_PAYLOAD 20		/* SM_Key..ComponentMask, counted per segment */
#define SA_RESP_TIME 18
#define PR_SELECTOR_EXACTLY 0x80
#define PR_PKT_LIFE 18

#define MATCH_EQUAL 0
#define MATCH_BITS 1			/* every bit the request sets is set */

struct sa_field {
	int bit;		/* ComponentMask bit */
	int off, len;		/* bytes in the record */
	int how;
};

struct sa_query {
	const struct ib_fabric *f;
	int from_ca;
	const uint8_t *tmpl;	/* the request's record */
	uint64_t comp;
	const struct sa_field *fields;
	size_t nfields;
	size_t rec_size;
	uint8_t *buf;
	size_t n, cap;
	int err;
};

typedef void (*sa_gen_fn)(struct sa_query *q);

static bool field_matches(const struct sa_field *fl, const uint8_t *want, const uint8_t *have)
{
	if (fl->how == MATCH_EQUAL)
		return !memcmp(want + fl->off, have + fl->off, (size_t)fl->len);
	for (int i = 0; i < fl->len; i++)
		if ((want[fl->off + i] & have[fl->off + i]) != want[fl->off + i])
			return false;
	return true;
}

static void emit(struct sa_query *q, const uint8_t *rec)
{
	for (size_t i = 0; i < q->nfields; i++)
		if ((q->comp >> q->fields[i].bit & 1) &&
		    !field_matches(&q->fields[i], q->tmpl, rec))
			return;
	if (q->err)
		return;
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;
		uint8_t *b = realloc(q->buf, cap * q->rec_size);

		if (!b) {
			q->err = -ENOMEM;
			return;
		}
		q->buf = b;
		q->cap = cap;
	}
	memcpy(q->buf + q->n++ * q->rec_size, rec, q->rec_size);
}

/* Every node the SM knows, CAs first (fabric order), then switches. */
static int next_node(const struct ib_fabric *f, int i, struct mad_node *n)
{
	for (; i < f->ncas + f->nsws; i++) {
		*n = i < f->ncas ? (struct mad_node){ IB_LINK_CA, i }
				 : (struct mad_node){ IB_LINK_SWITCH, i - f->ncas };
		if (mad_sm_sees(f, *n))
			return i;
	}
	return -1;
}

#define FOR_EACH_NODE(f, i, n) \
	for (int i = next_node(f, 0, &n); i >= 0; i = next_node(f, i + 1, &n))

/* NodeRecord: LID 0, NodeInfo 4..43, NodeDescription 44..107 */
static const struct sa_field node_fields[] = {
	{ 0, 0, 2, MATCH_EQUAL },	/* LID */
	{ 2, 4, 1, MATCH_EQUAL },	/* BaseVersion */
	{ 3, 5, 1, MATCH_EQUAL },	/* ClassVersion */
	{ 4, 6, 1, MATCH_EQUAL },	/* NodeType */
	{ 5, 7, 1, MATCH_EQUAL },	/* NumPorts */
	{ 6, 8, 8, MATCH_EQUAL },	/* SystemImageGUID */
	{ 7, 16, 8, MATCH_EQUAL },	/* NodeGUID */
	{ 8, 24, 8, MATCH_EQUAL },	/* PortGUID */
	{ 9, 32, 2, MATCH_EQUAL },	/* PartitionCap */
	{ 10, 34, 2, MATCH_EQUAL },	/* DeviceID */
	{ 11, 36, 4, MATCH_EQUAL },	/* Revision */
	{ 12, 40, 1, MATCH_EQUAL },	/* LocalPortNum */
	{ 13, 41, 3, MATCH_EQUAL },	/* VendorID */
	{ 14, 44, 64, MATCH_EQUAL },	/* NodeDescription */
};

static void gen_node_records(struct sa_query *q)
{
	uint8_t rec[112];
	struct mad_node n;

	FOR_EACH_NODE(q->f, i, n) {
		memset(rec, 0, sizeof(rec));
		put16(rec, mad_node_lid(q->f, n));
		mad_node_info(q->f, n, mad_ingress_from_sm(q->f, n), rec + 4);
		mad_node_desc(q->f, n, rec + 44);
		emit(q, rec);
	}
}

/* PortInfoRecord: EndportLID 0, PortNum 2, Options 3, PortInfo 4..67 */
static const struct sa_field port_info_fields[] = {
	{ 0, 0, 2, MATCH_EQUAL },	/* EndportLID */
	{ 1, 2, 1, MATCH_EQUAL },	/* PortNum */
	{ 5, 20, 2, MATCH_EQUAL },	/* PortInfo.LID */
	{ 6, 22, 2, MATCH_EQUAL },	/* PortInfo.MasterSMLID */
	{ 7, 24, 4, MATCH_BITS },	/* PortInfo.CapabilityMask (saquery -s) */
};

static void gen_port_info_records(struct sa_query *q)
{
	uint8_t rec[72];
	struct mad_node n;

	FOR_EACH_NODE(q->f, i, n) {
		int first = n.kind == IB_LINK_CA ? 1 : 0;

		for (int p = first; p <= mad_node_ports(q->f, n); p++) {
			memset(rec, 0, sizeof(rec));
			put16(rec, mad_node_lid(q->f, n));
			rec[2] = (uint8_t)p;
			mad_port_info(q->f, n, p, p, rec + 4);
			emit(q, rec);
		}
	}
}

/* SMInfoRecord: LID 0, SMInfo 4..24 */
static const struct sa_field sm_info_fields[] = {
	{ 0, 0, 2, MATCH_EQUAL },
};

static void gen_sm_info_records(struct sa_query *q)
{
	uint8_t rec[32] = { 0 }, d[SMP_DATA_SIZE];

	if (q->f->sm_switch < 0)
		return;
	put16(rec, q->f->sm_lid);
	mad_sm_info(q->f, d);
	memcpy(rec + 4, d, 21);
	emit(q, rec);
}

/* LinkRecord: FromLID 0, FromPort 2, ToPort 3, ToLID 4 */
static const struct sa_field link_fields[] = {
	{ 0, 0, 2, MATCH_EQUAL },
	{ 1, 2, 1, MATCH_EQUAL },
	{ 2, 3, 1, MATCH_EQUAL },
	{ 3, 4, 2, MATCH_EQUAL },
};

static void gen_link_records(struct sa_query *q)
{
	const struct ib_fabric *f = q->f;
	uint8_t rec[8];
	struct mad_node n;

	FOR_EACH_NODE(f, i, n) {
		for (int p = 1; p <= mad_node_ports(f, n); p++) {
			const struct ib_link *l = n.kind == IB_LINK_CA ? &f->cas[n.idx].up
								       : &f->sws[n.idx].port[p];
			struct mad_node peer = { l->kind, l->idx };
			int state, phys;

			if (l->kind == IB_LINK_NONE || !mad_sm_sees(f, peer))
				continue;
			mad_port_state(f, n, p, &state, &phys);
			if (phys != PHYS_LINKUP)
				continue;
			memset(rec, 0, sizeof(rec));
			put16(rec, mad_node_lid(f, n));
			rec[2] = (uint8_t)p;
			rec[3] = (uint8_t)l->port;
			put16(rec + 4, mad_node_lid(f, peer));
			emit(q, rec);
		}
	}
}

/* PathRecord: DGID 8, SGID 24, DLID 40, SLID 42, PKey 50 */
#define PR_BIT_DGID 2
#define PR_BIT_SGID 3
#define PR_BIT_DLID 4
#define PR_BIT_SLID 5
static const struct sa_field path_fields[] = {
	{ PR_BIT_DGID, 8, 16, MATCH_EQUAL },
	{ PR_BIT_SGID, 24, 16, MATCH_EQUAL },
	{ PR_BIT_DLID, 40, 2, MATCH_EQUAL },
	{ PR_BIT_SLID, 42, 2, MATCH_EQUAL },
	{ 13, 50, 2, MATCH_EQUAL },	/* PKey */
};

/* The end named by GID (its GUID half) or LID; none named = every node. */
static bool path_end(struct sa_query *q, int gid_bit, int gid_off, int lid_bit, int lid_off,
		     struct mad_node *n)
{
	if (q->comp >> gid_bit & 1)
		return mad_guid_node(q->f, get64(q->tmpl + gid_off + 8), n);
	return mad_lid_node(q->f, get16(q->tmpl + lid_off), n);
}

static bool path_usable(const struct ib_fabric *f, struct mad_node n)
{
	return mad_sm_sees(f, n) && (n.kind != IB_LINK_CA || mad_ca_active(f, n.idx));
}

static void put_gid(struct sa_query *q, uint8_t *rec, int off, int bit, struct mad_node n)
{
	if (q->comp >> bit & 1) {
		memcpy(rec + off, q->tmpl + off, 16);	/* the prefix the asker used */
		return;
	}
	put64(rec + off, GID_PREFIX_LINK_LOCAL);
	put64(rec + off + 8, mad_node_port_guid(q->f, n));
}

static void emit_path(struct sa_query *q, struct mad_node s, struct mad_node d)
{
	uint8_t rec[64] = { 0 };

	if (!path_usable(q->f, s) || !path_usable(q->f, d))
		return;
	put_gid(q, rec, 8, PR_BIT_DGID, d);
	put_gid(q, rec, 24, PR_BIT_SGID, s);
	put16(rec + 40, mad_node_lid(q->f, d));
	put16(rec + 42, mad_node_lid(q->f, s));
	rec[49] = 0x80;				/* Reversible */
	put16(rec + 50, 0xffff);		/* PKey */
	rec[54] = PR_SELECTOR_EXACTLY | 5;	/* MTU 4096 */
	rec[55] = (uint8_t)(PR_SELECTOR_EXACTLY | mad_path_rate(q->f, s, d));
	rec[56] = PR_SELECTOR_EXACTLY | PR_PKT_LIFE;
	emit(q, rec);
}

static void gen_path_records(struct sa_query *q)
{
	struct mad_node s = { IB_LINK_CA, q->from_ca }, d;

	if (((q->comp >> PR_BIT_SGID & 1) || (q->comp >> PR_BIT_SLID & 1)) &&
	    !path_end(q, PR_BIT_SGID, 24, PR_BIT_SLID, 42, &s))
		return;
	if ((q->comp >> PR_BIT_DGID & 1) || (q->comp >> PR_BIT_DLID & 1)) {
		if (path_end(q, PR_BIT_DGID, 8, PR_BIT_DLID, 40, &d))
			emit_path(q, s, d);
		return;
	}
	FOR_EACH_NODE(q->f, i, d)
		emit_path(q, s, d);
}

/* Records the SA knows but this fabric never has (services, multicast
 * groups, subscriptions, ...): an empty table. */
static void gen_none(struct sa_query *q)
{
}

static const struct {
	uint16_t attr;
	size_t rec_size;
	sa_gen_fn gen;
	const struct sa_field *fields;
	size_t nfields;
} sa_attrs[] = {
#define TAB(a) a, sizeof(a) / sizeof(a[0])
	{ SA_ATTR_NODE_RECORD, 112, gen_node_records, TAB(node_fields) },
	{ SA_ATTR_PORT_INFO_RECORD, 72, gen_port_info_records, TAB(port_info_fields) },
	{ SA_ATTR_SM_INFO_RECORD, 32, gen_sm_info_records, TAB(sm_info_fields) },
	{ SA_ATTR_LINK_RECORD, 8, gen_link_records, TAB(link_fields) },
	{ SA_ATTR_PATH_RECORD, 64, gen_path_records, TAB(path_fields) },
	{ 0x0030, 72, gen_none, NULL, 0 },	/* GUIDInfoRecord */
	{ 0x0031, 176, gen_none, NULL, 0 },	/* ServiceRecord */
	{ 0x0033, 72, gen_none, NULL, 0 },	/* PKeyTableRecord */
	{ 0x0038, 56, gen_none, NULL, 0 },	/* MCMemberRecord */
	{ 0x00f3, 80, gen_none, NULL, 0 },	/* InformInfoRecord */
#undef TAB
};

/* A reply carrying only a status (and the request's header). */
static int sa_status(const uint8_t *req, const struct ib_fabric *f, unsigned status,
		     struct mad_result *out)
{
	unsigned method = req[MAD_O_METHOD];
	int rc;

	if ((rc = mad_reply_new(out, req, MAD_SIZE, f->sm_lid, 1)) < 0)
		return rc;
	memset(out->reply + SA_O_RMPP, 0, MAD_SIZE - SA_O_RMPP);
	memcpy(out->reply + SA_O_COMP_MASK, req + SA_O_COMP_MASK, 8);
	out->reply[MAD_O_METHOD] = (uint8_t)((method == METHOD_SET ? METHOD_GET : method) |
					     METHOD_RESP_BIT);
	mad_set_status(out->reply, status);
	return 0;
}

static int sa_class_port_info(const struct ib_fabric *f, const uint8_t *req,
			      struct mad_result *out)
{
	uint8_t *d;
	int rc;

	if ((rc = sa_status(req, f, 0, out)) < 0)
		return rc;
	d = out->reply + SA_O_DATA;
	d[0] = 1;				/* BaseVersion */
	d[1] = SA_CLASS_VERSION;
	put32(d + 4, SA_RESP_TIME);
	return 0;
}

static int sa_respond(const struct ib_fabric *f, const uint8_t *req, struct sa_query *q,
		      struct mad_result *out)
{
	bool table = req[MAD_O_METHOD] == METHOD_GET_TABLE;
	size_t data = q->n * q->rec_size, nseg, size;
	uint8_t *r;
	int rc;

	if (!table && q->n != 1)
		return sa_status(req, f, q->n ? SA_ST_TOO_MANY_RECORDS : SA_ST_NO_RECORDS, out);
	size = table ? SA_O_DATA + data : MAD_SIZE;
	if ((rc = mad_reply_new(out, req, size, f->sm_lid, 1)) < 0)
		return rc;
	r = out->reply;
	memset(r + SA_O_RMPP, 0, (size < MAD_SIZE ? MAD_SIZE : size) - SA_O_RMPP);
	r[MAD_O_METHOD] = table ? METHOD_GET_TABLE_RESP : METHOD_GET_RESP;
	mad_set_status(r, 0);
	put16(r + SA_O_ATTR_OFFSET, q->n ? (unsigned)(q->rec_size / 8) : 0);
	memcpy(r + SA_O_COMP_MASK, req + SA_O_COMP_MASK, 8);
	if (data)
		memcpy(r + SA_O_DATA, q->buf, data);
	if (table) {
		nseg = data ? (data + SA_RMPP_SEG_DATA - 1) / SA_RMPP_SEG_DATA : 1;
		r[SA_O_RMPP + 0] = RMPP_VERSION;
		r[SA_O_RMPP + 1] = RMPP_TYPE_DATA;
		r[SA_O_RMPP + 2] = (uint8_t)(RMPP_RESP_TIME_NONE << 3 | RMPP_FLAG_ACTIVE |
					     RMPP_FLAG_FIRST | (nseg == 1 ? RMPP_FLAG_LAST : 0));
		put32(r + SA_O_RMPP + 4, 1);	/* SegmentNumber of the first segment */
		put32(r + SA_O_RMPP + 8, (uint32_t)(data + SA_HDR_PAYLOAD * nseg));
	}
	return 0;
}

int mad_sa_answer(const struct ib_fabric *f, int from_ca, const uint8_t *req,
		  struct mad_result *out)
{
	unsigned method = req[MAD_O_METHOD], attr = get16(req + MAD_O_ATTR_ID);
	struct sa_query q = { .f = f, .from_ca = from_ca, .tmpl = req + SA_O_DATA,
			      .comp = get64(req + SA_O_COMP_MASK) };
	int rc;

	if (req[MAD_O_CLASS_VER] != SA_CLASS_VERSION)
		return sa_status(req, f, MAD_ST_BAD_VERSION, out);
	if (attr == ATTR_CLASS_PORT_INFO)
		return method == METHOD_GET ? sa_class_port_info(f, req, out)
					    : sa_status(req, f, MAD_ST_BAD_METHOD_ATTR, out);
	for (size_t i = 0; i < sizeof(sa_attrs) / sizeof(sa_attrs[0]); i++) {
		if (sa_attrs[i].attr != attr)
			continue;
		if (method != METHOD_GET && method != METHOD_GET_TABLE)
			return sa_status(req, f, MAD_ST_BAD_METHOD_ATTR, out);
		q.rec_size = sa_attrs[i].rec_size;
		q.fields = sa_attrs[i].fields;
		q.nfields = sa_attrs[i].nfields;
		sa_attrs[i].gen(&q);
		rc = q.err ? q.err : sa_respond(f, req, &q, out);
		free(q.buf);
		return rc;
	}
	return sa_status(req, f, MAD_ST_BAD_METHOD_ATTR, out);
}
