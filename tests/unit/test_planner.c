/* The planner's placement rules (seed 002 "Declare capacity"):
 * eligibility, admission, durable bindings, identities. */
#include "tests/unit/planner_fixture.h"

#define T0 "2026-01-01T00:00:00Z"
#define T1 "2026-01-01T00:00:01Z"
#define T2 "2026-01-01T00:00:02Z"
#define T3 "2026-01-01T00:00:03Z"

static char *one_group(const char *sel)
{
	char *g = fx_fmt("[{name: g, profileRef: {name: p}, count: 1%s}]", sel);
	char *inv = fx_inventory("inv", "inv-uid", T0, g);

	free(g);
	return fx_cat(fx_profile("p", 1, 2, 4, NULL), inv, NULL);
}

/* ---- eligibility */

Test(eligibility, needs_sgpu_node_label)
{
	struct fx f;

	fx_plan(&f, fx_cat(one_group(""), fx_node("a", "ua", T1, 0, "pool: x", NULL),
			   fx_node("b", "ub", T2, 1, NULL, NULL), NULL));
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "b");
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 1), "");
	cr_assert_eq(fx_get_node(&f, "a")->state, PL_N_IGNORED);
	fx_free(&f);
}

Test(eligibility, empty_selector_matches_every_eligible_node)
{
	struct fx f;

	fx_plan(&f, fx_cat(one_group(""), fx_node("a", "ua", T1, 1, "zone: z1", NULL),
			   fx_node("b", "ub", T2, 1, NULL, NULL), NULL));
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "a");
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 1), "b");
	fx_free(&f);
}

Test(eligibility, selector_and_eligibility_must_both_match)
{
	struct fx f;

	fx_plan(&f, fx_cat(one_group(POOL("x")), fx_node("a", "ua", T1, 0, "pool: x", NULL),
			   fx_node("b", "ub", T2, 1, "pool: y", NULL),
			   fx_node("c", "uc", T3, 1, "pool: x", NULL), NULL));
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "c");
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 1), "");
	cr_assert_eq(fx_get_node(&f, "b")->state, PL_N_UNMATCHED);
	fx_free(&f);
}

Test(eligibility, match_expressions)
{
	struct fx f;

	fx_plan(&f, fx_cat(one_group(", nodeSelector: {matchExpressions: [{key: pool, "
				     "operator: In, values: [x, y]}, {key: bad, operator: "
				     "DoesNotExist}]}"),
			   fx_node("a", "ua", T1, 1, "pool: y, bad: \"1\"", NULL),
			   fx_node("b", "ub", T2, 1, "pool: y", NULL), NULL));
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "b");
	fx_free(&f);
}

static void forbidden(const char *key)
{
	char *sel = fx_fmt(", nodeSelector: {matchLabels: {\"%s\": \"true\"}}", key);
	char *ann = fx_fmt("mokka.nvidia.com/sgpu-assignment: '{\"inventory\":{\"uid\":"
			   "\"inv-uid\"},\"rack\":{\"name\":\"inv-g-0\"},\"node\":{\"index\":0,"
			   "\"uid\":\"ua\"}}'");
	struct fx f;
	struct pl_condition c;

	/* the rack and its binding exist; the node even lost eligibility */
	fx_plan(&f, fx_cat(one_group(sel),
			   fx_rack("inv", "inv-uid", "g", 0, "[{index: 0, nodeRef: {name: a, uid: ua}}]"),
			   fx_node("a", "ua", T1, 0, NULL, ann),
			   fx_node("b", "ub", T2, 1, NULL, NULL), NULL));
	free(sel);
	free(ann);
	c = fx_cond(&f, "inv", "Valid");
	cr_assert_str_eq(c.status, "False");
	cr_assert_str_eq(c.reason, "InvalidSelector");
	cr_assert(strstr(c.message, key), "%s", c.message);
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "a");	/* bindings unchanged */
	cr_assert_eq(fx_projection(&f, "a"), 0);		/* nothing removed */
	cr_assert_eq(fx_get_node(&f, "b")->state, PL_N_UNMATCHED);
	cr_assert(fx_get_rack(&f, "inv-g-0")->keep);
	fx_free(&f);
}

