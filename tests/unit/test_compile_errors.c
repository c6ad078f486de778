/* Profile compiler: every bad input is refused with file:line:col and the
 * key, unknown keys are warnings, and hostile inputs stay bounded. */
#include "tests/unit/compile_fixture.h"

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
			 "infiniband: {enabled: false, anything: [goes, here]}\n"
			 "extra_top: 1\n", NULL);
	restore_stderr(saved);
	out = read_file(path, &len);
	unlink(path);
	rmdir(dir);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(strstr(out, "w.yaml:14:36: device_defaults.thermal.frobnicate: unknown key"),
		  "stderr: %s", out);
	cr_assert(strstr(out, "extra_top: unknown key"), "stderr: %s", out);
	cr_assert(strstr(out, "infiniband.anything: unknown key"), "stderr: %s", out);
	cr_assert_null(strstr(out, "infiniband.enabled"), "%s", out);
	cr_assert_null(strstr(out, "temperature_gpu_c"), "%s", out);
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

/* The reference schema is 1.x (issue 20: "99.0" compiled without a word). */
Test(compile, schema_version)
{
	static const struct {
		const char *v, *want;
	} bad[] = {
		{ "\"99.0\"", "v.yaml:1:10: version: unknown schema version '99.0': this compiler "
			      "reads the reference schema 1.x" },
		{ "\"2\"", "v.yaml:1:10: version: unknown schema version '2'" },
		{ "\"0.9\"", "v.yaml:1:10: version: unknown schema version '0.9'" },
		{ "\"1.x\"", "v.yaml:1:10: version: want MAJOR.MINOR (\"1.0\"), got 1.x" },
		{ "\" 1.0\"", "v.yaml:1:10: version: want MAJOR.MINOR" },
		{ "\"1.0.0\"", "v.yaml:1:10: version: want MAJOR.MINOR" },
		{ "[1]", "v.yaml:1:10: version: expected a scalar" },
	};
	char yaml[4096], dir[] = "/tmp/test_compile.XXXXXX", path[64], *out;
	size_t len;
	int saved, rc;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(yaml, sizeof(yaml), "version: %s%s", bad[i].v,
			 strchr(HEAD TWO_DEVICES, '\n'));
		expect_error("v.yaml", yaml, bad[i].want);
	}
	/* 1, 1.0: quiet; a newer minor compiles with a warning by name */
	snprintf(yaml, sizeof(yaml), "version: 1%s", strchr(HEAD TWO_DEVICES, '\n'));
	cr_assert_eq(compile_str("v.yaml", yaml, NULL), 0, "%s", err);
	state_free(&st);	/* compiled again below */
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/stderr", dir);
	capture_stderr(&saved, path);
	snprintf(yaml, sizeof(yaml), "version: \"1.3\"%s", strchr(HEAD TWO_DEVICES, '\n'));
	rc = compile_str("v.yaml", yaml, NULL);
	restore_stderr(saved);
	out = read_file(path, &len);
	unlink(path);
	rmdir(dir);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(strstr(out, "v.yaml:1:10: version: '1.3' is newer than the 1.0"), "stderr: %s", out);
	free(out);
}

/* A cpu_affinity naming CPUs no kernel can have is refused where it is
 * written (issue 20: it compiled and failed only in pcibus's Stage). */
Test(compile, cpu_affinity_beyond_any_kernel)
{
	static const char *const bad[] = { "0-99999999999", "8192", "0-8192", "5-3", "1,,2", "-1" };
	char yaml[4096];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(yaml, sizeof(yaml), "%s%s"
			 "pcie_topology:\n"				/* 19 */
			 "  root_complexes:\n"				/* 20 */
			 "    - id: \"pci0000:00\"\n"			/* 21 */
			 "      cpu_affinity: \"%s\"\n"			/* 22 */
			 "      devices: [\"0000:1a:00.0\"]\n",		/* 23 */
			 HEAD, TWO_DEVICES, bad[i]);
		expect_error("a.yaml", yaml,
			     "a.yaml:22:21: pcie_topology.root_complexes[0].cpu_affinity: ");
	}
	snprintf(yaml, sizeof(yaml), "%s%s%s", HEAD, TWO_DEVICES,
		 "pcie_topology:\n  root_complexes:\n    - id: \"pci0000:00\"\n"
		 "      cpu_affinity: \"0-55,112-167,8191\"\n      devices: [\"0000:1a:00.0\"]\n");
	cr_assert_eq(compile_str("a.yaml", yaml, NULL), 0, "%s", err);
}

/* The shipped H100 profile with the cpu_affinity. */
Test(compile, cpu_affinity_in_h100)
{
	char path[512], *yaml, *at, *big;
	size_t len;
	int rc;

	profile_path(path, sizeof(path), "h100");
	yaml = read_file(path, &len);
	at = strstr(yaml, "cpu_affinity: \"0-55,112-167\"");
	cr_assert_not_null(at);
	big = malloc(len + 64);
	snprintf(big, len + 64, "%.*scpu_affinity: \"0-99999999999\"%s", (int)(at - yaml), yaml,
		 at + strlen("cpu_affinity: \"0-55,112-167\""));
	rc = compile_str("h100.yaml", big, NULL);
	cr_assert_eq(rc, -EINVAL, "compiled");
	cr_assert(strstr(err, "cpu_affinity: CPU list '0-99999999999'"), "%s", err);
	free(big);
	free(yaml);
}
