/* mokka-plan's decoder and emitter: errors name kind/name/field path;
 * List and multi-document input; byte-identical output; one Node added
 * changes only that Node's binding. */
#include <errno.h>

#include "tests/unit/planner_fixture.h"

#define T0 "2026-01-01T00:00:00Z"

static void decode_fails(const char *yaml, const char *want)
{
	struct pl_world w;
	struct pl_decoder d = { .w = &w, .source = "in.yaml", .strict = true };

	pl_world_init(&w);
	cr_assert_eq(pl_decode(&d, yaml, strlen(yaml)), -EINVAL, "accepted: %s", yaml);
	cr_assert(strstr(d.err, want), "want \"%s\" in \"%s\"", want, d.err);
	pl_decoder_free(&d);
	pl_world_free(&w);
}

#define INV_HEAD "apiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPUInventory\n" \
	"metadata: {name: inv, uid: u}\n"

Test(decode, errors_name_kind_name_and_field_path)
{
	decode_fails(INV_HEAD "spec:\n  rackGroups:\n  - {name: g, profileRef: {name: p}, count: x}\n",
		     "in.yaml:6: SGPUInventory inv: spec.rackGroups[0].count: must be an integer, got \"x\"");
	decode_fails(INV_HEAD "spec:\n  rackGroups:\n  - {name: g, count: 1}\n",
		     "SGPUInventory inv: spec.rackGroups[0].profileRef: required");
	decode_fails(INV_HEAD "spec:\n  rackGroups:\n  - {name: G_1, profileRef: {name: p}, count: 1}\n",
		     "spec.rackGroups[0].name: \"G_1\": must be lower-case");
	decode_fails(INV_HEAD "spec:\n  rackGroups:\n  - {name: g, profileRef: {name: p}, count: 1, "
		     "nodeSelector: {matchExpressions: [{key: k, operator: Near}]}}\n",
		     "spec.rackGroups[0].nodeSelector.matchExpressions[0].operator: must be In");
	decode_fails("apiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPURuntimePolicy\n"
		     "metadata: {name: pol}\nspec:\n  targetRef: {name: inv, gpuIndexes: [a]}\n",
		     "SGPURuntimePolicy pol: spec.targetRef.gpuIndexes[0]: must be an integer");
	decode_fails("apiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPURuntimePolicy\n"
		     "metadata: {name: pol}\nspec:\n  targetRef: {name: inv}\n"
		     "  health: {state: Sick}\n", "spec.health.state: unknown value \"Sick\"");
	decode_fails("apiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPURackProfile\n"
		     "metadata: {name: p}\nspec: {nodesPerRack: 2, gpusPerNode: 99}\n",
		     "SGPURackProfile p: spec.gpusPerNode: 99 is out of range 1..64");
	decode_fails("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
		     "Node n: metadata.uid: required");
	decode_fails("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n"
		     "  metadata: {name: n, uid: u, labels: {a: [1]}}\n",
		     "in.yaml:6: Node n: metadata.labels: a: must be a string");
	decode_fails("apiVersion: v2\nkind: Node\nmetadata: {name: n, uid: u}\n",
		     "Node n: apiVersion: \"v2\" is not v1");
	decode_fails("kind: Node\n", "object (unnamed): apiVersion: required");
	decode_fails("a: [1\n", "in.yaml: line 2");
	decode_fails("a: &x 1\nb: *x\n", "aliases are not supported");
	decode_fails("apiVersion: v1\nkind: Node\nmetadata: {name: n, uid: u}\n---\n"
		     "apiVersion: v1\nkind: Node\nmetadata: {name: n, uid: v}\n",
		     "Node n: metadata.name: duplicate Node");
}

Test(decode, spec_errors_invalidate_only_their_object)
{
	struct fx f;

	fx_plan(&f, fx_cat(fx_inventory("inv", "u", T0, "[{name: g, count: 1}]"),
			   fx_inventory("ok", "u2", T0, "[]"), NULL));
	cr_assert_eq(f.d.nwarnings, 1);
	cr_assert_str_eq(fx_cond(&f, "inv", "Valid").reason, "InvalidSpec");
	cr_assert(strstr(fx_cond(&f, "inv", "Valid").message,
			 "spec.rackGroups[0].profileRef: required"));
	cr_assert_str_eq(fx_cond(&f, "ok", "Valid").reason, "Valid");
	fx_free(&f);
}