Test(eligibility, selector_on_sgpu_assigned_rejects_inventory)
{
	forbidden("mokka.nvidia.com/sgpu-assigned");
}

Test(eligibility, selector_on_gpu_clique_rejects_inventory)
{
	forbidden("nvidia.com/gpu.clique");
}

/* ---- admission */

static char *big_inventory(const char *name, const char *ts, int groups, int count)
{
	char *g = calloc(1, 1);

	for (int i = 0; i < groups; i++) {
		char *one = fx_fmt("%s{name: g%d, profileRef: {name: p1}, count: %d}",
				   i ? ", " : "", i, count);

		g = fx_cat(g, one, NULL);
	}
	g = fx_cat(fx_fmt("["), g, fx_fmt("]"), NULL);
	char *inv = fx_inventory(name, name, ts, g);

	free(g);
	return inv;
}

Test(admission, creation_order_within_rack_envelope)
{
	struct fx f;

	fx_plan(&f, fx_cat(fx_profile("p1", 1, 1, 1, NULL), big_inventory("new", T2, 1, 50000),
			   big_inventory("old", T1, 1, 60000), NULL));
	cr_assert_eq(fx_get_inv(&f, "old")->admission, PL_R_ADMITTED);
	cr_assert_eq(fx_get_inv(&f, "new")->admission, PL_R_CAPACITY);
	cr_assert_str_eq(fx_cond(&f, "new", "Admitted").reason, "CapacityExceeded");
	cr_assert_eq(pl_hmap_gets(&f.w.rack_by_name, "new-g0-0"), -1);
	fx_free(&f);
}

Test(admission, deleting_the_older_admits_the_next)
{
	struct fx f;

	fx_plan(&f, fx_cat(fx_profile("p1", 1, 1, 1, NULL), big_inventory("new", T2, 1, 50000),
			   NULL));
	cr_assert_eq(fx_get_inv(&f, "new")->admission, PL_R_ADMITTED);
	fx_free(&f);
}

Test(admission, shrinking_the_older_admits_the_next)
{
	struct fx f;

	fx_plan(&f, fx_cat(fx_profile("p1", 1, 1, 1, NULL), big_inventory("new", T2, 1, 50000),
			   big_inventory("old", T1, 1, 50000), NULL));
	cr_assert_eq(fx_get_inv(&f, "old")->admission, PL_R_ADMITTED);
	cr_assert_eq(fx_get_inv(&f, "new")->admission, PL_R_ADMITTED);
	fx_free(&f);
}

Test(admission, sixty_four_rack_groups)
{
	struct fx f;

	fx_plan(&f, fx_cat(fx_profile("p1", 1, 1, 1, NULL), big_inventory("a", T1, 40, 1),
			   big_inventory("b", T2, 25, 1), big_inventory("c", T3, 24, 1), NULL));
	cr_assert_eq(fx_get_inv(&f, "a")->admission, PL_R_ADMITTED);
	cr_assert_eq(fx_get_inv(&f, "b")->admission, PL_R_CAPACITY);
	cr_assert_eq(fx_get_inv(&f, "c")->admission, PL_R_ADMITTED);	/* whole, in order */
	fx_free(&f);
}

Test(admission, logical_node_envelope)
{
	struct fx f;

	/* 2 Nodes per rack: 60,000 racks need 120,000 eligible Nodes */
	fx_plan(&f, fx_cat(fx_profile("p1", 1, 2, 1, NULL), big_inventory("a", T1, 1, 60000),
			   NULL));
	cr_assert_eq(fx_get_inv(&f, "a")->admission, PL_R_CAPACITY);
	fx_free(&f);
}

/* ---- bindings */

