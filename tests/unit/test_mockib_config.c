/* mock-ib's configuration loading: the worker's JSON under --host-root,
 * and the errors that name the file and the reason. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "workers/ib/mockib/mockib.h"

static char root[64], err[512], node[STATE_NAME_MAX];
static struct state_ib *ib, *back;

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/mockib-cfg.XXXXXX");
	cr_assert(mkdtemp(root));
	ib = calloc(1, sizeof(*ib));
	back = calloc(1, sizeof(*back));
	ib->enabled = true;
	snprintf(ib->hca_type, sizeof(ib->hca_type), "MT4129");
	snprintf(ib->link_layer, sizeof(ib->link_layer), "InfiniBand");
	snprintf(ib->socket, sizeof(ib->socket), "/run/mock-ib.sock");
	snprintf(ib->peers, sizeof(ib->peers), "10.0.0.2,10.0.0.3:19000");
	snprintf(ib->listen, sizeof(ib->listen), "0.0.0.0");
	ib->tcp_port = 18515;
	ib->leaf_ports = 32;
	ib->spines = 2;
	ib->num_hcas = 2;
	for (int i = 0; i < 2; i++) {
		ib->hcas[i].index = i;
		snprintf(ib->hcas[i].name, sizeof(ib->hcas[i].name), "mlx5_%d", i);
		snprintf(ib->hcas[i].bus_id, sizeof(ib->hcas[i].bus_id), "0000:1%d:00.0", i);
		ib->hcas[i].node_guid = 0xa088c20300ab0000ull + 2u * (unsigned)i;
		ib->hcas[i].lid = 0x101 + (unsigned)i;
		ib->hcas[i].port_state = 4;
		ib->hcas[i].phys_state = 5;
		ib->hcas[i].counters[0] = 12345678901ull;
	}
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
	free(ib);
	free(back);
}

TestSuite(config, .init = setup, .fini = teardown);

static void write_file(const char *rel, const char *data, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	cr_assert(f = fopen(path, "w"));
	cr_assert_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

Test(config, loads_the_worker_json_under_the_host_root)
{
	char *json, *raw;
	size_t len, rlen;

	cr_assert_eq(state_ib_encode("node-7", ib, &json, &len), 0);
	write_file("/mock-ib.json", json, len);
	cr_assert_eq(mib_config_load(root, "/mock-ib.json", node, back, &raw, &rlen, err,
				     sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(node, "node-7");
	cr_assert_eq(back->num_hcas, 2);
	cr_assert_eq(back->hcas[1].node_guid, ib->hcas[1].node_guid);
	cr_assert_eq(back->hcas[0].counters[0], 12345678901ull);
	cr_assert_str_eq(back->peers, ib->peers);
	cr_assert_str_eq(back->socket, "/run/mock-ib.sock");
	cr_assert_eq(back->tcp_port, 18515);
	/* The raw bytes are the REGISTER payload, unchanged. */
	cr_assert_eq(rlen, len);
	cr_assert_eq(memcmp(raw, json, len), 0);
	free(raw);
	free(json);
}

Test(config, missing_file_names_the_full_path)
{
	cr_assert_eq(mib_config_load(root, "/nope.json", node, back, NULL, NULL, err, sizeof(err)),
		     -ENOENT);
	cr_assert(strstr(err, root) && strstr(err, "/nope.json") && strstr(err, "No such file"),
		  "%s", err);
}

Test(config, garbage_and_missing_node_are_refused)
{
	char *json;
	size_t len;

	write_file("/bad.json", "{not json", 9);
	cr_assert_eq(mib_config_load(root, "/bad.json", node, back, NULL, NULL, err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "/bad.json") && strstr(err, "JSON"), "%s", err);
	cr_assert_eq(state_ib_encode("", ib, &json, &len), 0);
	write_file("/anon.json", json, len);
	free(json);
	cr_assert_eq(mib_config_load(root, "/anon.json", node, back, NULL, NULL, err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "node_name"), "%s", err);
}

Test(config, a_directory_is_not_a_config)
{
	char dir[128];

	snprintf(dir, sizeof(dir), "%s/d", root);
	cr_assert_eq(mkdir(dir, 0755), 0);
	cr_assert_eq(mib_config_load(root, "/d", node, back, NULL, NULL, err, sizeof(err)),
		     -EINVAL);
}
