/* The MAD engine, checked at the byte offsets the infiniband-diags tools
 * read: SMPs at hop 0 and along a directed-route walk (LocalPortNum =
 * ingress port at every hop), LID-routed SMPs, SMInfo, SA PathRecord /
 * NodeRecord / PortInfoRecord with the reassembled-RMPP length, PMA
 * counters, vendor delivery, forwarding to a remote CA's owner, malformed
 * input, and a full ibnetdiscover-style walk of 512 CAs.
 *
 * Fabric: node-a (local) mlx5_0/1 at LIDs 0x101/0x102, node-b (remote)
 * mlx5_0/1 at 0x201/0x202; leaf_ports 4, spines 2:
 *   leaf0 (LID 1, SM): port 1 a/mlx5_0, port 2 b/mlx5_0, 5 spine0, 6 spine1
 *   leaf1 (LID 2):     port 1 a/mlx5_1, port 2 b/mlx5_1, 5 spine0, 6 spine1
 *   spine0 (LID 3), spine1 (LID 4): port 1 leaf0 (its port 5/6), 2 leaf1 */
#include <errno.h>
#include <time.h>

#include <criterion/criterion.h>

#include "tests/unit/ib_mad_fixture.h"

#define CA_A0 0
#define CA_A1 1
#define CA_B0 2
#define CA_B1 3
#define SW0_GUID 0xb8cef60300000100ull
#define LEAF1_GUID 0xb8cef60300000200ull
#define SPINE0_GUID 0xb8cef60300000300ull

static struct state_ib *ib_a, *ib_b;
static struct ib_member mem[2];
static struct ib_fabric fab;
static struct mad_result res;
static uint8_t m[256];

static void setup(void)
{
	ib_a = fx_ib("node-a", 2, 0x101, 0xa088c20300ab0000ull, 4, 2);
	ib_b = fx_ib("node-b", 2, 0x201, 0xa088c20300cd0000ull, 4, 2);
	fx_member(&mem[0], "node-a", ib_a, true);
	fx_member(&mem[1], "node-b", ib_b, false);
	cr_assert_eq(ib_fabric_build(&fab, mem, 2), 0);
	memset(&res, 0, sizeof(res));
}

static void teardown(void)
{
	mad_result_free(&res);
	ib_fabric_free(&fab);
	free(ib_a);
	free(ib_b);
}

static int send_from(int ca, uint32_t dlid, const uint8_t *mad, size_t len)
{
	struct mad_in in = { .ca = ca, .dlid = dlid, .qpn = mad[1] == 0x01 || mad[1] == 0x81 ? 0 : 1,
			     .mad = mad, .len = len };

	mad_result_free(&res);
	return mad_process(&fab, &in, &res);
}

static int answer(int ca, const uint8_t *mad, size_t len)
{
	mad_result_free(&res);
	return mad_answer_local(&fab, ca, 1, mad, len, &res);
}

/* A reply to a Get: GetResp, the request's TID and attribute echoed. */
static const uint8_t *reply_to(const uint8_t *req, unsigned status)
{
	cr_assert_eq(res.v, MAD_REPLY);
	cr_assert_not_null(res.reply);
	cr_assert_geq(res.reply_len, 56);
	cr_assert_eq(res.reply[0], 1);
	cr_assert_eq(res.reply[1], req[1]);
	cr_assert_eq(res.reply[3], req[3] == 0x12 ? 0x92 : 0x81);
	cr_assert_eq(fx_get16(res.reply + 4), status, "status 0x%04x, want 0x%04x",
		     fx_get16(res.reply + 4), status);
	cr_assert_eq(fx_get64(res.reply + 8), fx_get64(req + 8), "TID");
	cr_assert_eq(fx_get16(res.reply + 16), fx_get16(req + 16), "AttributeID");
	return res.reply;
}

/* A directed-route Get from CA a/mlx5_0 answered here; the data. */
static const uint8_t *dr_get(uint16_t attr, uint32_t mod, const uint8_t *path, int hops)
{
	fx_dr(m, attr, mod, path, hops);
	cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
	reply_to(m, 0x8000);
	cr_assert_eq(res.reply[6], 0, "hop pointer back at the requester");
	cr_assert_eq(res.reply[7], hops);
	cr_assert_eq(res.reply_qpn, 0);
	return res.reply + 64;
}

TestSuite(smp, .init = setup, .fini = teardown);

Test(smp, node_info_of_self_at_hop0)
{
	const uint8_t path[1] = { 0 };
	const uint8_t *d = dr_get(0x0011, 0, path, 0);

	cr_assert_eq(d[0], 1);			/* BaseVersion */
	cr_assert_eq(d[1], 1);			/* ClassVersion */
	cr_assert_eq(d[2], 1);			/* CA */
	cr_assert_eq(d[3], 1);			/* NumPorts */
	cr_assert_eq(fx_get64(d + 4), 0xa088c20300ab0000ull);	/* SystemImageGUID */
	cr_assert_eq(fx_get64(d + 12), 0xa088c20300ab0000ull);	/* NodeGUID */
	cr_assert_eq(fx_get64(d + 20), 0xa088c20300ab0001ull);	/* PortGUID */
	cr_assert_eq(fx_get16(d + 30), 0x1021);			/* DeviceID */
	cr_assert_eq(d[36], 1);			/* LocalPortNum */
	cr_assert_eq(fx_get32(d + 36) & 0xffffff, 0x0002c9);	/* VendorID */
	cr_assert_eq(res.reply_slid, 0x101);
}

