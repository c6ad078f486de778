/* Projection and its exact removal (seed 002: shrink, delete, eligibility
 * loss, Node UID replacement; incompatible metadata). */
#include "tests/unit/planner_fixture.h"

#define T0 "2026-01-01T00:00:00Z"
#define T1 "2026-01-01T00:00:01Z"
#define T2 "2026-01-01T00:00:02Z"

/* The annotation the control plane wrote for inv-g-<rack> slot <slot>. */
static char *ann(int rack, int slot, const char *node, const char *uid)
{
	return fx_fmt("mokka.nvidia.com/sgpu-assignment: '{\"inventory\":{\"name\":\"inv\","
		      "\"uid\":\"iu\"},\"rack\":{\"name\":\"inv-g-%d\",\"group\":\"g\",\"index\":%d},"
		      "\"profile\":{\"name\":\"p\",\"revision\":1},\"node\":{\"index\":%d,"
		      "\"name\":\"%s\",\"uid\":\"%s\"}}'", rack, rack, slot, node, uid);
}

static char *world(int count, const char *rack0)
{
	char *g = fx_fmt("[" GROUP("g", "p", %d, POOL("x")) "]", count);
	char *inv = count >= 0 ? fx_inventory("inv", "iu", T0, g) : fx_fmt("%s", "");

	free(g);
	return fx_cat(fx_profile("p", 1, 2, 1, NULL), inv, fx_rack("inv", "iu", "g", 0, rack0),
		      NULL);
}

#define BOUND_A "[{index: 0, nodeRef: {name: a, uid: ua}}]"

Test(projection, exact_labels_and_compact_annotation)
{
	struct fx f;
	char *out, want[128];

	fx_plan(&f, fx_cat(world(1, "[]"), fx_node("a", "ua", T1, 1, "pool: x", NULL), NULL));
	cr_assert_eq(fx_projection(&f, "a"), 1);
	out = fx_emit(&f, pl_emit_apply);
	cr_assert(strstr(out, "    mokka.nvidia.com/sgpu-assigned: \"true\"\n"), "%s", out);
	snprintf(want, sizeof(want), "    nvidia.com/gpu.clique: \"%s.%d\"",
		 fx_get_rack(&f, "inv-g-0")->fabric_uuid, fx_get_rack(&f, "inv-g-0")->clique_id);
	cr_assert(strstr(out, want), "%s", out);
	cr_assert(strstr(out, "mokka.nvidia.com/sgpu-assignment: '{\"inventory\":{\"name\":\"inv\","
			 "\"uid\":\"iu\"},\"rack\":{\"name\":\"inv-g-0\",\"group\":\"g\",\"index\":0},"
			 "\"profile\":{\"name\":\"p\",\"revision\":1},\"node\":{\"index\":0,"
			 "\"name\":\"a\",\"uid\":\"ua\"}}'"), "%s", out);
	cr_assert(strstr(out, "  uid: ua\n"), "the apply names the exact Node UID");
	free(out);
	fx_free(&f);
}

Test(projection, eligibility_loss_removes_exact_projection_then_binding)
{
	struct fx f;
	char *a = ann(0, 0, "a", "ua");

	fx_plan(&f, fx_cat(world(1, BOUND_A), fx_node("a", "ua", T1, 0, "pool: x", a), NULL));
	cr_assert_eq(fx_projection(&f, "a"), -1);
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "a");	/* kept while draining */
	cr_assert_str_eq(fx_cond(&f, "inv", "Projected").reason, "Draining");
	fx_free(&f);
	/* the removal was applied: the annotation is gone, the binding goes */
	fx_plan(&f, fx_cat(world(1, BOUND_A), fx_node("a", "ua", T1, 0, "pool: x", NULL), NULL));
	cr_assert_eq(fx_projection(&f, "a"), 0);
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "");
	fx_free(&f);
	free(a);
}

Test(projection, selector_change_removes_projection)
{
	struct fx f;
	char *a = ann(0, 0, "a", "ua");

	fx_plan(&f, fx_cat(world(1, BOUND_A), fx_node("a", "ua", T1, 1, "pool: y", a), NULL));
	cr_assert_eq(fx_projection(&f, "a"), -1);
	fx_free(&f);
	free(a);
}

Test(projection, shrink_drains_then_deletes_the_rack)
{
	struct fx f;
	char *a = ann(0, 0, "a", "ua"), *out;

	fx_plan(&f, fx_cat(world(0, BOUND_A), fx_node("a", "ua", T1, 1, "pool: x", a), NULL));
	cr_assert_eq(fx_projection(&f, "a"), -1);
	out = fx_emit(&f, pl_emit_deletes);
	cr_assert_str_eq(out, "");		/* not before the projection is gone */
	free(out);
	fx_free(&f);
	fx_plan(&f, fx_cat(world(0, BOUND_A), fx_node("a", "ua", T1, 1, "pool: x", NULL), NULL));
	out = fx_emit(&f, pl_emit_deletes);
	cr_assert_str_eq(out, "sgpuracks.mokka.nvidia.com/inv-g-0\n");
	free(out);
	fx_free(&f);
	free(a);
}

Test(projection, deleted_inventory_drains_its_racks)
{
	struct fx f;
	char *a = ann(0, 0, "a", "ua"), *out;

	fx_plan(&f, fx_cat(world(-1, BOUND_A), fx_node("a", "ua", T1, 1, "pool: x", a), NULL));
	cr_assert_eq(fx_projection(&f, "a"), -1);
	fx_free(&f);
	fx_plan(&f, fx_cat(world(-1, BOUND_A), fx_node("a", "ua", T1, 1, "pool: x", NULL), NULL));
	out = fx_emit(&f, pl_emit_deletes);
	cr_assert_str_eq(out, "sgpuracks.mokka.nvidia.com/inv-g-0\n");
	free(out);
	fx_free(&f);
	free(a);
}

