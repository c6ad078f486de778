/* The control plane's deterministic core (issue 14, seed 002): from
 * SGPURackProfiles, SGPUInventories, existing SGPURacks, SGPURuntimePolicies
 * and Nodes it computes the desired SGPURacks (durable bindings), each
 * Node's projection, the status conditions and every assigned Node's
 * desired GPU state.  Pure: no clock, no I/O; the same world gives the same
 * plan.  The world is decoded by planner/decode*.c and the plan written by
 * planner/emit*.c; both live beside this library. */
#ifndef MOKKA_PLANNER_H
#define MOKKA_PLANNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "planner/arena.h"
#include "planner/hmap.h"

/* The supported envelope (seed: "Declare capacity"). */
#define PL_MAX_SLOTS 100000		/* eligible Nodes an inventory set may absorb */
#define PL_MAX_RACKS 100000
#define PL_MAX_GROUPS 64

#define PL_LABEL_NODE "mokka.nvidia.com/sgpu-node"
#define PL_LABEL_ASSIGNED "mokka.nvidia.com/sgpu-assigned"
#define PL_LABEL_CLIQUE "nvidia.com/gpu.clique"
#define PL_ANN_ASSIGNMENT "mokka.nvidia.com/sgpu-assignment"
#define PL_API_GROUP "mokka.nvidia.com"
#define PL_API_VERSION "mokka.nvidia.com/v1alpha1"

struct pl_kv {
	const char *key, *val;
};

struct pl_kvs {
	struct pl_kv *v;
	int n;
};

struct pl_meta {
	const char *name, *uid;
	const char *created;		/* RFC 3339 as given (sortable: UTC "Z") */
	int64_t generation;
	int order;			/* position in the input, for messages */
	struct pl_kvs conds;		/* status.conditions read: type -> "Status|time" */
};

const char *pl_kvs_get(const struct pl_kvs *kvs, const char *key);

enum pl_sel_op { PL_SEL_IN, PL_SEL_NOT_IN, PL_SEL_EXISTS, PL_SEL_NOT_EXISTS };

struct pl_requirement {
	const char *key;
	enum pl_sel_op op;
	const char **vals;
	int nvals;
};

/* A metav1.LabelSelector: matchLabels become single-value In requirements. */
struct pl_selector {
	struct pl_requirement *reqs;
	int n;
};

bool pl_selector_matches(const struct pl_selector *sel, const struct pl_kvs *labels);
/* The first requirement key a placement selector may not name, or NULL. */
const char *pl_selector_forbidden(const struct pl_selector *sel);

/* ---- runtime state: every field has a "set" bit (explicit zero is a value) */
enum pl_field {
	PL_F_HEALTH,		/* health.state: Healthy | Failed */
	PL_F_XID,		/* health.xid */
	PL_F_PERSISTENCE,	/* modes.persistence: bool */
	PL_F_COMPUTE,		/* modes.computeMode: Default | ExclusiveProcess | Prohibited */
	PL_F_ECC,		/* modes.ecc: bool */
	PL_F_DRAW,		/* telemetry.drawMilliWatts */
	PL_F_TEMP,		/* telemetry.temperatureCelsius */
	PL_F_UTIL_GPU,		/* telemetry.gpuUtilizationPercent */
	PL_F_UTIL_MEM,		/* telemetry.memoryUtilizationPercent */
	PL_F_COUNT
};

enum pl_ftype { PL_FT_ENUM, PL_FT_BOOL, PL_FT_INT };

struct pl_field_desc {
	const char *section, *key;	/* YAML path: <section>.<key> */
	enum pl_ftype type;
	int64_t min, max;
	const char *const *names;	/* PL_FT_ENUM: value i is names[i] */
};

extern const struct pl_field_desc pl_fields[PL_F_COUNT];

struct pl_runtime {
	uint32_t set;			/* 1u << enum pl_field */
	int64_t v[PL_F_COUNT];
};

/* Overlay: every field set in top replaces base's. */
void pl_runtime_apply(struct pl_runtime *base, const struct pl_runtime *top);

/* ---- inputs */
struct pl_profile {
	struct pl_meta m;
	int nodes_per_rack, gpus_per_node;
	const char *gpu_product;
	struct pl_runtime defaults;
	const char *invalid;		/* why the spec is unusable, or NULL */
};

