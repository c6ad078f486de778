/* Profile compiler: every shipped profile compiles to the right shape, the
 * built-in default compiles, and each class of bad input is refused with
 * "FILE:LINE:COL: key.path: why". */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/log.h"
#include "ipc/state.h"
#include "supervisor/compile.h"

static struct state st;
static char err[512];

static void setup(void)
{
	state_init(&st);
	err[0] = '\0';
	log_setup("test_compile", LOG_LVL_DEBUG, LOG_FMT_TEXT);
}

static void teardown(void)
{
	state_free(&st);
}

TestSuite(compile, .init = setup, .fini = teardown);

static int compile_str(const char *name, const char *yaml,
		       const struct compile_opts *o)
{
	return compile_profile(name, yaml, strlen(yaml), NULL, NULL, 0, o, &st,
			       err, sizeof(err));
}

static void expect_error(const char *name, const char *yaml, const char *want)
{
	int rc = compile_str(name, yaml, NULL);

	cr_assert_eq(rc, -EINVAL, "compiled although it should fail with: %s", want);
	cr_assert_eq(strncmp(err, want, strlen(want)), 0,
		     "error\n  got:  %s\n  want: %s...", err, want);
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert_not_null(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void profile_path(char *buf, size_t size, const char *name)
{
	const char *src = getenv("MOKKA_SRCDIR");

	snprintf(buf, size, "%s/etc/profiles/%s.yaml", src ? src : ".", name);
	if (!src && access(buf, R_OK) != 0)	/* run from tests/ or the build dir */
		snprintf(buf, size, "../etc/profiles/%s.yaml", name);
}

/* ------------------------------------------------------------------ */

struct shipped {
	const char *name;
	int devices, roots;
	uint16_t device_id, subsys_device_id;
	int gen;
	int numa_last;			/* NUMA node of the last GPU */
	bool fabric;
	uint64_t memory;
};

static const struct shipped shipped[] = {
	{ "a100", 8, 2, 0x20b0, 0x134f, 4, 1, true, 42949672960ull },
	{ "h100", 8, 2, 0x2330, 0x16c1, 5, 1, true, 85899345920ull },
	{ "h200", 8, 2, 0x2335, 0x18be, 5, 1, true, 150754820096ull },
	{ "b200", 8, 2, 0x2901, 0x1999, 6, 1, true, 192265846784ull },
	{ "gb200", 8, 4, 0x2941, 0x1817, 6, 3, true, 198674743296ull },
	{ "gb300", 8, 4, 0x31c2, 0x1830, 6, 3, true, 309237645312ull },
	{ "l40s", 8, 2, 0x26b9, 0x1851, 4, 1, false, 48305799168ull },
	{ "t4", 4, 1, 0x1eb8, 0x12a2, 3, 0, false, 16106127360ull },
};

static void check_shipped(const struct shipped *p)
{
	char path[4096];
	size_t len;
	char *yaml;
	int rc;

	profile_path(path, sizeof(path), p->name);
	yaml = read_file(path, &len);
	state_free(&st);
	state_init(&st);
	rc = compile_profile(path, yaml, len, NULL, NULL, 0, NULL, &st, err, sizeof(err));
	free(yaml);
	cr_assert_eq(rc, 0, "%s: %s", p->name, err);
	cr_assert_eq(st.num_devices, p->devices, "%s", p->name);
	cr_assert_eq(st.num_roots, p->roots, "%s", p->name);
	cr_assert_eq(st.fabric.enabled, p->fabric, "%s", p->name);
	cr_assert_gt(st.cores_per_numa, 0, "%s", p->name);
	cr_assert_neq(st.driver_version[0], '\0');
	for (int i = 0; i < st.num_devices; i++) {
		const struct state_device *d = &st.devices[i];

		cr_assert_eq(d->index, i, "%s", p->name);
		cr_assert_eq(d->minor, i, "%s", p->name);
		cr_assert_eq(d->vendor_id, 0x10de);
		cr_assert_eq(d->device_id, p->device_id, "%s: %04x", p->name, d->device_id);
		cr_assert_eq(d->subsys_vendor_id, 0x10de);
		cr_assert_eq(d->subsys_device_id, p->subsys_device_id, "%s", p->name);
		cr_assert_eq(d->pcie.max_gen, p->gen, "%s", p->name);
		cr_assert_eq(d->pcie.max_width, 16, "%s", p->name);
		cr_assert_eq(d->memory_total_bytes, p->memory, "%s", p->name);
		cr_assert(state_valid_bdf(d->bus_id), "%s: %s", p->name, d->bus_id);
		cr_assert_geq(d->root, 0, "%s: GPU %d has no root", p->name, i);
		cr_assert_eq(d->numa_node, st.roots[d->root].numa_node);
		cr_assert_str_eq(d->architecture, p->name[0] == 'a' ? "ampere" :
				 p->name[0] == 'h' ? "hopper" : p->name[0] == 'l' ?
				 "ada_lovelace" : p->name[0] == 't' ? "turing" : "blackwell");
		cr_assert_eq(strncmp(d->uuid, "GPU-", 4), 0);
	}
	cr_assert_eq(st.devices[0].numa_node, 0, "%s", p->name);
	cr_assert_eq(st.devices[p->devices - 1].numa_node, p->numa_last, "%s", p->name);
	for (int r = 0; r < st.num_roots; r++)
		cr_assert_neq(st.roots[r].cpu_affinity[0], '\0', "%s", p->name);
	cr_assert_not_null(st.profile_json);
}

Test(compile, shipped_profiles)
{
	for (size_t i = 0; i < sizeof(shipped) / sizeof(shipped[0]); i++)
		check_shipped(&shipped[i]);
}

Test(compile, gb200_has_two_gpus_per_root)
{
	check_shipped(&shipped[4]);
	for (int r = 0; r < 4; r++) {
		int n = 0;

		for (int i = 0; i < st.num_devices; i++)
			n += st.devices[i].root == r;
		cr_assert_eq(n, 2, "root %s holds %d GPUs", st.roots[r].id, n);
		cr_assert_eq(st.roots[r].numa_node, r);
	}
	cr_assert_str_eq(st.roots[3].id, "pci0000:c0");
}

Test(compile, builtin_default_is_h100)
{
	int rc;

	cr_assert_gt(compile_default_profile_len, 100);
	cr_assert_eq(compile_default_profile[compile_default_profile_len], '\0');
	cr_assert_eq(strlen(compile_default_profile), compile_default_profile_len);
	rc = compile_profile("<built-in>", compile_default_profile,
			     compile_default_profile_len, NULL, NULL, 0, NULL, &st,
			     err, sizeof(err));
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(st.num_devices, 8);
	cr_assert_eq(st.num_roots, 2);
	cr_assert_str_eq(st.devices[0].name, "NVIDIA H100 80GB HBM3");
	cr_assert_str_eq(st.devices[0].bus_id, "0000:1a:00.0", "bus ids are lowercased");
	cr_assert_eq(st.devices[3].numa_node, 0);
	cr_assert_eq(st.devices[4].numa_node, 1);
	cr_assert(st.fabric.enabled);
	cr_assert_eq(st.fabric.links_per_gpu, 18);
	cr_assert_str_eq(st.fabric.state_dir, "/var/lib/nvml-mock/fabric-state");
	cr_assert_str_eq(st.mock_root, "/var/lib/nvml-mock");
}

/* A small valid profile; tails below start at line 14. */
#define HEAD \
	"version: \"1.0\"\n"				/* 1 */ \
	"system:\n"					/* 2 */ \
	"  driver_version: \"550.163.01\"\n"		/* 3 */ \
	"device_defaults:\n"				/* 4 */ \
	"  name: \"NVIDIA H100 80GB HBM3\"\n"		/* 5 */ \
	"  memory:\n"					/* 6 */ \
	"    total_bytes: 85899345920\n"		/* 7 */ \
	"  pci:\n"					/* 8 */ \
	"    device_id: 0x233010DE\n"			/* 9 */ \
	"    subsystem_id: 0x16C10000\n"		/* 10 */ \
	"  pcie:\n"					/* 11 */ \
	"    max_link_gen: 5\n"				/* 12 */ \
	"    max_link_width: 16\n"			/* 13 */

#define TWO_DEVICES \
	"devices:\n"					/* 14 */ \
	"  - index: 0\n"				/* 15 */ \
	"    pci: {bus_id: \"0000:1A:00.0\"}\n"		/* 16 */ \
	"  - index: 1\n"				/* 17 */ \
	"    pci: {bus_id: \"0000:9a:00.0\"}\n"		/* 18 */

#define TWO_ROOTS \
	"pcie_topology:\n"				/* 19 */ \
	"  root_complexes:\n"				/* 20 */ \
	"    - id: \"pci0000:00\"\n"			/* 21 */ \
	"      numa_node: 0\n"				/* 22 */ \
	"      devices: [\"0000:1a:00.0\"]\n"		/* 23 */ \
	"    - id: \"pci0000:80\"\n"			/* 24 */ \
	"      numa_node: 1\n"				/* 25 */ \
	"      devices: [\"0000:9a:00.0\"]\n"		/* 26 */

Test(compile, minimal_profile_semantics)
{
	int rc = compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, NULL);
	const struct state_device *d = &st.devices[1];

	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(st.num_devices, 2);
	cr_assert_eq(d->device_id, 0x2330);
	cr_assert_eq(d->vendor_id, 0x10de);
	cr_assert_eq(d->subsys_device_id, 0x16c1);
	cr_assert_eq(d->subsys_vendor_id, 0x10de, "subsystem vendor 0 means the vendor");
	cr_assert_eq(d->numa_node, 1);
	cr_assert_eq(d->root, 1);
	cr_assert_eq(d->minor, 1, "minor defaults to the index");
	cr_assert_eq(d->pcie.cur_gen, 5, "current gen defaults to max");
	cr_assert_eq(d->pcie.cur_width, 16);
	cr_assert_str_eq(d->name, "NVIDIA H100 80GB HBM3");
	cr_assert_eq(strlen(d->uuid), 40, "uuid '%s'", d->uuid);
	cr_assert_eq(strncmp(d->uuid, "GPU-", 4), 0);
	cr_assert_str_neq(st.devices[0].uuid, d->uuid);
	cr_assert(!st.fabric.enabled);
}

Test(compile, default_uuid_is_deterministic)
{
	char first[STATE_NAME_MAX];

	cr_assert_eq(compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, NULL), 0, "%s", err);
	strcpy(first, st.devices[0].uuid);
	state_free(&st);
	state_init(&st);
	cr_assert_eq(compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, NULL), 0, "%s", err);
	cr_assert_str_eq(st.devices[0].uuid, first);
}

