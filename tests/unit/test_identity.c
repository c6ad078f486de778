/* A node of its own (profile/identity.c): the derivations are stable,
 * differ across node names, have the real shapes; the compiled profile
 * (and the engine config staged from it) carries them; a pinned profile
 * keeps its own. */
#include <ctype.h>
#include "profile/identity.h"
#include "tests/unit/compile_fixture.h"

TestSuite(identity, .init = setup, .fini = teardown);

static bool uuid_shaped(const char *u)
{
	static const int dash[] = { 12, 17, 22, 27 };

	if (strlen(u) != 40 || strncmp(u, "GPU-", 4))
		return false;
	for (int i = 4, k = 0; i < 40; i++) {
		if (k < 4 && i == dash[k]) {
			if (u[i] != '-')
				return false;
			k++;
		} else if (!isxdigit((unsigned char)u[i]) || isupper((unsigned char)u[i])) {
			return false;
		}
	}
	/* version 4, RFC 4122 variant */
	return u[18] == '4' && strchr("89ab", u[23]);
}

static bool serial_shaped(const char *s, const char *prefix)
{
	return strlen(s) == 13 && strspn(s, "0123456789") == 13 && !strncmp(s, prefix, 4);
}

Test(identity, shapes_and_stable)
{
	char a[IDENTITY_UUID_LEN], b[IDENTITY_UUID_LEN], s1[IDENTITY_SERIAL_LEN],
	     s2[IDENTITY_SERIAL_LEN];

	identity_gpu_uuid("node-a", "GPU-2330de10-0000-0000-0000-000000000000", 0, a);
	identity_gpu_uuid("node-a", "GPU-2330de10-0000-0000-0000-000000000000", 0, b);
	cr_assert(uuid_shaped(a), "not a UUID: %s", a);
	cr_assert_str_eq(a, b, "same node, same template: same UUID");
	identity_serial("node-a", "board", "1654922000100", 0, s1);
	identity_serial("node-a", "board", "1654922000100", 0, s2);
	cr_assert(serial_shaped(s1, "1654"), "not a 13-digit 1654... serial: %s", s1);
	cr_assert_str_eq(s1, s2);
	identity_serial("node-a", "board", "", 0, s1);
	cr_assert(serial_shaped(s1, "1650"), "no template: 1650 prefix, got %s", s1);
}

/* 2000 nodes x 8 GPUs: no UUID twice, no serial twice within a pair of nodes */
Test(identity, distinct_across_names)
{
	enum { NODES = 2000, GPUS = 8 };
	static char u[NODES * GPUS][IDENTITY_UUID_LEN];
	char node[32], s[2][IDENTITY_SERIAL_LEN];

	for (int n = 0; n < NODES; n++)
		for (int g = 0; g < GPUS; g++) {
			snprintf(node, sizeof(node), "node-%05d", n);
			identity_gpu_uuid(node, "GPU-2330de10-0000-0000-0000-000000000000", g,
					  u[n * GPUS + g]);
		}
	qsort(u, NODES * GPUS, IDENTITY_UUID_LEN, (int (*)(const void *, const void *))strcmp);
	for (int i = 1; i < NODES * GPUS; i++)
		cr_assert_str_neq(u[i - 1], u[i], "UUID %s twice", u[i]);
	identity_serial("node-a", "board", "1654922000100", 0, s[0]);
	identity_serial("node-b", "board", "1654922000100", 0, s[1]);
	cr_assert_str_neq(s[0], s[1]);
	identity_serial("node-a", "chassis", "1654922000100", 0, s[1]);
	cr_assert_str_neq(s[0], s[1], "the chassis serials are their own space");
}

Test(identity, ib_guid_keeps_oui_and_reference_rule)
{
	uint64_t a = identity_ib_node_guid(0xa088c203u, "node-a", 3);
	uint64_t b = identity_ib_node_guid(0xa088c203u, "node-b", 3);
	uint32_t nid = identity_node_id("node-a");

	cr_assert_eq(a >> 40, 0xa088c2u, "vendor OUI kept");
	cr_assert_neq(a, b);
	cr_assert_eq(a, (0xa088c203ull << 32) | ((nid & 0x7fffffu) << 9) | 6u,
		     "the reference's rule (IB.md 1.3)");
	cr_assert_eq(a & 1, 0, "port GUID = node GUID | 1 stays distinct");
}

static char *shipped(const char *name, size_t *len)
{
	char path[4096];

	profile_path(path, sizeof(path), name);
	return read_file(path, len);
}

static int compile_as(const char *yaml, size_t len, const char *node, bool from_env,
		      struct state *s)
{
	struct compile_opts o = { .node_name = node, .node_identity = from_env };

	state_free(s);
	state_init(s);
	return compile_profile("p.yaml", yaml, len, NULL, NULL, 0, &o, s, err, sizeof(err));
}

