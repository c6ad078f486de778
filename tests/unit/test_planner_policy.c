/* SGPURuntimePolicy rules (seed 002 "Override runtime state"): scope,
 * validation, conflicts, effective state. */
#include "tests/unit/planner_fixture.h"

#define T0 "2026-01-01T00:00:00Z"
#define T1 "2026-01-01T00:00:01Z"
#define T2 "2026-01-01T00:00:02Z"
#define T3 "2026-01-01T00:00:03Z"

#define DEFAULTS "  defaults:\n    runtime:\n      health: {state: Healthy}\n" \
	"      telemetry: {drawMilliWatts: 350000, temperatureCelsius: 40}\n"

/* group a: 2 racks of 2 Nodes x 4 GPUs; b: 1 rack of 4 Nodes x 8 GPUs;
 * c: a missing profile */
static char *base(void)
{
	return fx_cat(fx_profile("p", 1, 2, 4, DEFAULTS), fx_profile("q", 1, 4, 8, DEFAULTS),
		      fx_inventory("inv", "iu", T0, "[" GROUP("a", "p", 2, "") ", "
				   GROUP("b", "q", 1, "") ", " GROUP("c", "gone", 1, "") "]"),
		      NULL);
}

static struct pl_policy *plan1(struct fx *f, const char *target)
{
	fx_plan(f, fx_cat(base(), fx_policy("pol", "u1", T1, target,
					    "  telemetry: {drawMilliWatts: 0}"), NULL));
	return fx_get_policy(f, "pol");
}

static void scope_is(const char *target, enum pl_scope scope)
{
	struct fx f;
	struct pl_policy *p = plan1(&f, target);

	cr_assert_eq(p->reason, PL_R_ACCEPTED, "%s: %s", target, p->message);
	cr_assert_eq(p->scope, scope, "%s", target);
	fx_free(&f);
}

Test(policy, scope_is_the_deepest_list)
{
	scope_is("{name: inv}", PL_SCOPE_INVENTORY);
	scope_is("{name: inv, rackGroups: [a]}", PL_SCOPE_GROUP);
	scope_is("{name: inv, rackIndexes: [0]}", PL_SCOPE_RACK);
	scope_is("{name: inv, rackGroups: [a], rackIndexes: [1], nodeIndexes: [1]}", PL_SCOPE_NODE);
	scope_is("{name: inv, nodeIndexes: [0], gpuIndexes: [3]}", PL_SCOPE_GPU);
}

static void rejected(const char *target, enum pl_reason reason, const char *needle)
{
	struct fx f;
	struct pl_policy *p = plan1(&f, target);
	struct pl_condition c;

	cr_assert_eq(p->reason, reason, "%s: %s", target, p->message ? p->message : "");
	pl_policy_condition(&f.w, (int)(p - f.w.policies), &c);
	cr_assert_str_eq(c.status, "False");
	cr_assert(strstr(c.message, needle), "%s: %s", target, c.message);
	fx_free(&f);
}

Test(policy, target_not_found)
{
	rejected("{name: nope}", PL_R_TARGET_NOT_FOUND, "SGPUInventory nope does not exist");
}

Test(policy, invalid_target)
{
	rejected("{name: inv, rackGroups: [a, zz]}", PL_R_INVALID_TARGET,
		 "rackGroups[1]: rack group zz is not declared");
	rejected("{name: inv, rackIndexes: [2]}", PL_R_INVALID_TARGET, "rackIndexes[0]: index 2");
	rejected("{name: inv, rackGroups: [a], nodeIndexes: [2]}", PL_R_INVALID_TARGET,
		 "nodeIndexes[0]: index 2");
	rejected("{name: inv, rackGroups: [b], gpuIndexes: [8]}", PL_R_INVALID_TARGET,
		 "gpuIndexes[0]: index 8");
	rejected("{name: inv, nodeIndexes: []}", PL_R_INVALID_TARGET, "empty");
	rejected("{name: inv, rackGroups: []}", PL_R_INVALID_TARGET, "empty");
}

Test(policy, missing_profile_group_has_no_node_indexes)
{
	rejected("{name: inv, rackGroups: [c], nodeIndexes: [0]}", PL_R_INVALID_TARGET,
		 "nodeIndexes[0]");
}