struct pl_group {
	const char *name, *profile;
	int count;
	struct pl_selector selector;
	/* planner state */
	int prof;			/* index in world profiles, -1 missing/invalid */
	const char *prof_problem;	/* "not found" / the profile's invalid text */
	int first_slot, nslots;		/* this group's free-slot list (plan) */
};

enum pl_reason {
	PL_R_NONE,
	/* inventory */
	PL_R_INVALID_SPEC, PL_R_INVALID_SELECTOR, PL_R_CAPACITY, PL_R_ADMITTED,
	/* policy */
	PL_R_ACCEPTED, PL_R_TARGET_NOT_FOUND, PL_R_INVALID_TARGET, PL_R_CONFLICTED,
};

struct pl_inventory {
	struct pl_meta m;
	struct pl_group *groups;
	int ngroups;
	const char *invalid;		/* spec error (decode or semantic) */
	/* planner state */
	enum pl_reason admission;	/* ADMITTED, CAPACITY, INVALID_* */
	int racks, slots;
	struct pl_inv_stats {
		int bound, free, pending, conflict, incompatible, draining, foreign;
		int blocked;		/* groups with a missing or invalid profile */
		const char *ex_pending, *ex_conflict, *ex_incompatible;
		const char *ex_draining, *ex_foreign, *ex_blocked;
	} st;
};

struct pl_binding {
	const char *name, *uid;		/* nodeRef; name NULL = free slot */
};

struct pl_rack {
	struct pl_meta m;
	const char *owner_uid;		/* controller ownerReference to an SGPUInventory */
	const char *inventory, *group, *profile;
	int index;
	int64_t profile_revision;
	struct pl_binding *nodes;
	int nnodes;
	const char *fabric_uuid;
	int clique_id;
	bool terminating;		/* metadata.deletionTimestamp set */
	/* planner state */
	int inv;			/* owning inventory index, -1 none */
	int gidx;			/* its group in that inventory, -1 none */
	bool generated, keep, remove, foreign;
};

struct pl_ilist {
	bool present;
	int *v;
	int n;
};

enum pl_scope { PL_SCOPE_INVENTORY, PL_SCOPE_GROUP, PL_SCOPE_RACK,
	PL_SCOPE_NODE, PL_SCOPE_GPU };

struct pl_policy {
	struct pl_meta m;
	const char *inventory;
	bool groups_present;
	const char **groups;
	int ngroups;
	struct pl_ilist racks, nodes, gpus;
	struct pl_runtime rt;
	const char *invalid;		/* decode error in the spec */
	/* planner state */
	enum pl_scope scope;
	enum pl_reason reason;
	const char *message;
	int inv;
	uint64_t group_mask;		/* selected groups of the inventory */
};

enum pl_node_state {
	PL_N_IGNORED,			/* not eligible */
	PL_N_BOUND,
	PL_N_PENDING,			/* eligible, matches a group, no free slot */
	PL_N_UNMATCHED,			/* eligible, matches no admitted group */
	PL_N_CONFLICT,			/* selector overlap */
	PL_N_INCOMPATIBLE,		/* foreign projection metadata */
	PL_N_DRAINING,			/* old projection being removed */
};

struct pl_node {
	struct pl_meta m;
	struct pl_kvs labels, annotations;
	bool eligible;
	/* planner state */
	enum pl_node_state state;
	int rack, slot;			/* binding when BOUND (or draining) */
	const char *problem;
};

/* A Node document the plan writes: the projection or its removal. */
struct pl_projection {
	int node;
	int rack, slot;			/* -1 = removal */
};