static const char *list_input =
	"apiVersion: v1\nitems:\n"
	"- apiVersion: mokka.nvidia.com/v1alpha1\n  kind: SGPURackProfile\n"
	"  metadata: {name: p, generation: 1}\n  spec: {nodesPerRack: 2, gpusPerNode: 2}\n"
	"- apiVersion: mokka.nvidia.com/v1alpha1\n  kind: SGPUInventory\n"
	"  metadata: {name: inv, uid: iu, creationTimestamp: \"" T0 "\"}\n"
	"  spec: {rackGroups: [{name: g, profileRef: {name: p}, count: 2}]}\n"
	"- apiVersion: v1\n  kind: Node\n  metadata: {name: n2, uid: u2, creationTimestamp: "
	"\"2026-01-02T00:00:00Z\", labels: {mokka.nvidia.com/sgpu-node: \"true\"}}\n"
	"- apiVersion: v1\n  kind: Node\n  metadata: {name: n1, uid: u1, creationTimestamp: "
	"\"2026-01-02T00:00:00Z\", labels: {mokka.nvidia.com/sgpu-node: \"true\"}}\n"
	"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: ignored}\n"
	"kind: List\nmetadata: {resourceVersion: \"\"}\n";

static char *plan_text(const char *yaml)
{
	struct fx f;
	char *a, *s, *out;

	fx_plan(&f, strdup(yaml));
	a = fx_emit(&f, pl_emit_apply);
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);

		cr_assert_eq(pl_emit_status(m, &f.w, T0), 0);
		fclose(m);
		s = buf;
	}
	out = fx_cat(a, s, NULL);
	fx_free(&f);
	return out;
}

/* kubectl's List as a document stream: each "- " item becomes a document. */
static char *as_documents(const char *list)
{
	const char *p = strstr(list, "items:\n") + strlen("items:\n");
	const char *end = strstr(list, "kind: List\n");
	char *out = calloc(1, 1);

	while (p < end) {
		const char *nl = strchr(p, '\n');
		char *line = strndup(p + 2, (size_t)(nl - p - 2));

		out = fx_cat(out, fx_fmt("%s%s\n", p[0] == '-' ? "---\n" : "", line), NULL);
		free(line);
		p = nl + 1;
	}
	return out;
}

Test(output, list_and_multi_document_give_the_same_bytes)
{
	char *multi = as_documents(list_input), *a, *b, *c;

	a = plan_text(list_input);
	b = plan_text(list_input);
	c = plan_text(multi);
	cr_assert_str_eq(a, b);
	cr_assert_str_eq(a, c);
	cr_assert(strstr(a, "name: n1\n      uid: u1"), "%s", a);	/* n1 < n2 by name */
	free(a);
	free(b);
	free(c);
	free(multi);
}

Test(output, input_order_does_not_matter)
{
	const char *docs[] = {
		"apiVersion: v1\nkind: Node\nmetadata: {name: b, uid: ub, creationTimestamp: \"" T0 "\", "
		"labels: {mokka.nvidia.com/sgpu-node: \"true\"}}\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: a, uid: ua, creationTimestamp: \"" T0 "\", "
		"labels: {mokka.nvidia.com/sgpu-node: \"true\"}}\n",
		"apiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPURackProfile\n"
		"metadata: {name: p}\nspec: {nodesPerRack: 1, gpusPerNode: 1}\n",
		"apiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPUInventory\n"
		"metadata: {name: inv, uid: iu}\nspec: {rackGroups: [{name: g, profileRef: {name: p}, "
		"count: 2}]}\n",
	};
	char *fwd = fx_fmt("%s---\n%s---\n%s---\n%s", docs[0], docs[1], docs[2], docs[3]);
	char *rev = fx_fmt("%s---\n%s---\n%s---\n%s", docs[3], docs[2], docs[1], docs[0]);
	char *a = plan_text(fwd), *b = plan_text(rev);

	cr_assert_str_eq(a, b);
	free(a);
	free(b);
	free(fwd);
	free(rev);
}

/* Lines of b not in a (as a set), concatenated. */
static char *added_lines(const char *a, const char *b)
{
	char *out = calloc(1, 1), *copy = strdup(b), *save = NULL;

	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *needle = fx_fmt("\n%s\n", l);

		if (!strstr(a, needle))
			out = fx_cat(out, fx_fmt("%s\n", l), NULL);
		free(needle);
	}
	free(copy);
	return out;
}