Test(smp, port_info_of_self_at_hop0)
{
	const uint8_t path[1] = { 0 };
	const uint8_t *d = dr_get(0x0015, 0, path, 0);

	cr_assert_eq(fx_get64(d + 8), 0xfe80000000000000ull);	/* GidPrefix */
	cr_assert_eq(fx_get16(d + 16), 0x101);	/* LID */
	cr_assert_eq(fx_get16(d + 18), 1);	/* MasterSMLID */
	cr_assert_eq(fx_get32(d + 20), 0xa651e848);	/* CapabilityMask, bit 14 */
	cr_assert_eq(d[28], 1);			/* LocalPortNum */
	cr_assert_eq(d[31], 2);			/* LinkWidthActive 4X */
	cr_assert_eq(d[32] & 0x0f, 4);		/* PortState Active */
	cr_assert_eq(d[33] >> 4, 5);		/* PhysState LinkUp */
	cr_assert_eq(d[36] >> 4, 5);		/* NeighborMTU 4096 */
	cr_assert_eq(d[41] & 0x0f, 5);		/* MTUCap 4096 */
	cr_assert_eq(d[62] >> 4, 8);		/* LinkSpeedExtActive NDR */
	cr_assert_neq(d[62] & 0x0f, 0);		/* LinkSpeedExtSupported */
	cr_assert_neq(d[63] & 0x1f, 0);		/* LinkSpeedExtEnabled */
}

Test(smp, node_description_and_port_info_mod1)
{
	const uint8_t path[1] = { 0 };
	const uint8_t *d = dr_get(0x0010, 0, path, 0);

	cr_assert_str_eq((const char *)d, "node-a mlx5_0");
	d = dr_get(0x0015, 1, path, 0);
	cr_assert_eq(fx_get16(d + 16), 0x101);
	fx_dr(m, 0x0015, 2, path, 0);		/* a CA has no port 2 */
	cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
	reply_to(m, 0x8000 | 0x001c);
}

Test(smp, dr_walk_ingress_ports)
{
	const uint8_t path[] = { 0, 1, 5, 2, 1 };
	const uint8_t *d;

	/* 0,1: leaf0, entered on a/mlx5_0's port 1 */
	d = dr_get(0x0011, 0, path, 1);
	cr_assert_eq(d[2], 2);			/* switch */
	cr_assert_eq(d[3], 6);
	cr_assert_eq(fx_get64(d + 12), SW0_GUID);
	cr_assert_eq(fx_get64(d + 20), SW0_GUID);
	cr_assert_eq(fx_get16(d + 30), 0xd2f2);
	cr_assert_eq(d[36], 1);
	cr_assert_eq(res.reply[192 + 1], 1, "ReturnPath[1]");
	/* PortInfo: LocalPortNum is the ingress port whatever the modifier */
	d = dr_get(0x0015, 5, path, 1);
	cr_assert_eq(d[28], 1);
	cr_assert_eq(fx_get16(d + 16), 1, "a switch port carries port 0's LID");
	/* 0,1,5: spine0, entered on leaf0's port (leaf index + 1) */
	d = dr_get(0x0011, 0, path, 2);
	cr_assert_eq(fx_get64(d + 12), SPINE0_GUID);
	cr_assert_eq(d[3], 2);
	cr_assert_eq(d[36], 1);
	/* 0,1,5,2: leaf1, entered on its uplink 5 */
	d = dr_get(0x0011, 0, path, 3);
	cr_assert_eq(fx_get64(d + 12), LEAF1_GUID);
	cr_assert_eq(d[36], 5);
	d = dr_get(0x0015, 0, path, 3);
	cr_assert_eq(d[28], 5);
	/* 0,1,5,2,1: a/mlx5_1, local: answered here */
	d = dr_get(0x0011, 0, path, 4);
	cr_assert_eq(fx_get64(d + 12), 0xa088c20300ab0002ull);
	cr_assert_eq(d[36], 1);
	cr_assert_eq(res.reply_slid, 0x102);
	cr_assert_eq(res.reply[192 + 1], 1);
	cr_assert_eq(res.reply[192 + 2], 1);
	cr_assert_eq(res.reply[192 + 3], 5);
	cr_assert_eq(res.reply[192 + 4], 1);
	/* back to the sender through its leaf: 0,1,1 */
	const uint8_t back[] = { 0, 1, 1 };
	d = dr_get(0x0011, 0, back, 2);
	cr_assert_eq(fx_get64(d + 20), 0xa088c20300ab0001ull);
}