Test(compile, device_values_override_defaults)
{
	int rc = compile_str("p.yaml", HEAD
		"devices:\n"
		"  - index: 1\n"
		"    name: \"Other\"\n"
		"    uuid: \"GPU-abcdef01-0000-0000-0000-000000000001\"\n"
		"    minor_number: 9\n"
		"    memory: {reserved_bytes: 0, total_bytes: 1024}\n"
		"    pci: {bus_id: \"0000:1b:00.0\", device_id: 0x233510DE}\n"
		"  - index: 0\n"
		"    pci: {bus_id: \"0000:1a:00.0\"}\n", NULL);

	cr_assert_eq(rc, 0, "%s", err);
	/* devices are ordered by index, whatever the file order */
	cr_assert_str_eq(st.devices[0].bus_id, "0000:1a:00.0");
	cr_assert_str_eq(st.devices[1].name, "Other");
	cr_assert_str_eq(st.devices[1].uuid, "GPU-abcdef01-0000-0000-0000-000000000001");
	cr_assert_eq(st.devices[1].minor, 9);
	cr_assert_eq(st.devices[1].memory_total_bytes, 1024);
	cr_assert_eq(st.devices[1].device_id, 0x2335);
	cr_assert_eq(st.devices[1].subsys_device_id, 0x16c1, "pci merges field by field");
	cr_assert_eq(st.devices[0].memory_total_bytes, 85899345920ull);
}

