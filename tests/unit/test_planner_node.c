/* The node side of the control plane (profile/controlplane.c): the
 * per-node document is found in a file or a stream, checked, and merged
 * into the profile so the compiled state carries the plan's identities and
 * the engine config its runtime state. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ipc/state.h"
#include "profile/compile.h"
#include "profile/controlplane.h"

#define DOC(name, gpu0) \
	"---\napiVersion: mokka.nvidia.com/v1alpha1\nkind: SGPUNodeState\n" \
	"metadata:\n  name: " name "\nspec:\n  gpus:\n" \
	"  - index: 0\n    uuid: GPU-11111111-2222-8333-8444-555555555555\n" \
	"    serial: \"1000000000001\"\n    runtime:\n" gpu0 \
	"  - index: 1\n    uuid: GPU-11111111-2222-8333-8444-666666666666\n" \
	"    serial: \"1000000000002\"\n    runtime:\n" \
	"      modes: {persistence: false, computeMode: Prohibited, ecc: false}\n" \
	"      telemetry: {drawMilliWatts: 0, temperatureCelsius: 77, " \
	"gpuUtilizationPercent: 42, memoryUtilizationPercent: 7}\n"

#define FAILED "      health: {state: Failed, xid: 48}\n"

static const char *setting(const struct cp_gpu *g, const char *path)
{
	for (int i = 0; i < g->nset; i++)
		if (!strcmp(g->set[i].path, path))
			return g->set[i].value;
	return NULL;
}

Test(controlplane_node, picks_this_nodes_document_from_a_stream)
{
	const char *stream = DOC("other", "") DOC("me", FAILED);
	struct cp_plan p;
	char err[256];

	cr_assert_eq(cp_parse(stream, strlen(stream), "me", &p, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(p.ngpus, 2);
	cr_assert_str_eq(p.gpus[0].uuid, "GPU-11111111-2222-8333-8444-555555555555");
	cr_assert_str_eq(setting(&p.gpus[0], "failure.mode"), "lost");
	cr_assert_str_eq(setting(&p.gpus[0], "failure.xid.code"), "48");
	cr_assert_str_eq(setting(&p.gpus[1], "power.current_draw_mw"), "0");
	cr_assert_str_eq(setting(&p.gpus[1], "compute_mode"), "prohibited");
	cr_assert_str_eq(setting(&p.gpus[1], "persistence_mode"), "disabled");
	cr_assert_str_eq(setting(&p.gpus[1], "ecc.mode_current"), "disabled");
	cr_assert_eq(cp_parse(stream, strlen(stream), "nobody", &p, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "nobody"));
}

static void bad(const char *doc, const char *want)
{
	struct cp_plan p;
	char err[256] = "";

	cr_assert_eq(cp_parse(doc, strlen(doc), "me", &p, err, sizeof(err)), -EINVAL, "%s", doc);
	cr_assert(strstr(err, want), "want \"%s\" in \"%s\"", want, err);
}

Test(controlplane_node, rejects_bad_documents_naming_the_field)
{
	bad(DOC("me", "      health: {state: Sick}\n"), "spec.gpus[0].runtime.health.state");
	bad(DOC("me", "      telemetry: {drawMilliWatts: -1}\n"),
	    "spec.gpus[0].runtime.telemetry.drawMilliWatts");
	bad(DOC("me", "      modes: {computeMode: Turbo}\n"), "runtime.modes.computeMode");
	bad("kind: SGPUNodeState\nmetadata: {name: me}\nspec: {gpus: [{index: 0, uuid: x, serial: \"1\"}]}\n",
	    "spec.gpus[0].uuid");
	bad("kind: SGPUNodeState\nmetadata: {name: me}\nspec: {}\n", "spec.gpus: required");
	bad("kind: [", "line");
}

Test(controlplane_node, merged_profile_compiles_with_the_plans_identities)
{
	const char *doc = DOC("me", FAILED);
	struct compile_opts o = { 0 };
	struct cp_plan p;
	struct state st;
	char err[512], *merged = NULL;
	size_t len = 0;

	cr_assert_eq(cp_parse(doc, strlen(doc), "me", &p, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cp_merge_profile(compile_default_profile, compile_default_profile_len, &p,
				      &merged, &len, err, sizeof(err)), 0, "%s", err);
	cr_assert(strstr(merged, "current_draw_mw: 0"), "%s", merged);
	cr_assert(strstr(merged, "mode: \"lost\""), "%s", merged);
	cr_assert(strstr(merged, "node_identity: \"pinned\""), "%s", merged);
	/* as in a DaemonSet ($NODE_NAME): the plan's identities still win */
	o.node_name = "node-a";
	o.node_identity = true;
	state_init(&st);
	cr_assert_eq(compile_profile("merged", merged, len, NULL, NULL, 0, &o, &st, err,
				     sizeof(err)), 0, "%s", err);
	cr_assert_eq(st.num_devices, 8);
	cr_assert_str_eq(st.devices[0].uuid, "GPU-11111111-2222-8333-8444-555555555555");
	cr_assert_str_eq(st.devices[1].serial, "1000000000002");
	cr_assert_str_eq(st.devices[2].uuid, "GPU-2330de10-0000-0000-0000-000000000002");
	state_free(&st);
	free(merged);
}