Test(smp, dr_walk_to_remote_ca_forwards)
{
	const uint8_t path[] = { 0, 1, 5, 2, 2 };
	const uint8_t *d;

	fx_dr(m, 0x0011, 0, path, 4);
	cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
	cr_assert_eq(res.v, MAD_FORWARD);
	cr_assert_eq(res.target_ca, CA_B1);
	cr_assert_eq(res.ingress_port, 1);
	cr_assert_null(res.reply);
	/* node-b answers it for its CA */
	cr_assert_eq(answer(CA_B1, m, 256), 0);
	reply_to(m, 0x8000);
	d = res.reply + 64;
	cr_assert_eq(d[2], 1);
	cr_assert_eq(fx_get64(d + 12), 0xa088c20300cd0002ull);
	cr_assert_eq(fx_get64(d + 20), 0xa088c20300cd0003ull);
	cr_assert_eq(d[36], 1);
	cr_assert_eq(res.reply[6], 0);
	cr_assert_eq(res.reply[192 + 4], 1);
	cr_assert_eq(res.reply_slid, 0x202);
	cr_assert_eq(res.reply_qpn, 0);
	fx_dr(m, 0x0015, 0, path, 4);
	cr_assert_eq(answer(CA_B1, m, 256), 0);
	cr_assert_eq(res.reply[64 + 28], 1);
	cr_assert_eq(fx_get16(res.reply + 64 + 16), 0x202);
	fx_dr(m, 0x0010, 0, path, 4);
	cr_assert_eq(answer(CA_B1, m, 256), 0);
	cr_assert_str_eq((const char *)res.reply + 64, "node-b mlx5_1");
}

Test(smp, dr_paths_into_nothing_drop)
{
	static const struct { uint8_t path[6]; int hops; } bad[] = {
		{ { 0, 2 }, 1 },		/* a CA has only port 1 */
		{ { 0, 1, 3 }, 2 },		/* leaf0 port 3: nothing there */
		{ { 0, 1, 0 }, 2 },		/* port 0 is not an exit */
		{ { 0, 1, 7 }, 2 },		/* leaf0 has 6 ports */
		{ { 0, 1, 2, 1 }, 3 },		/* a CA does not forward */
		{ { 0, 1, 5, 2, 2, 1 }, 5 },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fx_dr(m, 0x0011, 0, bad[i].path, bad[i].hops);
		cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
		cr_assert_eq(res.v, MAD_DROP, "path %zu", i);
		cr_assert_null(res.reply);
	}
}

Test(smp, switch_ports_state)
{
	const uint8_t path[] = { 0, 1 };
	const uint8_t *d;

	d = dr_get(0x0015, 0, path, 1);		/* port 0 */
	cr_assert_eq(fx_get32(d + 20) & 0x4000, 0x4000, "HasExtendedSpeeds on port 0");
	cr_assert_eq(fx_get32(d + 20) & 0x2, 0x2, "IsSM on the SM's switch");
	cr_assert_eq(d[32] & 0x0f, 4);
	d = dr_get(0x0015, 2, path, 1);		/* to b/mlx5_0 */
	cr_assert_eq(d[32] & 0x0f, 4);
	cr_assert_eq(d[33] >> 4, 5);
	cr_assert_eq(d[62] >> 4, 8);
	d = dr_get(0x0015, 3, path, 1);		/* nothing */
	cr_assert_eq(d[32] & 0x0f, 1, "Down");
	cr_assert_eq(d[33] >> 4, 2, "Polling");
	d = dr_get(0x0015, 6, path, 1);		/* uplink to spine1 */
	cr_assert_eq(d[32] & 0x0f, 4);
	fx_dr(m, 0x0015, 7, path, 1);
	cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
	reply_to(m, 0x8000 | 0x001c);
}

Test(smp, ca_port_down_takes_the_leaf_port_down)
{
	const uint8_t path[] = { 0, 1, 2 };
	const uint8_t *d;

	ib_b->hcas[0].port_state = 1;
	ib_b->hcas[0].phys_state = 3;		/* Disabled */
	d = dr_get(0x0015, 2, path, 1);
	cr_assert_eq(d[32] & 0x0f, 1);
	cr_assert_eq(d[33] >> 4, 2);
	fx_dr(m, 0x0011, 0, path, 2);
	cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP);
	/* LID-routed: no route to a down port either */
	fx_mad(m, 0x01, 1, 0x01, 0x0011, 0, 7);
	cr_assert_eq(send_from(CA_A0, 0x201, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP);
	/* the owner still answers its own port at hop 0 */
	ib_a->hcas[0].port_state = 1;
	d = dr_get(0x0015, 0, path, 0);
	cr_assert_eq(d[32] & 0x0f, 1);
	fx_dr(m, 0x0011, 0, path, 1);		/* but cannot leave it */
	cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP);
}

Test(smp, switch_info)
{
	const uint8_t path[] = { 0, 1 };
	const uint8_t *d = dr_get(0x0012, 0, path, 1);

	cr_assert_eq(fx_get16(d + 0), 0xc000);	/* LinearFDBCap */
	cr_assert_eq(fx_get16(d + 6), 0x202);	/* LinearFDBTop */
	cr_assert_eq(d[16] & 0x08, 0x08);	/* EnhancedPort0 (bit 132) */
	fx_dr(m, 0x0012, 0, path, 0);		/* a CA has none */
	cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
	reply_to(m, 0x8000 | 0x000c);
}