struct pl_world {
	struct pl_arena arena;
	struct pl_profile *profiles;
	struct pl_inventory *inventories;
	struct pl_rack *racks;
	struct pl_policy *policies;
	struct pl_node *nodes;
	int nprofiles, ninventories, nracks, npolicies, nnodes;
	int cap_profiles, cap_inventories, cap_racks, cap_policies, cap_nodes;
	struct pl_hmap profile_by_name, node_by_name, rack_by_name, inv_by_name;
	/* plan results */
	int *inv_order;			/* inventories in creation order */
	int *slots;			/* free slots: rack << 8 | index, per group */
	int nslots;
	struct pl_projection *projections;
	int nprojections, cap_projections;
	int *assigned;			/* nodes bound in this pass, sorted */
	int nassigned;
	struct pl_hmap policy_cells;	/* (inventory, group, rack) -> policy list */
	int *cell_policies;
	int ncell_policies, cap_cell_policies;
	/* admitted groups (at most 64, in inventory order) and an index from
	 * "key\0value" to the groups whose selector requires that label */
	int ag_inv[PL_MAX_GROUPS], ag_g[PL_MAX_GROUPS], nag;
	struct pl_hmap sel_index;
	uint64_t *sel_masks, sel_always;
	bool planned;
};

void pl_world_init(struct pl_world *w);
void pl_world_free(struct pl_world *w);
struct pl_profile *pl_add_profile(struct pl_world *w);
struct pl_inventory *pl_add_inventory(struct pl_world *w);
struct pl_rack *pl_add_rack(struct pl_world *w);
struct pl_policy *pl_add_policy(struct pl_world *w);
struct pl_node *pl_add_node(struct pl_world *w);

/* Run every rule.  0 or -ENOMEM. */
int pl_plan(struct pl_world *w);
/* After pl_plan: plan the nodes added since (new Nodes only): 0 or -errno. */
int pl_plan_new_nodes(struct pl_world *w, int first_new);

/* Order by creationTimestamp, then name, then UID. */
int pl_meta_cmp(const struct pl_meta *a, const struct pl_meta *b);

/* ---- identities (planner/identity.c): pure functions of UID + coordinate */
void pl_uuid(char out[37], const char *inv_uid, const char *kind,
	     const char *group, int rack, int node, int gpu);
void pl_gpu_uuid(char out[41], const char *inv_uid, const char *group,
		 int rack, int node, int gpu);
void pl_gpu_serial(char out[14], const char *inv_uid, const char *group,
		   int rack, int node, int gpu);
void pl_fabric_uuid(char out[37], const char *inv_uid, const char *group, int rack);
int pl_clique_id(const char *inv_uid, const char *group, int rack);
/* "<inventory>-<group>-<index>" */
char *pl_rack_name(struct pl_arena *a, const char *inv, const char *group, int rack);

/* ---- projection (planner/project.c) */
/* The compact assignment annotation for rack slot; arena-allocated. */
const char *pl_assignment_json(struct pl_world *w, int rack, int slot);
/* Whether the Node's annotation names exactly this binding (profile
 * revision aside: it is ours to update). */
bool pl_annotation_names(const struct pl_world *w, const char *ann, int rack, int slot,
			 const char *node_uid);
/* Whether a Node carries Mokka projection markers. */
bool pl_node_projected(const struct pl_node *n);

/* ---- runtime policies (planner/policy*.c) */
int pl_policies_plan(struct pl_world *w);
const char *pl_scope_name(enum pl_scope s);
int pl_cell_key(char *buf, size_t size, int inv, int g, int r);
/* Effective runtime state of one GPU (defaults, then accepted policies
 * broad to narrow). */
int pl_gpu_runtime(const struct pl_world *w, int rack, int slot, int gpu,
		   struct pl_runtime *out);

/* Inventory conditions, computed from the plan (planner/conditions.c). */
struct pl_condition {
	const char *type, *status, *reason, *message;
};
#define PL_INV_CONDITIONS 6
void pl_inventory_conditions(struct pl_world *w, int inv,
			     struct pl_condition out[PL_INV_CONDITIONS]);
void pl_rack_condition(struct pl_world *w, int rack, struct pl_condition *out);
void pl_policy_condition(struct pl_world *w, int pol, struct pl_condition *out);

/* Internals shared by the planner's files. */
int pl_admit(struct pl_world *w);
int pl_materialize(struct pl_world *w);
int pl_bind(struct pl_world *w);
int pl_project(struct pl_world *w);
int pl_group_index(const struct pl_inventory *inv, const char *name);
int pl_push_projection(struct pl_world *w, int node, int rack, int slot);
int pl_group_match(struct pl_world *w, int node, int *inv_out, int *group_out,
		   int *nmatch);

#endif