Test(policy, groups_of_different_shapes_apply_the_indexes_they_have)
{
	struct fx f;
	struct pl_runtime rt;
	int b0;
	struct pl_policy *p = plan1(&f, "{name: inv, rackGroups: [a, b], nodeIndexes: [3]}");

	cr_assert_eq(p->reason, PL_R_ACCEPTED, "%s", p->message);
	b0 = pl_hmap_gets(&f.w.rack_by_name, "inv-b-0");
	pl_gpu_runtime(&f.w, b0, 3, 7, &rt);
	cr_assert(rt.set & (1u << PL_F_DRAW));
	cr_assert_eq(rt.v[PL_F_DRAW], 0);
	pl_gpu_runtime(&f.w, b0, 2, 7, &rt);
	cr_assert_eq(rt.v[PL_F_DRAW], 350000);
	pl_gpu_runtime(&f.w, pl_hmap_gets(&f.w.rack_by_name, "inv-a-0"), 1, 0, &rt);
	cr_assert_eq(rt.v[PL_F_DRAW], 350000);
	fx_free(&f);
}

static void two(struct fx *f, const char *t1, const char *f1, const char *ts2, const char *uid2,
		const char *t2, const char *f2)
{
	fx_plan(f, fx_cat(base(), fx_policy("first", "u5", T1, t1, f1),
			  fx_policy("second", uid2, ts2, t2, f2), NULL));
}

#define DRAW0 "  telemetry: {drawMilliWatts: 0}"
#define TEMP9 "  telemetry: {temperatureCelsius: 90}"

Test(policy, same_scope_common_gpu_common_field_conflicts)
{
	struct fx f;
	struct pl_policy *p;

	two(&f, "{name: inv, nodeIndexes: [1]}", DRAW0, T2, "u0",
	    "{name: inv, rackGroups: [a], nodeIndexes: [1, 0]}", "  telemetry: {drawMilliWatts: 5}\n"
	    "  health: {state: Failed}");
	cr_assert_eq(fx_get_policy(&f, "first")->reason, PL_R_ACCEPTED);
	p = fx_get_policy(&f, "second");
	cr_assert_eq(p->reason, PL_R_CONFLICTED);
	cr_assert(strstr(p->message, "first") && strstr(p->message, "telemetry.drawMilliWatts"),
		  "%s", p->message);
	fx_free(&f);
}

Test(policy, uid_breaks_creation_ties)
{
	struct fx f;

	two(&f, "{name: inv}", DRAW0, T1, "u0", "{name: inv}", DRAW0);
	cr_assert_eq(fx_get_policy(&f, "second")->reason, PL_R_ACCEPTED);	/* u0 < u5 */
	cr_assert_eq(fx_get_policy(&f, "first")->reason, PL_R_CONFLICTED);
	fx_free(&f);
}

Test(policy, no_conflict_without_all_three)
{
	struct fx f;

	/* different fields */
	two(&f, "{name: inv}", DRAW0, T2, "u6", "{name: inv}", TEMP9);
	cr_assert_eq(fx_get_policy(&f, "second")->reason, PL_R_ACCEPTED);
	fx_free(&f);
	/* different scopes */
	two(&f, "{name: inv}", DRAW0, T2, "u6", "{name: inv, rackGroups: [a]}", DRAW0);
	cr_assert_eq(fx_get_policy(&f, "second")->reason, PL_R_ACCEPTED);
	fx_free(&f);
	/* no common GPU */
	two(&f, "{name: inv, nodeIndexes: [0]}", DRAW0, T2, "u6", "{name: inv, nodeIndexes: [1]}",
	    DRAW0);
	cr_assert_eq(fx_get_policy(&f, "second")->reason, PL_R_ACCEPTED);
	fx_free(&f);
	two(&f, "{name: inv, rackGroups: [a], rackIndexes: [0]}", DRAW0, T2, "u6",
	    "{name: inv, rackGroups: [b], rackIndexes: [0]}", DRAW0);
	cr_assert_eq(fx_get_policy(&f, "second")->reason, PL_R_ACCEPTED);
	fx_free(&f);
	/* index 3 exists only in b, which the first does not select */
	two(&f, "{name: inv, rackGroups: [a], nodeIndexes: [1]}", DRAW0, T2, "u6",
	    "{name: inv, nodeIndexes: [3]}", DRAW0);
	cr_assert_eq(fx_get_policy(&f, "second")->reason, PL_R_ACCEPTED);
	fx_free(&f);
}