Test(smp, lid_routed_ingress)
{
	static const struct { uint32_t lid; uint64_t guid; int port; } t[] = {
		{ 1, SW0_GUID, 1 },		/* own leaf: the CA's leaf port */
		{ 2, LEAF1_GUID, 5 },		/* other leaf: from spine0 */
		{ 3, SPINE0_GUID, 1 },		/* spine: leaf0 + 1 */
		{ 0x102, 0xa088c20300ab0002ull, 1 },
		{ 0x101, 0xa088c20300ab0000ull, 1 },	/* itself */
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		fx_mad(m, 0x01, 1, 0x01, 0x0011, 0, 100 + i);
		cr_assert_eq(send_from(CA_A0, t[i].lid, m, 256), 0);
		reply_to(m, 0);
		cr_assert_eq(fx_get64(res.reply + 64 + 12), t[i].guid, "LID 0x%x", t[i].lid);
		cr_assert_eq(res.reply[64 + 36], t[i].port, "LID 0x%x", t[i].lid);
		cr_assert_eq(res.reply_slid, t[i].lid);
		cr_assert_eq(res.reply_qpn, 0);
	}
	fx_mad(m, 0x01, 1, 0x01, 0x0015, 1, 9);	/* ibaddr: PortInfo mod 1 to self */
	cr_assert_eq(send_from(CA_A0, 0x101, m, 256), 0);
	cr_assert_eq(fx_get16(res.reply + 64 + 16), 0x101);
	fx_mad(m, 0x01, 1, 0x01, 0x0011, 0, 10);
	cr_assert_eq(send_from(CA_A0, 0x201, m, 256), 0);
	cr_assert_eq(res.v, MAD_FORWARD);
	cr_assert_eq(res.target_ca, CA_B0);
	cr_assert_eq(send_from(CA_A0, 0x777, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP, "unknown LID: the sender times out");
}

Test(smp, sm_info)
{
	fx_mad(m, 0x01, 1, 0x01, 0x0020, 0, 42);
	cr_assert_eq(send_from(CA_A1, 1, m, 256), 0);
	reply_to(m, 0);
	cr_assert_eq(fx_get64(res.reply + 64), SW0_GUID);
	cr_assert_eq(fx_get64(res.reply + 64 + 8), 0, "SM_Key");
	cr_assert_neq(fx_get32(res.reply + 64 + 16), 0, "ActCount");
	cr_assert_eq(res.reply[64 + 20], 0xf3, "priority 15, MASTER");
	cr_assert_eq(res.reply_slid, 1);
}

Test(smp, pkey_guid_tables)
{
	const uint8_t path[] = { 0, 1 };
	const uint8_t *d = dr_get(0x0016, 0, path, 0);

	cr_assert_eq(fx_get16(d), 0xffff);
	cr_assert_eq(fx_get16(d + 2), 0);
	d = dr_get(0x0014, 0, path, 0);
	cr_assert_eq(fx_get64(d), 0xa088c20300ab0001ull);
	cr_assert_eq(fx_get64(d + 8), 0);
	d = dr_get(0x0014, 0, path, 1);
	cr_assert_eq(fx_get64(d), SW0_GUID);
	d = dr_get(0x0016, 3u << 16, path, 1);	/* switch: port in the high half */
	cr_assert_eq(fx_get16(d), 0xffff);
}

Test(smp, set_unknown_and_bad_version)
{
	const uint8_t path[] = { 0 };

	fx_dr(m, 0x0015, 0, path, 0);
	m[3] = 0x02;				/* Set */
	cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
	cr_assert_eq(res.v, MAD_REPLY);
	cr_assert_eq(res.reply[3], 0x81);
	cr_assert_eq(fx_get16(res.reply + 4), 0x800c);
	cr_assert_eq(fx_get16(res.reply + 64 + 16), 0x101, "the current value");
	fx_dr(m, 0x0018, 0, path, 0);		/* VLArbitration: not modelled */
	cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
	reply_to(m, 0x800c);
	fx_mad(m, 0x01, 2, 0x01, 0x0011, 0, 5);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0x0004);
	fx_mad(m, 0x01, 1, 0x05, 0x0011, 0, 5);	/* Trap: no such method here */
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	cr_assert_eq(fx_get16(res.reply + 4), 0x0008);
}

TestSuite(sa, .init = setup, .fini = teardown);

static void sa_req(uint8_t method, uint16_t attr, uint64_t comp)
{
	fx_mad(m, 0x03, 2, method, attr, 0, 0xabcdef);
	fx_put64(m + 48, comp);
}

Test(sa, path_record_dgid_to_dlid)
{
	sa_req(0x01, 0x0035, (1 << 2) | (1 << 3));	/* DGID | SGID, as ibping -G */
	fx_put64(m + 56 + 8, 0xfe80000000000000ull);
	fx_put64(m + 56 + 16, 0xa088c20300cd0003ull);
	fx_put64(m + 56 + 24, 0xfe80000000000000ull);
	fx_put64(m + 56 + 32, 0xa088c20300ab0001ull);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0);
	cr_assert_eq(res.reply_len, 256);
	cr_assert_eq(res.reply_slid, 1);
	cr_assert_eq(res.reply_qpn, 1);
	cr_assert_eq(res.reply[2], 2);
	cr_assert_eq(fx_get16(res.reply + 44), 8, "AttributeOffset: 64-byte records");
	cr_assert_eq(fx_get64(res.reply + 56 + 16), 0xa088c20300cd0003ull);
	cr_assert_eq(fx_get16(res.reply + 56 + 40), 0x202, "DLID");
	cr_assert_eq(fx_get16(res.reply + 56 + 42), 0x101, "SLID");
	cr_assert_eq(fx_get16(res.reply + 56 + 50), 0xffff, "PKey");
	cr_assert_eq(res.reply[56 + 53] & 0x0f, 0, "SL");
	cr_assert_eq(res.reply[56 + 54] & 0x3f, 5, "MTU 4096");
	cr_assert_eq(res.reply[56 + 55] & 0x3f, 21, "rate 400");
	cr_assert_eq(res.reply[56 + 49] & 0x80, 0x80, "reversible");
	fx_put64(m + 56 + 16, 0xa088c20300ee0001ull);	/* nobody */
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0x0300);
}