Test(binding, new_nodes_by_creation_then_name_then_uid)
{
	struct fx f;
	char *g = fx_fmt("[" GROUP("g", "p", 2, "") "]");

	fx_plan(&f, fx_cat(fx_profile("p", 1, 2, 1, NULL), fx_inventory("inv", "iu", T0, g),
			   fx_node("z", "u1", T1, 1, NULL, NULL),
			   fx_node("b", "u9", T2, 1, NULL, NULL),
			   fx_node("a", "u8", T2, 1, NULL, NULL),
			   fx_node("c", "u0", T3, 1, NULL, NULL), NULL));
	free(g);
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "z");
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 1), "a");
	cr_assert_str_eq(fx_bound(&f, "inv-g-1", 0), "b");
	cr_assert_str_eq(fx_bound(&f, "inv-g-1", 1), "c");
	fx_free(&f);
}

Test(binding, existing_bindings_never_move)
{
	struct fx f;
	char *g = fx_fmt("[" GROUP("g", "p", 2, "") "]");

	/* an older Node arrives; the profile was edited (revision 2, 3 per rack) */
	fx_plan(&f, fx_cat(fx_profile("p", 2, 3, 1, NULL), fx_inventory("inv", "iu", T0, g),
			   fx_rack("inv", "iu", "g", 1, "[{index: 1, nodeRef: {name: late, uid: ul}}]"),
			   fx_node("late", "ul", T3, 1, NULL, NULL),
			   fx_node("early", "ue", T1, 1, NULL, NULL), NULL));
	free(g);
	cr_assert_str_eq(fx_bound(&f, "inv-g-1", 1), "late");
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "early");
	cr_assert_eq(fx_get_rack(&f, "inv-g-1")->profile_revision, 2);
	cr_assert_eq(fx_get_rack(&f, "inv-g-1")->nnodes, 3);
	fx_free(&f);
}

Test(binding, identities_derive_from_inventory_uid_and_coordinate)
{
	char a[41], b[41], c[41], s1[14], s2[14], f1[37], f2[37];

	pl_gpu_uuid(a, "uid-1", "g", 3, 1, 2);
	pl_gpu_uuid(b, "uid-1", "g", 3, 1, 2);
	pl_gpu_uuid(c, "uid-2", "g", 3, 1, 2);
	cr_assert_str_eq(a, b);
	cr_assert_str_neq(a, c);
	cr_assert_eq(strncmp(a, "GPU-", 4), 0);
	cr_assert_eq(strlen(a), 40);
	cr_assert_eq(a[18], '8');	/* version 8 */
	pl_gpu_serial(s1, "uid-1", "g", 3, 1, 2);
	pl_gpu_serial(s2, "uid-1", "g", 3, 1, 3);
	cr_assert_eq(strlen(s1), 13);
	cr_assert_str_neq(s1, s2);
	pl_fabric_uuid(f1, "uid-1", "g", 3);
	pl_fabric_uuid(f2, "uid-1", "g", 4);
	cr_assert_str_neq(f1, f2);
	cr_assert_eq(pl_clique_id("uid-1", "g", 3), pl_clique_id("uid-1", "g", 3));
}

Test(binding, selector_overlap_leaves_node_in_conflict)
{
	struct fx f;
	char *g1 = fx_fmt("[" GROUP("g", "p", 1, POOL("x")) "]");
	char *g2 = fx_fmt("[" GROUP("h", "p", 1, "") "]");

	fx_plan(&f, fx_cat(fx_profile("p", 1, 2, 1, NULL), fx_inventory("a", "ia", T0, g1),
			   fx_inventory("b", "ib", T1, g2),
			   fx_rack("a", "ia", "g", 0, "[{index: 0, nodeRef: {name: old, uid: uo}}]"),
			   fx_node("old", "uo", T1, 1, "pool: x", NULL),
			   fx_node("new", "un", T2, 1, "pool: x", NULL),
			   fx_node("other", "ut", T3, 1, "pool: y", NULL), NULL));
	free(g1);
	free(g2);
	cr_assert_eq(fx_get_node(&f, "new")->state, PL_N_CONFLICT);
	cr_assert_str_eq(fx_bound(&f, "a-g-0", 0), "old");	/* a bound Node stays */
	cr_assert_str_eq(fx_bound(&f, "a-g-0", 1), "");
	cr_assert_str_eq(fx_bound(&f, "b-h-0", 0), "other");
	cr_assert_str_eq(fx_cond(&f, "a", "Placed").reason, "Conflict");
	cr_assert(strstr(fx_cond(&f, "b", "Placed").message, "new"));
	fx_free(&f);
}