Test(compile, no_topology_gives_one_flat_root)
{
	int rc = compile_str("p.yaml", HEAD TWO_DEVICES, NULL);

	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(st.num_roots, 1);
	cr_assert_str_eq(st.roots[0].id, "pci0000:00");
	cr_assert_eq(st.roots[0].numa_node, 0);
	cr_assert_eq(st.devices[0].root, 0);
	cr_assert_eq(st.devices[1].root, 0);
	cr_assert_eq(st.devices[1].numa_node, 0);
}

Test(compile, device_in_no_root_has_no_numa)
{
	int rc = compile_str("p.yaml", HEAD TWO_DEVICES
		"pcie_topology:\n"
		"  root_complexes:\n"
		"    - id: \"pci0000:00\"\n"
		"      numa_node: 0\n"
		"      devices: [\"0000:1a:00.0\"]\n", NULL);

	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(st.devices[1].root, -1);
	cr_assert_eq(st.devices[1].numa_node, -1);
}

Test(compile, gpu_count_cap)
{
	struct compile_opts o = { .gpu_count_cap = 1, .node_name = "node-a",
				  .mock_root = "/tmp/r", .fabric_init_delay_ms = 250 };
	int rc = compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, &o);

	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(st.num_devices, 1);
	cr_assert_eq(st.devices[0].index, 0);
	cr_assert_eq(st.num_roots, 2);
	cr_assert_str_eq(st.node_name, "node-a");
	cr_assert_str_eq(st.mock_root, "/tmp/r");
	cr_assert_str_eq(st.fabric.state_dir, "/tmp/r/fabric-state");
	cr_assert_eq(st.fabric.init_delay_ms, 250);

	/* a cap above the count changes nothing */
	state_free(&st);
	state_init(&st);
	o.gpu_count_cap = 5;
	cr_assert_eq(compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, &o), 0, "%s", err);
	cr_assert_eq(st.num_devices, 2);
}