Test(sa, only_at_the_sm)
{
	sa_req(0x12, 0x0011, 0);
	cr_assert_eq(send_from(CA_A0, 2, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP);
	cr_assert_eq(send_from(CA_A0, 0x201, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP);
}

Test(sa, node_record_table)
{
	sa_req(0x12, 0x0011, 0);
	cr_assert_eq(send_from(CA_A1, 1, m, 256), 0);
	reply_to(m, 0);
	cr_assert_eq(fx_get16(res.reply + 44), 14, "AttributeOffset at 44..45");
	cr_assert_eq(res.reply_len, 56 + 8 * 112, "all 4 CAs and 4 switches, reassembled");
	cr_assert_eq(res.reply[24], 1, "RMPPVersion");
	cr_assert_eq(res.reply[25], 1, "RMPPType DATA");
	cr_assert_eq(res.reply[26] & 0x07, 0x03, "Active | First (more segments follow)");
	cr_assert_eq(fx_get32(res.reply + 28), 1, "SegmentNumber");
	cr_assert_eq(fx_get32(res.reply + 32), 8 * 112 + 5 * 20, "PayloadLength");
	const uint8_t *r = res.reply + 56;
	cr_assert_eq(fx_get16(r), 0x101);
	cr_assert_eq(r[4 + 2], 1);
	cr_assert_eq(fx_get64(r + 4 + 20), 0xa088c20300ab0001ull);
	cr_assert_str_eq((const char *)r + 44, "node-a mlx5_0");
	r += 3 * 112;
	cr_assert_str_eq((const char *)r + 44, "node-b mlx5_1");
	r += 112;
	cr_assert_eq(fx_get16(r), 1);
	cr_assert_eq(r[4 + 2], 2);
	cr_assert_str_eq((const char *)r + 44, "MF0;leaf-r0-g0:MQM9700/U1");
}

Test(sa, node_record_filters)
{
	sa_req(0x12, 0x0011, 1 << 0);		/* LID */
	fx_put16(m + 56, 0x202);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0);
	cr_assert_eq(res.reply_len, 56 + 112, "one record: shorter than 256");
	cr_assert_eq(res.reply[26] & 0x07, 0x07, "Active | First | Last");
	cr_assert_str_eq((const char *)res.reply + 56 + 44, "node-b mlx5_1");
	sa_req(0x12, 0x0011, 1 << 7);		/* NodeGUID */
	fx_put64(m + 56 + 4 + 12, LEAF1_GUID);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	cr_assert_eq(res.reply_len, 56 + 112);
	cr_assert_eq(fx_get16(res.reply + 56), 2);
	sa_req(0x12, 0x0011, 1 << 4);		/* NodeType switch */
	m[56 + 4 + 2] = 2;
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	cr_assert_eq(res.reply_len, 56 + 4 * 112);
	sa_req(0x12, 0x0011, 1 << 0);
	fx_put16(m + 56, 0x999);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0);
	cr_assert_eq(res.reply_len, 56, "an empty table is a success");
	cr_assert_eq(fx_get16(res.reply + 44), 0);
	sa_req(0x01, 0x0011, 1 << 0);		/* Get: exactly one */
	fx_put16(m + 56, 0x999);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0x0300);
	sa_req(0x01, 0x0011, 0);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0x0400);
	sa_req(0x01, 0x0011, 1 << 0);
	fx_put16(m + 56, 3);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0);
	cr_assert_eq(res.reply_len, 256);
	cr_assert_eq(fx_get64(res.reply + 56 + 4 + 12), SPINE0_GUID);
}

Test(sa, port_info_records)
{
	sa_req(0x12, 0x0012, 1 << 0);
	fx_put16(m + 56, 0x102);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0);
	cr_assert_eq(fx_get16(res.reply + 44), 9, "72-byte records");
	cr_assert_eq(res.reply_len, 56 + 72);
	cr_assert_eq(res.reply[56 + 2], 1, "PortNum");
	cr_assert_eq(fx_get16(res.reply + 56 + 4 + 16), 0x102);
	cr_assert_eq(fx_get32(res.reply + 56 + 4 + 20), 0xa651e848);
	sa_req(0x12, 0x0012, 1 << 0);
	fx_put16(m + 56, 1);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	cr_assert_eq(res.reply_len, 56 + 7 * 72, "switch ports 0..6");
	sa_req(0x12, 0x0012, 1 << 7);		/* saquery -s: IsSM set */
	fx_put32(m + 56 + 4 + 20, 0x2);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	cr_assert_eq(res.reply_len, 56 + 72);
	cr_assert_eq(fx_get16(res.reply + 56), 1);
	cr_assert_eq(res.reply[56 + 2], 0);
}