Test(binding, missing_profile_keeps_racks_and_blocks_new_allocations)
{
	struct fx f;
	char *g = fx_fmt("[" GROUP("g", "gone", 2, "") "]");

	fx_plan(&f, fx_cat(fx_inventory("inv", "iu", T0, g),
			   fx_rack("inv", "iu", "g", 0, "[{index: 0, nodeRef: {name: a, uid: ua}}, {index: 1}]"),
			   fx_node("a", "ua", T1, 1, NULL, NULL),
			   fx_node("b", "ub", T2, 1, NULL, NULL), NULL));
	free(g);
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "a");
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 1), "");
	cr_assert_eq(pl_hmap_gets(&f.w.rack_by_name, "inv-g-1"), -1);
	cr_assert_eq(fx_get_node(&f, "b")->state, PL_N_PENDING);
	cr_assert_str_eq(fx_cond(&f, "inv", "ProfilesReady").reason, "ProfileNotReady");
	cr_assert(strstr(fx_cond(&f, "inv", "ProfilesReady").message, "gone"));
	fx_free(&f);
}

Test(binding, invalid_profile_keeps_racks_and_blocks_new_allocations)
{
	struct fx f;
	char *g = fx_fmt("[" GROUP("g", "p", 1, "") "]");
	char *bad = fx_fmt("---\napiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPURackProfile\n"
			   "metadata: {name: p}\nspec: {nodesPerRack: 0, gpusPerNode: 1}\n");

	fx_plan(&f, fx_cat(bad, fx_inventory("inv", "iu", T0, g),
			   fx_rack("inv", "iu", "g", 0, "[{index: 0, nodeRef: {name: a, uid: ua}}, {index: 1}]"),
			   fx_node("a", "ua", T1, 1, NULL, NULL),
			   fx_node("b", "ub", T2, 1, NULL, NULL), NULL));
	free(g);
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "a");
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 1), "");
	cr_assert(strstr(fx_cond(&f, "inv", "ProfilesReady").message, "spec.nodesPerRack"),
		  "%s", fx_cond(&f, "inv", "ProfilesReady").message);
	fx_free(&f);
}

Test(binding, foreign_rack_is_reported_never_overwritten)
{
	struct fx f;
	char *g = fx_fmt("[" GROUP("g", "p", 1, "") "]");

	fx_plan(&f, fx_cat(fx_profile("p", 1, 2, 1, NULL), fx_inventory("inv", "iu", T0, g),
			   fx_fmt("---\napiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPURack\n"
				  "metadata: {name: inv-g-0}\nspec: {inventoryRef: {name: inv}, "
				  "rackGroup: g, rackIndex: 0}\n"),
			   fx_node("a", "ua", T1, 1, NULL, NULL), NULL));
	free(g);
	cr_assert_str_eq(fx_cond(&f, "inv", "Materialized").reason, "ForeignRack");
	cr_assert_eq(fx_get_node(&f, "a")->state, PL_N_PENDING);
	char *out = fx_emit(&f, pl_emit_apply);

	cr_assert_null(strstr(out, "name: inv-g-0"), "%s", out);
	free(out);
	out = fx_emit(&f, pl_emit_deletes);
	cr_assert_str_eq(out, "");
	free(out);
	fx_free(&f);
}