Test(compile, driver_version_fallback)
{
	struct compile_opts o = { .driver_version = "535.1.2" };
	const char *yaml = "version: \"1.0\"\n"
			   "devices:\n"
			   "  - pci: {bus_id: \"0000:01:00.0\"}\n";

	expect_error("p.yaml", yaml, "p.yaml:1:1: system.driver_version: missing");
	cr_assert_eq(compile_str("p.yaml", yaml, &o), 0, "%s", err);
	cr_assert_str_eq(st.driver_version, "535.1.2");
}

Test(compile, fabric_and_nvlink)
{
	int rc = compile_str("p.yaml", HEAD
		"  fabric:\n"
		"    cluster_uuid: \"00000000-0000-0000-0000-000000000001\"\n"
		"    clique_id: 4\n"
		"    state: auto\n"
		TWO_DEVICES
		"nvlink:\n"
		"  links_per_gpu: 18\n"
		"  bandwidth_per_link_mbps: 26562\n", NULL);

	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(st.fabric.enabled);
	cr_assert_str_eq(st.fabric.cluster_uuid, "00000000-0000-0000-0000-000000000001");
	cr_assert_eq(st.fabric.clique_id, 4);
	cr_assert_eq(st.fabric.links_per_gpu, 18);
	cr_assert_eq(st.fabric.bandwidth_per_link_mbps, 26562);
}

Test(compile, profile_json_is_exact)
{
	cJSON *j, *devs, *v;

	cr_assert_eq(compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, NULL), 0, "%s", err);
	j = cJSON_Parse(st.profile_json);
	cr_assert_not_null(j, "profile_json is not JSON: %.200s", st.profile_json);
	devs = cJSON_GetObjectItemCaseSensitive(j, "devices");
	cr_assert(cJSON_IsArray(devs));
	cr_assert_eq(cJSON_GetArraySize(devs), 2);
	v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(j, "device_defaults"), "pci");
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(v, "device_id")->valuedouble, 0x233010DE);
	v = cJSON_GetObjectItemCaseSensitive(j, "version");
	cr_assert(cJSON_IsString(v), "a quoted scalar stays a string");
	cJSON_Delete(j);
	cr_assert(strstr(st.profile_json, "\"total_bytes\":85899345920"),
		  "integers are written exactly");
}