Test(policy, deleting_the_winner_accepts_the_next_oldest)
{
	struct fx f;

	fx_plan(&f, fx_cat(base(), fx_policy("p1", "u1", T1, "{name: inv}", DRAW0),
			   fx_policy("p2", "u2", T2, "{name: inv}", DRAW0),
			   fx_policy("p3", "u3", T3, "{name: inv}", DRAW0), NULL));
	cr_assert_eq(fx_get_policy(&f, "p2")->reason, PL_R_CONFLICTED);
	fx_free(&f);
	fx_plan(&f, fx_cat(base(), fx_policy("p2", "u2", T2, "{name: inv}", DRAW0),
			   fx_policy("p3", "u3", T3, "{name: inv}", DRAW0), NULL));
	cr_assert_eq(fx_get_policy(&f, "p2")->reason, PL_R_ACCEPTED);
	cr_assert_eq(fx_get_policy(&f, "p3")->reason, PL_R_CONFLICTED);
	fx_free(&f);
}

Test(policy, effective_state_defaults_then_broad_to_narrow)
{
	struct fx f;
	struct pl_runtime rt;
	int k;

	fx_plan(&f, fx_cat(base(),
			   fx_policy("gpu", "u1", T1, "{name: inv, rackIndexes: [1], nodeIndexes: [1], "
				     "gpuIndexes: [0]}", "  health: {state: Failed, xid: 79}"),
			   fx_policy("node", "u2", T1, "{name: inv, rackIndexes: [1], nodeIndexes: [1]}",
				     DRAW0),
			   fx_policy("group", "u3", T1, "{name: inv, rackGroups: [a]}",
				     "  telemetry: {drawMilliWatts: 200000}"),
			   fx_policy("all", "u4", T1, "{name: inv}",
				     "  telemetry: {drawMilliWatts: 100000, temperatureCelsius: 50}\n"
				     "  modes: {persistence: false}"), NULL));
	k = pl_hmap_gets(&f.w.rack_by_name, "inv-a-1");
	pl_gpu_runtime(&f.w, k, 1, 0, &rt);
	cr_assert_eq(rt.v[PL_F_HEALTH], 1);
	cr_assert_eq(rt.v[PL_F_XID], 79);
	cr_assert_eq(rt.v[PL_F_DRAW], 0);		/* an explicit zero is a value */
	cr_assert_eq(rt.v[PL_F_TEMP], 50);		/* fields it does not set stay */
	cr_assert(rt.set & (1u << PL_F_PERSISTENCE));
	cr_assert_eq(rt.v[PL_F_PERSISTENCE], 0);
	pl_gpu_runtime(&f.w, k, 1, 1, &rt);
	cr_assert_eq(rt.v[PL_F_HEALTH], 0);
	cr_assert_eq(rt.v[PL_F_DRAW], 0);
	pl_gpu_runtime(&f.w, k, 0, 1, &rt);
	cr_assert_eq(rt.v[PL_F_DRAW], 200000);
	pl_gpu_runtime(&f.w, pl_hmap_gets(&f.w.rack_by_name, "inv-b-0"), 0, 0, &rt);
	cr_assert_eq(rt.v[PL_F_DRAW], 100000);
	cr_assert_eq(rt.v[PL_F_TEMP], 50);
	fx_free(&f);
}

Test(policy, many_racks_in_one_list)
{
	struct fx f;
	char *racks = calloc(1, 1);

	/* a long rack list takes the broad conflict path */
	for (int i = 0; i < 100; i++)
		racks = fx_cat(racks, fx_fmt("%s%d", i ? ", " : "", i % 2), NULL);
	char *t = fx_fmt("{name: inv, rackGroups: [a], rackIndexes: [%s]}", racks);

	two(&f, "{name: inv, rackIndexes: [1]}", DRAW0, T2, "u6", t, DRAW0);
	cr_assert_eq(fx_get_policy(&f, "second")->reason, PL_R_CONFLICTED);
	fx_free(&f);
	free(t);
	free(racks);
}
