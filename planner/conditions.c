/* Status conditions, derived from a finished plan.  Each says what is
 * wrong and where (the first offending object, then how many). */
#include <stdio.h>
#include <string.h>

#include "planner/planner.h"

static const char *const reason_names[] = {
	[PL_R_NONE] = "",
	[PL_R_INVALID_SPEC] = "InvalidSpec",
	[PL_R_INVALID_SELECTOR] = "InvalidSelector",
	[PL_R_CAPACITY] = "CapacityExceeded",
	[PL_R_ADMITTED] = "Admitted",
	[PL_R_ACCEPTED] = "Accepted",
	[PL_R_TARGET_NOT_FOUND] = "TargetNotFound",
	[PL_R_INVALID_TARGET] = "InvalidTarget",
	[PL_R_CONFLICTED] = "Conflicted",
};

static struct pl_condition cond(const char *type, bool ok, const char *reason,
				const char *message)
{
	return (struct pl_condition){ type, ok ? "True" : "False", reason, message };
}

static const char *more(struct pl_world *w, const char *example, int count)
{
	if (count <= 1)
		return example;
	return pl_printf(&w->arena, "%s (and %d more)", example, count - 1);
}

static void count_bindings(const struct pl_world *w, int inv, int *bound, int *slots)
{
	*bound = *slots = 0;
	for (int k = 0; k < w->nracks; k++) {
		const struct pl_rack *rk = &w->racks[k];

		if (rk->inv != inv || rk->foreign || !(rk->generated || rk->keep))
			continue;
		for (int s = 0; s < rk->nnodes; s++)
			*bound += rk->nodes[s].name != NULL;
		*slots += rk->nnodes;
	}
}

void pl_inventory_conditions(struct pl_world *w, int i, struct pl_condition out[PL_INV_CONDITIONS])
{
	struct pl_inventory *inv = &w->inventories[i];
	const struct pl_inv_stats *st = &inv->st;
	bool valid = inv->admission != PL_R_INVALID_SPEC && inv->admission != PL_R_INVALID_SELECTOR;
	int bound, slots;

	count_bindings(w, i, &bound, &slots);
	out[0] = cond("Valid", valid, valid ? "Valid" : reason_names[inv->admission],
		      valid ? "the spec is valid" : inv->invalid);
	if (inv->admission == PL_R_ADMITTED)
		out[1] = cond("Admitted", true, "Admitted", pl_printf(&w->arena,
			"%d racks, %d rack groups and %d logical Nodes fit the envelope",
			inv->racks, inv->ngroups, inv->slots));
	else if (inv->admission == PL_R_CAPACITY)
		out[1] = cond("Admitted", false, "CapacityExceeded", pl_printf(&w->arena,
			"its %d racks, %d rack groups and %d logical Nodes do not fit beside the "
			"older inventories (envelope: %d racks, %d rack groups, %d eligible Nodes)",
			inv->racks, inv->ngroups, inv->slots, PL_MAX_RACKS, PL_MAX_GROUPS,
			PL_MAX_SLOTS));
	else
		out[1] = cond("Admitted", false, "InvalidSpec",
			      "not admitted: the spec is invalid; its last racks and bindings are kept");
	out[2] = st->blocked
		? cond("ProfilesReady", false, "ProfileNotReady", pl_printf(&w->arena,
			"%s; the group keeps its last racks and takes no new Nodes",
			more(w, st->ex_blocked, st->blocked)))
		: cond("ProfilesReady", true, "ProfilesReady", "every rack group's profile is valid");
	out[3] = st->foreign
		? cond("Materialized", false, "ForeignRack", more(w, st->ex_foreign, st->foreign))
		: cond("Materialized", true, "Materialized",
		       pl_printf(&w->arena, "%d racks materialized", inv->racks));
	if (st->conflict)
		out[4] = cond("Placed", false, "Conflict", more(w, st->ex_conflict, st->conflict));
	else if (st->pending)
		out[4] = cond("Placed", false, "Pending", more(w, st->ex_pending, st->pending));
	else if (bound < slots)
		out[4] = cond("Placed", false, "Pending", pl_printf(&w->arena,
			"%d of %d logical Nodes bound; no other eligible Node matches", bound, slots));
	else
		out[4] = cond("Placed", true, "Placed",
			      pl_printf(&w->arena, "%d of %d logical Nodes bound", bound, slots));
	if (st->incompatible)
		out[5] = cond("Projected", false, "ProjectionConflict",
			      more(w, st->ex_incompatible, st->incompatible));
	else if (st->draining)
		out[5] = cond("Projected", false, "Draining", more(w, st->ex_draining, st->draining));
	else
		out[5] = cond("Projected", true, "Projected", "every binding is projected");
}

void pl_rack_condition(struct pl_world *w, int k, struct pl_condition *out)
{
	const struct pl_rack *rk = &w->racks[k];
	int bound = 0;

	for (int s = 0; s < rk->nnodes; s++)
		bound += rk->nodes[s].name != NULL;
	if (rk->remove)
		*out = cond("Bound", false, "Draining", pl_printf(&w->arena,
			"no longer declared; %d Node projections are being removed", bound));
	else if (rk->keep)
		*out = cond("Bound", false, "Kept",
			    "kept as last materialized: its inventory or profile is not usable");
	else
		*out = cond("Bound", bound == rk->nnodes, bound == rk->nnodes ? "Bound" : "Pending",
			    pl_printf(&w->arena, "%d of %d logical Nodes bound", bound, rk->nnodes));
}

void pl_policy_condition(struct pl_world *w, int pi, struct pl_condition *out)
{
	const struct pl_policy *p = &w->policies[pi];

	*out = cond("Accepted", p->reason == PL_R_ACCEPTED, reason_names[p->reason], p->message);
}