Test(compile, state_roundtrips_through_encode)
{
	struct state back;
	char *json = NULL, derr[256];
	size_t len;

	cr_assert_eq(compile_str("p.yaml", HEAD TWO_DEVICES TWO_ROOTS, NULL), 0, "%s", err);
	cr_assert_eq(state_encode(&st, &json, &len), 0);
	state_init(&back);
	cr_assert_eq(state_decode(json, len, &back, derr, sizeof(derr)), 0, "%s", derr);
	cr_assert_eq(back.num_devices, 2);
	cr_assert_str_eq(back.devices[1].bus_id, "0000:9a:00.0");
	state_free(&back);
	free(json);
}

/* ------------------------------------------------------------------ */
/* Errors: exact place and key.                                        */

Test(compile, empty_file)
{
	expect_error("empty.yaml", "", "empty.yaml:1:1: (document): empty profile");
	expect_error("empty.yaml", "# nothing\n", "empty.yaml:1:1: (document): empty profile");
}

Test(compile, malformed_yaml)
{
	expect_error("bad.yaml", "version: \"1.0\"\nsystem:\n  driver_version: [1, 2\n"
		     "devices: []\n", "bad.yaml:4:8: yaml: ");
}

Test(compile, top_level_not_a_mapping)
{
	expect_error("list.yaml", "- a\n- b\n", "list.yaml:1:1: (document): expected a mapping");
}

Test(compile, wrong_type)
{
	expect_error("t.yaml", HEAD TWO_DEVICES
		     "nvlink:\n"				/* 19 */
		     "  c2c_enabled: maybe\n",			/* 20 */
		     "t.yaml:20:16: nvlink.c2c_enabled: expected true or false, got 'maybe'");
	expect_error("t.yaml", HEAD
		     "devices:\n"				/* 14 */
		     "  - index: \"zero\"\n",			/* 15 */
		     "t.yaml:15:12: devices[0].index: expected an integer, got 'zero'");
	expect_error("t.yaml", HEAD
		     "devices: {a: 1}\n",			/* 14 */
		     "t.yaml:14:10: devices: expected a list");
}

Test(compile, pcie_gen_out_of_range)
{
	char yaml[4096];

	snprintf(yaml, sizeof(yaml), "%s", HEAD TWO_DEVICES);
	memcpy(strstr(yaml, "max_link_gen: 5"), "max_link_gen: 7", 15);
	expect_error("g.yaml", yaml,
		     "g.yaml:12:19: device_defaults.pcie.max_link_gen: 7 is out of range (1..6)");
	memcpy(strstr(yaml, "max_link_gen: 7"), "max_link_gen: 5", 15);
	memcpy(strstr(yaml, "max_link_width: 16"), "max_link_width: 12", 18);
	expect_error("g.yaml", yaml,
		     "g.yaml:13:21: device_defaults.pcie.max_link_width: invalid link width 12");
}

Test(compile, bus_id_traversal)
{
	expect_error("x.yaml", HEAD
		     "devices:\n"				/* 14 */
		     "  - index: 0\n"				/* 15 */
		     "    pci:\n"				/* 16 */
		     "      bus_id: \"../../etc\"\n",		/* 17 */
		     "x.yaml:17:15: devices[0].pci.bus_id: invalid PCI address '../../etc' "
		     "(want dddd:bb:dd.f)");
	expect_error("x.yaml", HEAD
		     "devices:\n"
		     "  - pci: {bus_id: \"0000:1a:00\"}\n",
		     "x.yaml:15:19: devices[0].pci.bus_id: invalid PCI address '0000:1a:00'");
}

Test(compile, root_id_and_uuid_traversal)
{
	expect_error("r.yaml", HEAD TWO_DEVICES
		     "pcie_topology:\n"				/* 19 */
		     "  root_complexes:\n"			/* 20 */
		     "    - id: \"../pci0000:00\"\n",		/* 21 */
		     "r.yaml:21:11: pcie_topology.root_complexes[0].id: invalid root complex id");
	expect_error("u.yaml", HEAD
		     "devices:\n"				/* 14 */
		     "  - uuid: \"GPU-../../x\"\n"		/* 15 */
		     "    pci: {bus_id: \"0000:1a:00.0\"}\n",
		     "u.yaml:15:11: devices[0].uuid: invalid GPU UUID 'GPU-../../x'");
}

