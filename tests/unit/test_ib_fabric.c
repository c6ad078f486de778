/* The fabric model: member sorting, the rail-optimised fat tree (wiring,
 * LIDs, GUIDs, descriptions), lookups, degenerate member sets, rails
 * sharing leaves when spines would be too wide, and the large fabric the
 * benchmark runs. */
#include <errno.h>
#include <time.h>

#include <criterion/criterion.h>

#include "tests/unit/ib_mad_fixture.h"

static struct state_ib *ib_a, *ib_b;
static struct ib_member mem[2];
static struct ib_fabric fab;

/* node-b is given first: the fabric sorts members by name. */
static void setup(void)
{
	ib_a = fx_ib("node-a", 2, 0x101, 0xa088c20300ab0000ull, 4, 2);
	ib_b = fx_ib("node-b", 2, 0x201, 0xa088c20300cd0000ull, 4, 2);
	fx_member(&mem[0], "node-b", ib_b, false);
	fx_member(&mem[1], "node-a", ib_a, true);
	cr_assert_eq(ib_fabric_build(&fab, mem, 2), 0);
}

static void teardown(void)
{
	ib_fabric_free(&fab);
	free(ib_a);
	free(ib_b);
}

TestSuite(fabric, .init = setup, .fini = teardown);

Test(fabric, cas_in_member_name_order)
{
	cr_assert_eq(fab.ncas, 4);
	cr_assert_eq(fab.cas[0].hca, &ib_a->hcas[0]);
	cr_assert_eq(fab.cas[1].hca, &ib_a->hcas[1]);
	cr_assert_eq(fab.cas[2].hca, &ib_b->hcas[0]);
	cr_assert_eq(fab.cas[3].hca, &ib_b->hcas[1]);
	cr_assert_eq(fab.cas[0].member, 1);	/* index into the caller's array */
	cr_assert_eq(fab.cas[2].member, 0);
	cr_assert(fab.cas[0].local && fab.cas[1].local);
	cr_assert(!fab.cas[2].local && !fab.cas[3].local);
	cr_assert_eq(fab.cas[3].ib, ib_b);
}

Test(fabric, leaves_per_rail_then_spines)
{
	cr_assert_eq(fab.nleaves, 2);
	cr_assert_eq(fab.nsws, 4);
	cr_assert_eq(fab.rails_per_leaf, 1);
	cr_assert_str_eq(fab.sws[0].desc, "MF0;leaf-r0-g0:MQM9700/U1");
	cr_assert_str_eq(fab.sws[1].desc, "MF0;leaf-r1-g0:MQM9700/U1");
	cr_assert_str_eq(fab.sws[2].desc, "MF0;spine-0:MQM9700/U1");
	cr_assert_str_eq(fab.sws[3].desc, "MF0;spine-1:MQM9700/U1");
	cr_assert_eq(fab.sws[0].nports, 6);	/* 4 CA ports + 2 uplinks */
	cr_assert_eq(fab.sws[2].nports, 2);	/* one per leaf */
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(fab.sws[i].lid, (uint32_t)i + 1);
		cr_assert_eq(fab.sws[i].guid, 0xb8cef60300000000ull | (uint64_t)(i + 1) << 8);
	}
	cr_assert_eq(fab.sm_lid, 1);
	cr_assert_eq(fab.sm_switch, 0);
}

Test(fabric, wiring)
{
	/* CA of member slot s, rail r -> leaf r port s+1 */
	const struct { int ca, leaf, port; } w[] = { { 0, 0, 1 }, { 2, 0, 2 }, { 1, 1, 1 }, { 3, 1, 2 } };

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		const struct ib_fab_ca *ca = &fab.cas[w[i].ca];
		const struct ib_link *back = &fab.sws[w[i].leaf].port[w[i].port];

		cr_assert_eq(ca->up.kind, IB_LINK_SWITCH);
		cr_assert_eq(ca->up.idx, w[i].leaf);
		cr_assert_eq(ca->up.port, w[i].port);
		cr_assert_eq(back->kind, IB_LINK_CA);
		cr_assert_eq(back->idx, w[i].ca);
		cr_assert_eq(back->port, 1);
	}
	cr_assert_eq(fab.sws[0].port[3].kind, IB_LINK_NONE);
	/* leaf l port leaf_ports+1+s <-> spine s port l+1 */
	for (int l = 0; l < 2; l++)
		for (int s = 0; s < 2; s++) {
			const struct ib_link *up = &fab.sws[l].port[5 + s];
			const struct ib_link *down = &fab.sws[2 + s].port[l + 1];

			cr_assert_eq(up->kind, IB_LINK_SWITCH);
			cr_assert_eq(up->idx, 2 + s);
			cr_assert_eq(up->port, l + 1);
			cr_assert_eq(down->kind, IB_LINK_SWITCH);
			cr_assert_eq(down->idx, l);
			cr_assert_eq(down->port, 5 + s);
		}
}