Test(projection, same_name_replacement_node_is_left_alone)
{
	struct fx f;
	char *a = ann(0, 0, "a", "ua");

	/* the old UID is gone; the new Node still carries the old metadata */
	fx_plan(&f, fx_cat(world(1, BOUND_A), fx_node("a", "ua-2", T2, 1, "pool: x", a), NULL));
	cr_assert_eq(fx_projection(&f, "a"), 0);	/* no removal, no projection */
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "");
	cr_assert_eq(fx_get_node(&f, "a")->state, PL_N_INCOMPATIBLE);
	cr_assert_str_eq(fx_cond(&f, "inv", "Projected").reason, "ProjectionConflict");
	fx_free(&f);
	free(a);
}

Test(projection, clean_replacement_node_is_assigned_afresh)
{
	struct fx f;

	fx_plan(&f, fx_cat(world(1, BOUND_A), fx_node("a", "ua-2", T2, 1, "pool: x", NULL), NULL));
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "a");
	cr_assert_str_eq(fx_get_rack(&f, "inv-g-0")->nodes[0].uid, "ua-2");
	fx_free(&f);
}

Test(projection, cleanup_only_when_annotation_names_the_binding)
{
	struct fx f;
	char *other = ann(0, 1, "a", "ua");	/* names another coordinate */

	fx_plan(&f, fx_cat(world(1, BOUND_A), fx_node("a", "ua", T1, 0, "pool: x", other), NULL));
	cr_assert_eq(fx_projection(&f, "a"), 0);
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "");
	fx_free(&f);
	free(other);
}

Test(projection, foreign_clique_label_is_never_overwritten)
{
	struct fx f;

	fx_plan(&f, fx_cat(world(1, "[]"),
			   fx_node("a", "ua", T1, 1, "pool: x, nvidia.com/gpu.clique: other.1", NULL),
			   fx_node("b", "ub", T2, 1, "pool: x", NULL), NULL));
	cr_assert_eq(fx_get_node(&f, "a")->state, PL_N_INCOMPATIBLE);
	cr_assert_eq(fx_projection(&f, "a"), 0);
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "b");
	cr_assert_str_eq(fx_cond(&f, "inv", "Projected").reason, "ProjectionConflict");
	cr_assert(strstr(fx_cond(&f, "inv", "Projected").message, "Node a"));
	fx_free(&f);
}

Test(projection, bound_node_with_foreign_annotation_is_reported)
{
	struct fx f;
	char *other = fx_fmt("mokka.nvidia.com/sgpu-assignment: '{\"x\":1}'");

	fx_plan(&f, fx_cat(world(1, BOUND_A), fx_node("a", "ua", T1, 1, "pool: x", other), NULL));
	cr_assert_eq(fx_projection(&f, "a"), 0);
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "a");
	cr_assert_str_eq(fx_cond(&f, "inv", "Projected").reason, "ProjectionConflict");
	fx_free(&f);
	free(other);
}

Test(projection, profile_shrink_drains_the_slots_past_it)
{
	struct fx f;
	char *a = ann(0, 1, "b", "ub");

	fx_plan(&f, fx_cat(fx_profile("p", 2, 1, 1, NULL),
			   fx_inventory("inv", "iu", T0, "[" GROUP("g", "p", 1, "") "]"),
			   fx_rack("inv", "iu", "g", 0, "[{index: 0, nodeRef: {name: a, uid: ua}}, "
				   "{index: 1, nodeRef: {name: b, uid: ub}}]"),
			   fx_node("a", "ua", T1, 1, NULL, NULL),
			   fx_node("b", "ub", T2, 1, NULL, a), NULL));
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "a");
	cr_assert_eq(fx_projection(&f, "b"), -1);
	fx_free(&f);
	free(a);
}

/* A rack someone deleted (its finalizer holds it): drained like a shrink. */
static char *terminating(char *rack)
{
	char *at = strstr(rack, "metadata:\n");
	char *out = fx_fmt("%.*smetadata:\n  deletionTimestamp: \"2026-01-02T00:00:00Z\"\n%s",
			   (int)(at - rack), rack, at + strlen("metadata:\n"));

	free(rack);
	return out;
}

Test(projection, deleted_rack_drains_then_goes)
{
	struct fx f;
	char *a = ann(0, 0, "a", "ua"), *out;
	char *g = fx_fmt("[" GROUP("g", "p", 1, POOL("x")) "]");

	fx_plan(&f, fx_cat(fx_profile("p", 1, 2, 1, NULL), fx_inventory("inv", "iu", T0, g),
			   terminating(fx_rack("inv", "iu", "g", 0, BOUND_A)),
			   fx_node("a", "ua", T1, 1, "pool: x", a), NULL));
	cr_assert_eq(fx_projection(&f, "a"), -1);
	out = fx_emit(&f, pl_emit_deletes);
	cr_assert_str_eq(out, "");
	free(out);
	fx_free(&f);
	fx_plan(&f, fx_cat(fx_profile("p", 1, 2, 1, NULL), fx_inventory("inv", "iu", T0, g),
			   terminating(fx_rack("inv", "iu", "g", 0, BOUND_A)),
			   fx_node("a", "ua", T1, 1, "pool: x", NULL), NULL));
	out = fx_emit(&f, pl_emit_deletes);
	cr_assert_str_eq(out, "sgpuracks.mokka.nvidia.com/inv-g-0\n");
	cr_assert_eq(fx_get_node(&f, "a")->state, PL_N_PENDING);	/* no new rack meanwhile */
	free(out);
	fx_free(&f);
	free(g);
	free(a);
}