Test(compile, duplicate_bdf)
{
	expect_error("d.yaml", HEAD
		     "devices:\n"				/* 14 */
		     "  - index: 0\n"				/* 15 */
		     "    pci: {bus_id: \"0000:1a:00.0\"}\n"	/* 16 */
		     "  - index: 1\n"				/* 17 */
		     "    pci: {bus_id: \"0000:1A:00.0\"}\n",	/* 18 */
		     "d.yaml:18:19: devices[1].pci.bus_id: duplicate PCI address '0000:1a:00.0'");
}

Test(compile, duplicate_index)
{
	expect_error("d.yaml", HEAD
		     "devices:\n"				/* 14 */
		     "  - index: 0\n"				/* 15 */
		     "    pci: {bus_id: \"0000:1a:00.0\"}\n"	/* 16 */
		     "  - index: 0\n"				/* 17 */
		     "    pci: {bus_id: \"0000:1b:00.0\"}\n",	/* 18 */
		     "d.yaml:");
	cr_assert(strstr(err, "duplicate device index 0"), "%s", err);
}

Test(compile, bdf_under_two_roots)
{
	expect_error("two.yaml", HEAD TWO_DEVICES
		     "pcie_topology:\n"				/* 19 */
		     "  root_complexes:\n"			/* 20 */
		     "    - id: \"pci0000:00\"\n"		/* 21 */
		     "      devices: [\"0000:1a:00.0\"]\n"	/* 22 */
		     "    - id: \"pci0001:00\"\n"		/* 23 */
		     "      devices: [\"0000:1a:00.0\"]\n",	/* 24 */
		     "two.yaml:24:17: pcie_topology.root_complexes[1].devices[0]: "
		     "'0000:1a:00.0' is already under root complex pci0000:00");
}

Test(compile, topology_bdf_not_a_device)
{
	expect_error("nd.yaml", HEAD TWO_DEVICES
		     "pcie_topology:\n"				/* 19 */
		     "  root_complexes:\n"			/* 20 */
		     "    - id: \"pci0000:00\"\n"		/* 21 */
		     "      devices: [\"0000:1a:00.0\", \"0000:3b:00.0\"]\n",	/* 22 */
		     "nd.yaml:22:33: pcie_topology.root_complexes[0].devices[1]: "
		     "'0000:3b:00.0' is not a device");
}

Test(compile, bdf_outside_root_bus_range)
{
	expect_error("rg.yaml", HEAD TWO_DEVICES
		     "pcie_topology:\n"				/* 19 */
		     "  root_complexes:\n"			/* 20 */
		     "    - id: \"pci0000:00\"\n"		/* 21 */
		     "      devices: [\"0000:1a:00.0\"]\n"	/* 22 */
		     "    - id: \"pci0000:80\"\n"		/* 23 */
		     "      devices: [\"0000:1a:00.0\"]\n",	/* 24 */
		     "rg.yaml:24:17: pcie_topology.root_complexes[1].devices[0]: ");
	expect_error("rg.yaml", HEAD TWO_DEVICES
		     "pcie_topology:\n"				/* 19 */
		     "  root_complexes:\n"			/* 20 */
		     "    - id: \"pci0000:80\"\n"		/* 21 */
		     "      devices: [\"0000:1a:00.0\"]\n",	/* 22 */
		     "rg.yaml:22:17: pcie_topology.root_complexes[0].devices[0]: "
		     "'0000:1a:00.0' is outside the bus range of pci0000:80");
}

Test(compile, numa_out_of_range)
{
	expect_error("n.yaml", HEAD TWO_DEVICES
		     "pcie_topology:\n"				/* 19 */
		     "  root_complexes:\n"			/* 20 */
		     "    - id: \"pci0000:00\"\n"		/* 21 */
		     "      numa_node: 1024\n",			/* 22 */
		     "n.yaml:22:18: pcie_topology.root_complexes[0].numa_node: 1024 is out of range (-1..1023)");
}