Test(fabric, lookups)
{
	cr_assert_eq(ib_fabric_ca_by_lid(&fab, 0x202), 3);
	cr_assert_eq(ib_fabric_ca_by_lid(&fab, 0x101), 0);
	cr_assert_eq(ib_fabric_ca_by_lid(&fab, 1), -1);
	cr_assert_eq(ib_fabric_ca_by_lid(&fab, 0x999), -1);
	cr_assert_eq(ib_fabric_ca_by_guid(&fab, 0xa088c20300cd0003ull), 3);
	cr_assert_eq(ib_fabric_ca_by_guid(&fab, 0xa088c20300cd0002ull), -1);	/* node GUID */
	cr_assert_eq(ib_fabric_switch_by_lid(&fab, 3), 2);
	cr_assert_eq(ib_fabric_switch_by_lid(&fab, 0x101), -1);
	cr_assert_eq(ib_fabric_switch_by_guid(&fab, 0xb8cef60300000200ull), 1);
	cr_assert_eq(ib_fabric_local_ca(&fab, "mlx5_1"), 1);
	cr_assert_eq(ib_fabric_local_ca(&fab, "mlx5_2"), -1);
	cr_assert_eq(ib_fabric_local_ca(&fab, NULL), -1);
}

Test(fabric, same_on_every_node)
{
	struct ib_member other[2];
	struct ib_fabric g;

	/* The peer's view: the same members in the other order, the other
	 * one local. */
	fx_member(&other[0], "node-a", ib_a, false);
	fx_member(&other[1], "node-b", ib_b, true);
	cr_assert_eq(ib_fabric_build(&g, other, 2), 0);
	cr_assert_eq(g.ncas, fab.ncas);
	cr_assert_eq(g.nsws, fab.nsws);
	for (int i = 0; i < g.ncas; i++) {
		cr_assert_eq(g.cas[i].hca, fab.cas[i].hca);
		cr_assert_eq(g.cas[i].local, !fab.cas[i].local);
		cr_assert_eq(g.cas[i].up.idx, fab.cas[i].up.idx);
		cr_assert_eq(g.cas[i].up.port, fab.cas[i].up.port);
	}
	for (int i = 0; i < g.nsws; i++) {
		cr_assert_eq(g.sws[i].guid, fab.sws[i].guid);
		cr_assert_eq(g.sws[i].lid, fab.sws[i].lid);
		cr_assert_str_eq(g.sws[i].desc, fab.sws[i].desc);
	}
	ib_fabric_free(&g);
}

Test(fabric_edge, no_members)
{
	struct ib_fabric f;

	cr_assert_eq(ib_fabric_build(&f, NULL, 0), 0);
	cr_assert_eq(f.ncas, 0);
	cr_assert_eq(f.nsws, 0);
	cr_assert_eq(f.sm_switch, -1);
	cr_assert_eq(ib_fabric_ca_by_lid(&f, 0x101), -1);
	cr_assert_eq(ib_fabric_switch_by_lid(&f, 1), -1);
	ib_fabric_free(&f);
	ib_fabric_free(&f);		/* twice is harmless */
	cr_assert_eq(ib_fabric_build(&f, NULL, 1), -EINVAL);
	cr_assert_eq(ib_fabric_build(&f, NULL, -1), -EINVAL);
	cr_assert_eq(ib_fabric_build(NULL, NULL, 0), -EINVAL);
}

Test(fabric_edge, members_without_hcas)
{
	struct state_ib *none = fx_ib("node-z", 0, 0, 0, 8, 1);
	struct state_ib *one = fx_ib("node-y", 1, 0x301, 0xa088c20300ef0000ull, 8, 1);
	struct ib_member m[3];
	struct ib_fabric f;

	fx_member(&m[0], "node-x", NULL, false);	/* not registered its HCAs yet */
	fx_member(&m[1], "node-z", none, true);
	fx_member(&m[2], "node-y", one, false);
	cr_assert_eq(ib_fabric_build(&f, m, 3), 0);
	cr_assert_eq(f.ncas, 1);
	cr_assert_eq(f.nleaves, 1);
	cr_assert_eq(f.nsws, 2);
	/* node-x has no settings; node-y (first with settings) gives the shape */
	cr_assert_eq(f.leaf_ports, 8);
	cr_assert_eq(f.spines, 1);
	/* slots: node-x 0, node-y 1, node-z 2 */
	cr_assert_eq(f.cas[0].up.port, 2);
	cr_assert_eq(f.cas[0].member, 2);
	ib_fabric_free(&f);

	fx_member(&m[0], "node-z", none, true);
	cr_assert_eq(ib_fabric_build(&f, m, 1), 0);
	cr_assert_eq(f.ncas, 0);
	cr_assert_eq(f.nsws, 0);
	cr_assert_eq(f.sm_switch, -1);
	ib_fabric_free(&f);
	free(none);
	free(one);
}