Test(identity, compiled_profile_per_node)
{
	static struct state a, b, again;
	size_t len;
	char *y = shipped("h100", &len);

	state_init(&a), state_init(&b), state_init(&again);
	cr_assert_eq(compile_as(y, len, "node-a", true, &a), 0, "%s", err);
	cr_assert_eq(compile_as(y, len, "node-b", true, &b), 0, "%s", err);
	cr_assert_eq(compile_as(y, len, "node-a", true, &again), 0, "%s", err);
	cr_assert_eq(a.num_devices, 8);
	for (int i = 0; i < a.num_devices; i++) {
		const struct state_device *d = &a.devices[i];

		cr_assert(uuid_shaped(d->uuid), "GPU %d: %s", i, d->uuid);
		cr_assert(serial_shaped(d->serial, "1654"), "GPU %d: %s", i, d->serial);
		cr_assert_str_neq(d->uuid, "GPU-2330de10-0000-0000-0000-000000000000");
		cr_assert_str_eq(d->uuid, again.devices[i].uuid, "stable across restarts");
		cr_assert_str_eq(d->serial, again.devices[i].serial);
		cr_assert(strstr(a.profile_doc, d->uuid), "the staged engine config carries it");
		for (int j = 0; j < b.num_devices; j++) {
			cr_assert_str_neq(d->uuid, b.devices[j].uuid);
			cr_assert_str_neq(d->serial, b.devices[j].serial);
		}
		for (int j = 0; j < i; j++)
			cr_assert_str_neq(d->serial, a.devices[j].serial);
	}
	cr_assert_eq(a.ib.hcas[0].node_guid >> 40, 0xa088c2u);
	cr_assert_neq(a.ib.hcas[0].node_guid, b.ib.hcas[0].node_guid);
	/* mokka-ctl and pcifs compile the staged config without a node: same GPUs */
	state_free(&again);
	state_init(&again);
	cr_assert_eq(compile_profile("config.yaml", a.profile_doc, a.profile_len, NULL, NULL, 0,
				     NULL, &again, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < a.num_devices; i++)
		cr_assert_str_eq(a.devices[i].uuid, again.devices[i].uuid);
	/* nor does a node name compile it again into other identities */
	cr_assert_eq(compile_as(a.profile_doc, a.profile_len, "node-b", true, &again), 0);
	cr_assert_str_eq(a.devices[0].uuid, again.devices[0].uuid);
	state_free(&a), state_free(&b), state_free(&again);
	free(y);
}

Test(identity, pinned_default_and_derived)
{
	size_t len;
	char *y = shipped("h100", &len), *p = malloc(len + 64);
	struct state *sp = &st;
#define s (*sp)
	/* a node not named by --node-name or $NODE_NAME (the hostname): as written */
	cr_assert_eq(compile_as(y, len, "node-a", false, &s), 0, "%s", err);
	cr_assert_str_eq(s.devices[4].uuid, "GPU-2330de10-0000-0000-0000-000000000004");
	cr_assert_str_eq(s.devices[4].serial, "1654922000104");
	cr_assert_eq(s.profile_len, len, "the profile's bytes untouched");
	/* pinned wins over $NODE_NAME */
	len = (size_t)sprintf(p, "%snode_identity: pinned\n", y);
	cr_assert_eq(compile_as(p, len, "node-a", true, &s), 0, "%s", err);
	cr_assert_str_eq(s.devices[0].uuid, "GPU-2330de10-0000-0000-0000-000000000000");
	/* derived without $NODE_NAME */
	len = (size_t)sprintf(p, "%snode_identity: derived\n", y);
	cr_assert_eq(compile_as(p, len, "node-a", false, &s), 0, "%s", err);
	cr_assert(uuid_shaped(s.devices[0].uuid) &&
		  strcmp(s.devices[0].uuid, "GPU-2330de10-0000-0000-0000-000000000000"));
	len = (size_t)sprintf(p, "%snode_identity: sometimes\n", y);
	cr_assert_eq(compile_as(p, len, "node-a", false, &s), -EINVAL);
	cr_assert(!strncmp(err, "p.yaml:", 7) &&
		  strstr(err, ": node_identity: want pinned or derived, got 'sometimes'"),
		  "%s", err);
#undef s
	free(y);
	free(p);
}

/* GB200: the two GPUs of a superchip share a board serial, the chassis one
 * serial; derived, they still do, and nothing else does. */
Test(identity, shared_serials_stay_shared)
{
	size_t len;
	char *y = shipped("gb200", &len);
	static struct state s;

	state_init(&s);
	cr_assert_eq(compile_as(y, len, "rack1-tray3", true, &s), 0, "%s", err);
	cr_assert_str_eq(s.devices[0].serial, s.devices[1].serial);
	cr_assert_str_neq(s.devices[0].serial, "1657024000100");
	cr_assert_str_neq(s.devices[1].serial, s.devices[2].serial);
	cr_assert_null(strstr(s.profile_doc, "1830125000001"), "chassis serial derived");
	state_free(&s);
	free(y);
}

Test(identity, not_a_mapping_is_left_to_the_compiler)
{
	char *out = NULL;
	size_t olen;

	cr_assert_eq(identity_apply("x", "[1, 2", 5, "n", true, &out, &olen, err, sizeof(err)), 0);
	cr_assert_null(out);
	cr_assert_eq(identity_apply("x", "- a\n", 4, "n", true, &out, &olen, err, sizeof(err)), 0);
	cr_assert_null(out);
	cr_assert_eq(identity_apply("x", "a: 1\n", 5, "", true, &out, &olen, err, sizeof(err)), 0);
	cr_assert_null(out, "no node name: nothing to derive from");
}