Test(compile, memory_must_be_positive)
{
	expect_error("m.yaml", HEAD
		     "devices:\n"				/* 14 */
		     "  - pci: {bus_id: \"0000:1a:00.0\"}\n"	/* 15 */
		     "    memory:\n"				/* 16 */
		     "      total_bytes: 0\n",			/* 17 */
		     "m.yaml:17:20: devices[0].memory.total_bytes: memory size must be greater than 0");
}

Test(compile, missing_required)
{
	expect_error("v.yaml", "system: {driver_version: \"1.2\"}\n"
		     "devices: [{pci: {bus_id: \"0000:01:00.0\"}}]\n",
		     "v.yaml:1:1: version: missing");
	expect_error("v.yaml", "version: \"1.0\"\nsystem: {driver_version: \"1.2\"}\n",
		     "v.yaml:1:1: devices: at least one device is required");
	expect_error("v.yaml", "version: \"1.0\"\nsystem: {driver_version: \"1.2\"}\n"
		     "devices: []\n",
		     "v.yaml:3:10: devices: at least one device is required");
}

Test(compile, too_many_devices)
{
	char *yaml = malloc(64 * 1024), *p;

	p = yaml + sprintf(yaml, "%s", HEAD "devices:\n");
	for (int i = 0; i <= STATE_MAX_DEVICES; i++)
		p += sprintf(p, "  - pci: {bus_id: \"0000:%02x:00.0\"}\n", i + 1);
	expect_error("many.yaml", yaml, "many.yaml:15:3: devices: 65 devices listed, at most 64");
	free(yaml);
}

static void capture_stderr(int *saved, char *path)
{
	int fd;

	fflush(stderr);
	*saved = dup(2);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	dup2(fd, 2);
	close(fd);
}

static void restore_stderr(int saved)
{
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
}

Test(compile, unknown_key_warns_not_fails)
{
	char dir[] = "/tmp/test_compile.XXXXXX", path[64];
	size_t len;
	char *out;
	int saved, rc;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/stderr", dir);
	capture_stderr(&saved, path);
	rc = compile_str("w.yaml", HEAD
			 "  thermal: {temperature_gpu_c: 30, frobnicate: 1}\n"	/* 14 */
			 TWO_DEVICES
			 "infiniband: {anything: [goes, here]}\n"
			 "extra_top: 1\n", NULL);
	restore_stderr(saved);
	out = read_file(path, &len);
	unlink(path);
	rmdir(dir);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(strstr(out, "w.yaml:14:36: device_defaults.thermal.frobnicate: unknown key"),
		  "stderr: %s", out);
	cr_assert(strstr(out, "extra_top: unknown key"), "stderr: %s", out);
	cr_assert_null(strstr(out, "infiniband"), "infiniband is a known block: %s", out);
	cr_assert_null(strstr(out, "temperature_gpu_c"), "%s", out);
	free(out);
}

Test(compile, shipped_profiles_have_no_unknown_keys)
{
	char dir[] = "/tmp/test_compile.XXXXXX", path[64], file[4096];
	size_t len;
	char *out, *yaml;
	int saved;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/stderr", dir);
	capture_stderr(&saved, path);
	for (size_t i = 0; i < sizeof(shipped) / sizeof(shipped[0]); i++) {
		profile_path(file, sizeof(file), shipped[i].name);
		yaml = read_file(file, &len);
		state_free(&st);
		state_init(&st);
		compile_profile(file, yaml, len, NULL, NULL, 0, NULL, &st, err, sizeof(err));
		free(yaml);
	}
	restore_stderr(saved);
	out = read_file(path, &len);
	unlink(path);
	rmdir(dir);
	cr_assert_eq(len, 0, "warnings: %s", out);
	free(out);
}

Test(compile, huge_input_refused)
{
	size_t len = 10u << 20;
	char *yaml = malloc(len + 1);

	memset(yaml, 'a', len);
	yaml[len] = '\0';
	cr_assert_eq(compile_profile("big.yaml", yaml, len, NULL, NULL, 0, NULL, &st,
				     err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "big.yaml:1:1: (document): profile too large"), "%s", err);
	free(yaml);
}