Test(output, one_node_added_changes_only_its_binding)
{
	char *racks = strdup(
		"---\napiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPURack\nmetadata:\n"
		"  name: inv-g-0\n  ownerReferences: [{apiVersion: mokka.nvidia.com/v1alpha1, "
		"kind: SGPUInventory, name: inv, uid: iu, controller: true}]\n"
		"spec: {inventoryRef: {name: inv, uid: iu}, rackGroup: g, rackIndex: 0, "
		"nodes: [{index: 0, nodeRef: {name: n1, uid: u1}}, {index: 1, nodeRef: {name: n2, uid: u2}}]}\n");
	char *before = fx_cat(strdup(list_input), strdup(racks), NULL);
	char *after = fx_cat(strdup(list_input), racks,
			     strdup("---\napiVersion: v1\nkind: Node\nmetadata: {name: n0, uid: u0, "
				    "creationTimestamp: \"2026-01-01T00:00:00Z\", labels: "
				    "{mokka.nvidia.com/sgpu-node: \"true\"}}\n"), NULL);
	struct fx f;
	char *a, *b, *diff;

	fx_plan(&f, before);
	a = fx_emit(&f, pl_emit_apply);
	fx_free(&f);
	fx_plan(&f, after);
	b = fx_emit(&f, pl_emit_apply);
	cr_assert_str_eq(fx_bound(&f, "inv-g-0", 0), "n1");	/* older n0 does not move it */
	cr_assert_str_eq(fx_bound(&f, "inv-g-1", 0), "n0");
	fx_free(&f);
	diff = added_lines(a, b);
	/* only the new binding and the new Node's projection */
	cr_assert(strstr(diff, "name: n0"), "%s", diff);
	cr_assert_null(strstr(diff, "n1"), "%s", diff);
	cr_assert_null(strstr(diff, "n2"), "%s", diff);
	cr_assert_null(strstr(diff, "inv-g-0"), "%s", diff);
	free(diff);
	diff = added_lines(b, a);
	cr_assert_null(strstr(diff, "name:"), "removed: %s", diff);	/* only the old free slot */
	free(diff);
	free(a);
	free(b);
}

Test(output, incremental_plan_matches_a_full_plan)
{
	const char *extra = "---\napiVersion: v1\nkind: Node\nmetadata: {name: n3, uid: u3, "
		"creationTimestamp: \"2026-01-03T00:00:00Z\", labels: {mokka.nvidia.com/sgpu-node: \"true\"}}\n";
	struct fx f;
	char *full, *inc;

	fx_plan(&f, fx_cat(strdup(list_input), strdup(extra), NULL));
	full = fx_emit(&f, pl_emit_apply);
	fx_free(&f);
	fx_plan(&f, strdup(list_input));
	cr_assert_eq(pl_decode(&f.d, extra, strlen(extra)), 0);
	cr_assert_eq(pl_plan_new_nodes(&f.w, f.w.nnodes - 1), 0);
	inc = fx_emit(&f, pl_emit_apply);
	cr_assert_str_eq(full, inc);
	fx_free(&f);
	free(full);
	free(inc);
}

Test(output, unchanged_condition_keeps_its_transition_time)
{
	struct fx f;
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	fx_plan(&f, fx_cat(fx_fmt("---\napiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPUInventory\n"
				  "metadata: {name: inv, uid: iu}\nspec: {rackGroups: []}\n"
				  "status: {conditions: [{type: Valid, status: \"True\", "
				  "lastTransitionTime: \"2020-01-01T00:00:00Z\"}, {type: Admitted, "
				  "status: \"False\", lastTransitionTime: \"2020-01-01T00:00:00Z\"}]}\n"),
			   NULL));
	m = open_memstream(&buf, &len);
	cr_assert_eq(pl_emit_status(m, &f.w, "2030-01-01T00:00:00Z"), 0);
	fclose(m);
	cr_assert(strstr(buf, "type: Valid\n    status: \"True\"\n    reason: Valid\n    message: "
			 "the spec is valid\n    observedGeneration: 0\n    lastTransitionTime: "
			 "\"2020-01-01T00:00:00Z\""), "%s", buf);
	cr_assert(strstr(buf, "reason: Admitted\n    message: \"0 racks, 0 rack groups and 0 logical "
			 "Nodes fit the envelope\"\n    observedGeneration: 0\n    lastTransitionTime: "
			 "\"2030-01-01T00:00:00Z\""), "%s", buf);
	free(buf);
	fx_free(&f);
}