Test(fabric_edge, leaves_only)
{
	struct state_ib *a = fx_ib("a", 3, 0x101, 0xa088c20300ab0000ull, 2, 0);
	struct state_ib *b = fx_ib("b", 3, 0x201, 0xa088c20300cd0000ull, 2, 0);
	struct state_ib *c = fx_ib("c", 3, 0x301, 0xa088c20300ef0000ull, 2, 0);
	struct ib_member m[3];
	struct ib_fabric f;

	fx_member(&m[0], "a", a, true);
	fx_member(&m[1], "b", b, false);
	fx_member(&m[2], "c", c, false);
	cr_assert_eq(ib_fabric_build(&f, m, 3), 0);
	/* 3 rails x ceil(3/2) groups, no spines */
	cr_assert_eq(f.nleaves, 6);
	cr_assert_eq(f.nsws, 6);
	cr_assert_eq(f.sws[0].nports, 2);
	cr_assert_str_eq(f.sws[1].desc, "MF0;leaf-r0-g1:MQM9700/U1");
	cr_assert_str_eq(f.sws[2].desc, "MF0;leaf-r1-g0:MQM9700/U1");
	/* member c (slot 2), rail 1 -> leaf (1, 1) = index 3, port 1 */
	cr_assert_eq(f.cas[7].up.idx, 3);
	cr_assert_eq(f.cas[7].up.port, 1);
	ib_fabric_free(&f);
	free(a);
	free(b);
	free(c);
}

Test(fabric_edge, switch_lids_skip_ca_lids)
{
	struct state_ib *a = fx_ib("a", 2, 2, 0xa088c20300ab0000ull, 4, 1);
	struct ib_member m;
	struct ib_fabric f;

	fx_member(&m, "a", a, true);		/* CAs at LIDs 2 and 3 */
	cr_assert_eq(ib_fabric_build(&f, &m, 1), 0);
	cr_assert_eq(f.nsws, 3);
	cr_assert_eq(f.sws[0].lid, 1);
	cr_assert_eq(f.sws[1].lid, 4);
	cr_assert_eq(f.sws[2].lid, 5);
	cr_assert_eq(ib_fabric_switch_by_lid(&f, 4), 1);
	cr_assert_eq(ib_fabric_ca_by_lid(&f, 3), 1);
	ib_fabric_free(&f);
	free(a);
}

Test(fabric_edge, too_wide_is_refused)
{
	enum { N = 300 };
	struct state_ib *ib = fx_ib("n", 1, 0x101, 0xa088c20300ab0000ull, 1, 2);
	struct ib_member *m = calloc(N, sizeof(*m));
	struct ib_fabric f;

	/* 300 leaves of one port each: a spine cannot number them and rails
	 * cannot share a one-port leaf. */
	for (int i = 0; i < N; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%03d", i);
		fx_member(&m[i], name, ib, i == 0);
	}
	cr_assert_eq(ib_fabric_build(&f, m, N), -E2BIG);
	cr_assert_eq(f.ncas, 0);
	cr_assert_null(f.cas);
	free(m);
	free(ib);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(fabric_large, two_nodes_256_hcas_share_leaves)
{
	struct state_ib *a = fx_ib("node-a", 256, 0x100, 0xa088c20300ab0000ull, 32, 2);
	struct state_ib *b = fx_ib("node-b", 256, 0x200, 0xa088c20300cd0000ull, 32, 2);
	struct ib_member m[2];
	struct ib_fabric f;
	double t0;

	fx_member(&m[0], "node-a", a, true);
	fx_member(&m[1], "node-b", b, false);
	t0 = now();
	cr_assert_eq(ib_fabric_build(&f, m, 2), 0);
	cr_assert_lt(now() - t0, 1.0, "building 512 CAs took %.3f s", now() - t0);
	cr_assert_eq(f.ncas, 512);
	/* 256 leaves would need 256-port spines: 2 rails per leaf */
	cr_assert_eq(f.rails_per_leaf, 2);
	cr_assert_eq(f.nleaves, 128);
	cr_assert_eq(f.nsws, 130);
	cr_assert_eq(f.sws[128].nports, 128);
	cr_assert_str_eq(f.sws[1].desc, "MF0;leaf-r2-g0:MQM9700/U1");
	/* rail 3 of node-b (slot 1) -> leaf 1, port (3 % 2) * 2 + 1 + 1 */
	cr_assert_eq(f.cas[256 + 3].up.idx, 1);
	cr_assert_eq(f.cas[256 + 3].up.port, 4);
	for (int i = 0; i < f.ncas; i++) {
		const struct ib_link *up = &f.cas[i].up;
		const struct ib_link *back = &f.sws[up->idx].port[up->port];

		cr_assert_eq(up->kind, IB_LINK_SWITCH);
		cr_assert_lt(up->idx, f.nleaves);
		cr_assert_leq(up->port, f.leaf_ports);
		cr_assert_eq(back->kind, IB_LINK_CA);
		cr_assert_eq(back->idx, i);
	}
	for (int i = 0; i < f.nsws; i++)
		cr_assert_eq(ib_fabric_switch_by_lid(&f, f.sws[i].lid), i);
	for (int i = 0; i < f.ncas; i++)
		cr_assert_eq(ib_fabric_ca_by_guid(&f, f.cas[i].hca->port_guid), i);
	ib_fabric_free(&f);
	free(a);
	free(b);
}