Test(sa, sm_info_and_link_records)
{
	sa_req(0x12, 0x0018, 0);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0);
	cr_assert_eq(res.reply_len, 56 + 32);
	cr_assert_eq(fx_get16(res.reply + 56), 1);
	cr_assert_eq(fx_get64(res.reply + 56 + 4), SW0_GUID);
	cr_assert_eq(res.reply[56 + 4 + 20], 0xf3);
	sa_req(0x12, 0x0020, 1 << 0);		/* links from a/mlx5_0 */
	fx_put16(m + 56, 0x101);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	cr_assert_eq(res.reply_len, 56 + 8);
	cr_assert_eq(res.reply[56 + 2], 1);
	cr_assert_eq(res.reply[56 + 3], 1);
	cr_assert_eq(fx_get16(res.reply + 56 + 4), 1);
	sa_req(0x12, 0x0020, 0);		/* 4 CA links x 2 + 4 leaf-spine x 2 */
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	cr_assert_eq(res.reply_len, 56 + 16 * 8);
	sa_req(0x12, 0x0031, 0);		/* services: none */
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0);
	cr_assert_eq(res.reply_len, 56);
	sa_req(0x12, 0x0077, 0);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0x000c);
	sa_req(0x12, 0x0011, 0);
	m[2] = 1;
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	cr_assert_eq(fx_get16(res.reply + 4), 0x0004);
}

Test(sa, down_ports_unknown_to_the_sm)
{
	ib_b->hcas[1].port_state = 1;
	sa_req(0x12, 0x0011, 0);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	cr_assert_eq(res.reply_len, 56 + 7 * 112);
	sa_req(0x01, 0x0035, 1 << 4);
	fx_put16(m + 56 + 40, 0x202);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0x0300);
}

TestSuite(pma, .init = setup, .fini = teardown);

static void pma_req(uint16_t attr, uint8_t port)
{
	fx_mad(m, 0x04, 1, 0x01, attr, 0, 0x77);
	m[64 + 1] = port;			/* PortSelect */
	fx_put16(m + 64 + 2, 0xffff);		/* CounterSelect */
}

Test(pma, class_port_info)
{
	pma_req(0x0001, 0);
	cr_assert_eq(send_from(CA_A0, 0x101, m, 256), 0);
	reply_to(m, 0);
	cr_assert_eq(res.reply[64], 1);
	cr_assert_eq(res.reply[65], 1);
	cr_assert_eq(fx_get16(res.reply + 66), 0x1300,
		     "AllPortSelect | extended counters | XmitWait");
	cr_assert_eq(res.reply_qpn, 1);
	cr_assert_eq(res.reply_slid, 0x101);
}

Test(pma, port_counters_saturate)
{
	uint64_t *c = ib_a->hcas[0].counters;
	const uint8_t *d;

	c[0] = 70000;			/* symbol_error, 16 bits */
	c[1] = 7;			/* link_error_recovery */
	c[2] = 300;			/* link_downed, 8 bits */
	c[3] = 11;			/* port_rcv_errors */
	c[6] = 12;			/* port_xmit_discards */
	c[9] = 20;			/* local_link_integrity_errors, 4 bits */
	c[10] = 2;			/* excessive_buffer_overrun_errors */
	c[11] = 13;			/* VL15_dropped */
	c[12] = 0x100000005ull;		/* port_xmit_data, 32 bits */
	c[13] = 123456;			/* port_rcv_data */
	c[14] = 1000;
	c[15] = 2000;
	c[16] = 99;			/* port_xmit_wait */
	pma_req(0x0012, 1);
	cr_assert_eq(send_from(CA_A0, 0x101, m, 256), 0);
	d = reply_to(m, 0) + 64;
	cr_assert_eq(d[1], 1, "PortSelect echoed");
	cr_assert_eq(fx_get16(d + 2), 0xffff);
	cr_assert_eq(fx_get16(d + 4), 0xffff);
	cr_assert_eq(d[6], 7);
	cr_assert_eq(d[7], 0xff);
	cr_assert_eq(fx_get16(d + 8), 11);
	cr_assert_eq(fx_get16(d + 14), 12);
	cr_assert_eq(d[19], 0xf2);
	cr_assert_eq(fx_get16(d + 22), 13);
	cr_assert_eq(fx_get32(d + 24), 0xffffffffu);
	cr_assert_eq(fx_get32(d + 28), 123456);
	cr_assert_eq(fx_get32(d + 32), 1000);
	cr_assert_eq(fx_get32(d + 36), 2000);
	cr_assert_eq(fx_get32(d + 40), 99);
	pma_req(0x001d, 1);
	c[17] = 5;
	c[20] = 6;
	cr_assert_eq(send_from(CA_A0, 0x101, m, 256), 0);
	d = reply_to(m, 0) + 64;
	cr_assert_eq(fx_get64(d + 8), 0x100000005ull);
	cr_assert_eq(fx_get64(d + 16), 123456);
	cr_assert_eq(fx_get64(d + 24), 1000);
	cr_assert_eq(fx_get64(d + 32), 2000);
	cr_assert_eq(fx_get64(d + 40), 5);
	cr_assert_eq(fx_get64(d + 64), 6);
	pma_req(0x0012, 2);			/* no port 2 */
	cr_assert_eq(send_from(CA_A0, 0x101, m, 256), 0);
	reply_to(m, 0x001c);
}

Test(pma, remote_ca_forwards_switch_counts_nothing)
{
	ib_b->hcas[1].counters[14] = 4242;
	pma_req(0x0012, 1);
	cr_assert_eq(send_from(CA_A0, 0x202, m, 256), 0);
	cr_assert_eq(res.v, MAD_FORWARD);
	cr_assert_eq(res.target_ca, CA_B1);
	cr_assert_eq(answer(CA_B1, m, 256), 0);
	cr_assert_eq(fx_get32(reply_to(m, 0) + 64 + 32), 4242);
	cr_assert_eq(res.reply_slid, 0x202);
	pma_req(0x0012, 3);			/* leaf0 port 3 */
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	reply_to(m, 0);
	cr_assert_eq(res.reply[64 + 1], 3);
	cr_assert_eq(fx_get32(res.reply + 64 + 24), 0);
	cr_assert_eq(res.reply_slid, 1);
	pma_req(0x0012, 3);			/* spine0 has 2 ports */
	cr_assert_eq(send_from(CA_A0, 3, m, 256), 0);
	reply_to(m, 0x001c);
}