Test(compile, large_input_under_limit_handled)
{
	/* ~3 MB of one long list: parsed within the node bound or refused,
	 * never a crash. */
	size_t n = 1500000, len;
	char *yaml = malloc(2 * n + 64), *p = yaml;

	p += sprintf(p, "version: \"1.0\"\nx: [");
	for (size_t i = 0; i < n; i++) {
		*p++ = '1';
		*p++ = ',';
	}
	p += sprintf(p, "1]\n");
	len = (size_t)(p - yaml);
	cr_assert_eq(compile_profile("big.yaml", yaml, len, NULL, NULL, 0, NULL, &st,
				     err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "big.yaml:2:"), "%s", err);
	cr_assert(strstr(err, "more than"), "%s", err);
	free(yaml);
}

Test(compile, deep_nesting)
{
	char yaml[512];

	snprintf(yaml, sizeof(yaml), "version: \"1.0\"\nx: %.*s%.*s\n", 100,
		 "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
		 100,
		 "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
	/* the root mapping is level 1, so the 64th bracket is one too many */
	expect_error("deep.yaml", yaml, "deep.yaml:2:67: yaml: nesting deeper than 64 levels");
}

Test(compile, alias_refused)
{
	expect_error("a.yaml", "version: &v \"1.0\"\nsystem: {driver_version: *v}\n",
		     "a.yaml:2:26: yaml: aliases are not supported");
}

/* ------------------------------------------------------------------ */
/* Topology document.                                                  */

#define TOPO \
	"version: 1\n"					/* 1 */ \
	"domains:\n"					/* 2 */ \
	"- name: demo\n"				/* 3 */ \
	"  uuid: \"00000000-0000-0000-0000-0000000000ab\"\n"	/* 4 */ \
	"  cliques:\n"					/* 5 */ \
	"  - id: 0\n"					/* 6 */ \
	"    nodes: [node-a, node-b]\n"			/* 7 */ \
	"  - id: 7\n"					/* 8 */ \
	"    nodes: [node-c]\n"				/* 9 */

#define FABRIC_HEAD HEAD \
	"  fabric: {cluster_uuid: \"00000000-0000-0000-0000-000000000001\", clique_id: 0, state: auto}\n"

static int compile_topo(const char *node, const char *topo)
{
	struct compile_opts o = { .node_name = node };
	const char *yaml = FABRIC_HEAD TWO_DEVICES;

	return compile_profile("p.yaml", yaml, strlen(yaml), "topo.yaml", topo,
			       strlen(topo), &o, &st, err, sizeof(err));
}

Test(compile, topology_clique_lookup)
{
	cr_assert_eq(compile_topo("node-c", TOPO), 0, "%s", err);
	cr_assert_str_eq(st.fabric.cluster_uuid, "00000000-0000-0000-0000-0000000000ab");
	cr_assert_eq(st.fabric.clique_id, 7);
	cr_assert_not_null(st.topology_doc);
	cr_assert_eq(st.topology_len, strlen(TOPO));
	cr_assert_str_eq(st.topology_doc, TOPO);
}

Test(compile, topology_node_not_listed_keeps_profile)
{
	cr_assert_eq(compile_topo("elsewhere", TOPO), 0, "%s", err);
	cr_assert_str_eq(st.fabric.cluster_uuid, "00000000-0000-0000-0000-000000000001");
	cr_assert_eq(st.fabric.clique_id, 0);
	cr_assert_not_null(st.topology_doc, "the document is still staged");
}

Test(compile, topology_errors_name_the_topology_file)
{
	cr_assert_eq(compile_topo("node-a", "version: 1\ndomains:\n- cliques:\n  - id: -3\n"),
		     -EINVAL);
	cr_assert(strstr(err, "topo.yaml:4:9: domains[0].cliques[0].id: "), "%s", err);
	cr_assert_eq(compile_topo("node-a", "domains: [\n"), -EINVAL);
	cr_assert_eq(strncmp(err, "topo.yaml:2:1: yaml: ", 21), 0, "%s", err);
	cr_assert_null(st.topology_doc, "a failed compile leaves the output alone");
}

Test(compile, empty_topology_is_none)
{
	cr_assert_eq(compile_topo("node-a", "\n# nothing\n"), 0, "%s", err);
	cr_assert_null(st.topology_doc);
}