TestSuite(vendor, .init = setup, .fini = teardown);

static void ping(uint8_t method)
{
	fx_mad(m, 0x32, 1, method, 0x0000, 0, 0x5151);
	m[37] = 0x00;			/* OUI 0x001405 */
	m[38] = 0x14;
	m[39] = 0x05;
}

Test(vendor, requests_go_to_server_agents)
{
	ping(0x01);
	cr_assert_eq(send_from(CA_A0, 0x202, m, 256), 0);
	cr_assert_eq(res.v, MAD_DELIVER);
	cr_assert_eq(res.target_ca, CA_B1);
	cr_assert_eq(send_from(CA_A0, 0x102, m, 256), 0);
	cr_assert_eq(res.v, MAD_DELIVER);
	cr_assert_eq(res.target_ca, CA_A1);
	cr_assert_eq(send_from(CA_A0, 0x101, m, 256), 0);
	cr_assert_eq(res.target_ca, CA_A0);
	cr_assert_eq(send_from(CA_A0, 1, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP, "no ping server on a switch");
	cr_assert_eq(send_from(CA_A0, 0x300, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP);
	cr_assert_eq(answer(CA_B1, m, 256), 0);
	cr_assert_eq(res.v, MAD_DELIVER);
	cr_assert_eq(res.target_ca, CA_B1);
}

Test(vendor, responses_go_to_the_requester)
{
	/* ibping -S on a/mlx5_1 answers node-b's mlx5_0 */
	ping(0x81);
	cr_assert_eq(send_from(CA_A1, 0x201, m, 256), 0);
	cr_assert_eq(res.v, MAD_DELIVER);
	cr_assert_eq(res.target_ca, CA_B0);
	cr_assert_eq(answer(CA_B0, m, 256), 0);	/* relayed to node-b */
	cr_assert_eq(res.v, MAD_DELIVER);
	cr_assert_eq(res.target_ca, CA_B0);
	cr_assert_eq(send_from(CA_A1, 0x999, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP);
	fx_mad(m, 0x07, 1, 0x03, 0x0010, 0, 1);	/* CM: nobody here */
	cr_assert_eq(send_from(CA_A0, 0x202, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP);
}

TestSuite(malformed, .init = setup, .fini = teardown);

Test(malformed, rejected_without_a_crash)
{
	struct mad_in in = { .ca = 0, .dlid = 1, .mad = m, .len = 256 };
	const uint8_t path[] = { 0, 1 };

	fx_mad(m, 0x01, 1, 0x01, 0x0011, 0, 1);
	in.len = 23;
	cr_assert_eq(mad_process(&fab, &in, &res), -EINVAL);
	cr_assert_eq(res.v, MAD_DROP);
	cr_assert_null(res.reply);
	in.len = 256;
	m[0] = 2;
	cr_assert_eq(mad_process(&fab, &in, &res), -EINVAL);
	m[0] = 1;
	in.ca = 4;
	cr_assert_eq(mad_process(&fab, &in, &res), -EINVAL);
	in.ca = -1;
	cr_assert_eq(mad_process(&fab, &in, &res), -EINVAL);
	in.ca = 0;
	in.mad = NULL;
	cr_assert_eq(mad_process(&fab, &in, &res), -EINVAL);
	cr_assert_eq(mad_process(NULL, &in, &res), -EINVAL);
	cr_assert_eq(mad_process(&fab, NULL, &res), -EINVAL);
	in.mad = m;
	cr_assert_eq(mad_process(&fab, &in, NULL), -EINVAL);
	fx_dr(m, 0x0011, 0, path, 1);
	m[7] = 64;
	cr_assert_eq(mad_process(&fab, &in, &res), -EINVAL);
	cr_assert_eq(mad_answer_local(&fab, 3, 1, m, 256, &res), -EINVAL);
	m[7] = 1;
	cr_assert_eq(mad_answer_local(&fab, 3, 2, m, 256, &res), -EINVAL);
	cr_assert_eq(mad_answer_local(&fab, 9, 1, m, 256, &res), -EINVAL);
	cr_assert_eq(mad_answer_local(&fab, 3, 1, m, 10, &res), -EINVAL);
	cr_assert_eq(mad_answer_local(&fab, 3, 1, NULL, 256, &res), -EINVAL);
}

Test(malformed, short_mads_are_zero_padded)
{
	uint8_t *s = malloc(40);

	fx_mad(m, 0x81, 1, 0x01, 0x0011, 0, 3);
	memcpy(s, m, 40);			/* hop count 0, no path */
	cr_assert_eq(send_from(CA_A0, 0xffff, s, 40), 0);
	cr_assert_eq(res.v, MAD_REPLY);
	cr_assert_eq(res.reply[64 + 2], 1);
	fx_mad(m, 0x03, 2, 0x12, 0x0011, 0, 3);
	memcpy(s, m, 40);
	cr_assert_eq(send_from(CA_A0, 1, s, 40), 0);
	cr_assert_eq(res.reply_len, 56 + 8 * 112);
	free(s);
	/* an RMPP-sized send is read as its first 256 bytes */
	uint8_t *big = calloc(1, 1000);
	memcpy(big, m, 256);
	cr_assert_eq(send_from(CA_A0, 1, big, 1000), 0);
	cr_assert_eq(res.v, MAD_REPLY);
	free(big);
}

Test(malformed, returning_smps_are_not_requests)
{
	const uint8_t path[] = { 0, 1 };

	fx_dr(m, 0x0011, 0, path, 1);
	m[4] = 0x80;				/* D bit */
	cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP);
	cr_assert_eq(answer(CA_B1, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP);
	fx_dr(m, 0x0011, 0, path, 1);
	m[3] = 0x81;
	cr_assert_eq(send_from(CA_A0, 0xffff, m, 256), 0);
	cr_assert_eq(res.v, MAD_DROP);
}

/* ---- ibnetdiscover over 2 members x 256 HCAs ---- */

struct node_seen {
	uint64_t guid;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* One DR Get from CA 0 through f; a forwarded one is answered by its
 * owner, as the daemon would.  Returns the data or NULL (dropped). */
static const uint8_t *walk_get(struct ib_fabric *f, uint16_t attr, uint32_t mod,
			       const uint8_t *path, int hops, long *mads)
{
	struct mad_in in = { .ca = 0, .dlid = 0xffff, .qpn = 0, .mad = m, .len = 256 };

	fx_dr(m, attr, mod, path, hops);
	mad_result_free(&res);
	(*mads)++;
	cr_assert_eq(mad_process(f, &in, &res), 0);
	if (res.v == MAD_FORWARD) {
		int ca = res.target_ca;

		mad_result_free(&res);
		cr_assert_eq(mad_answer_local(f, ca, 1, m, 256, &res), 0);
	}
	if (res.v != MAD_REPLY)
		return NULL;
	cr_assert_eq(fx_get16(res.reply + 4), 0x8000);
	return res.reply + 64;
}

Test(walk, ibnetdiscover_512_cas, .timeout = 60)
{
	enum { MAXN = 1024 };
	struct state_ib *a = fx_ib("node-a", 256, 0x100, 0xa088c20300ab0000ull, 32, 2);
	struct state_ib *b = fx_ib("node-b", 256, 0x200, 0xa088c20300cd0000ull, 32, 2);
	struct ib_member mm[2];
	struct ib_fabric f;
	static uint8_t paths[MAXN][64];
	static int hops[MAXN], type[MAXN], nports[MAXN], inport[MAXN];
	static uint64_t guids[MAXN], sorted[MAXN];
	int n = 0, cas = 0, sws = 0;
	long mads = 0;
	double t0;

	fx_member(&mm[0], "node-a", a, true);
	fx_member(&mm[1], "node-b", b, false);
	cr_assert_eq(ib_fabric_build(&f, mm, 2), 0);
	t0 = now();
	/* start: the local port at hop 0 */
	const uint8_t *d = walk_get(&f, 0x0011, 0, paths[0], 0, &mads);
	cr_assert_not_null(d);
	guids[0] = fx_get64(d + 12);
	type[0] = d[2];
	nports[0] = d[3];
	inport[0] = d[36];
	hops[0] = 0;
	n = 1;
	for (int q = 0; q < n; q++) {
		/* a CA is only left through the start node's port */
		if (type[q] == 1 && q != 0)
			continue;
		for (int p = 1; p <= nports[q]; p++) {
			uint8_t np[64];
			int nh = hops[q] + 1;

			if (type[q] == 2) {
				if (p == inport[q])
					continue;
				d = walk_get(&f, 0x0015, (uint32_t)p, paths[q], hops[q], &mads);
				cr_assert_not_null(d);
				if ((d[33] >> 4) != 5)
					continue;	/* not LinkUp */
			}
			memcpy(np, paths[q], 64);
			np[nh] = (uint8_t)p;
			d = walk_get(&f, 0x0011, 0, np, nh, &mads);
			cr_assert_not_null(d, "path to hop %d port %d answered", nh, p);
			uint64_t g = fx_get64(d + 12);
			bool dup = false;
			for (int k = 0; k < n && !dup; k++)
				dup = guids[k] == g;
			if (dup)
				continue;
			cr_assert_lt(n, MAXN);
			guids[n] = g;
			type[n] = d[2];
			nports[n] = d[3];
			inport[n] = d[36];
			hops[n] = nh;
			memcpy(paths[n], np, 64);
			n++;
		}
	}
	double took = now() - t0;
	for (int i = 0; i < n; i++) {
		cas += type[i] == 1;
		sws += type[i] == 2;
	}
	cr_assert_eq(cas, 512);
	cr_assert_eq(sws, f.nsws);
	memcpy(sorted, guids, sizeof(guids[0]) * (size_t)n);
	qsort(sorted, (size_t)n, sizeof(sorted[0]), cmp_u64);
	for (int i = 1; i < n; i++)
		cr_assert_neq(sorted[i], sorted[i - 1], "every node once");
	cr_assert_lt(took, 10.0, "%ld MADs took %.3f s", mads, took);
	cr_log_info("walk: %d nodes, %ld MADs, %.3f s", n, mads, took);
	mad_result_free(&res);
	ib_fabric_free(&f);
	free(a);
	free(b);
}
