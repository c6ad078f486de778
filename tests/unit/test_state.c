/* The compiled state: JSON round trip, what state_decode refuses, and the
 * shared validators. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <cjson/cJSON.h>

#include "ipc/state.h"

static char err[256];
static struct state *a, *b;

static void setup(void)
{
	a = calloc(1, sizeof(*a));
	b = calloc(1, sizeof(*b));
	cr_assert(a && b);
	state_init(a);
	state_init(b);
}

static void teardown(void)
{
	state_free(a);
	state_free(b);
	free(a);
	free(b);
}

TestSuite(state, .init = setup, .fini = teardown);

static void populate(struct state *s)
{
	state_free(s);
	state_init(s);
	s->generation = (1ull << 60) + 12345;	/* > 2^53: not exact as a double */
	snprintf(s->node_name, sizeof(s->node_name), "gpu-node-7");
	snprintf(s->mock_root, sizeof(s->mock_root), "/var/lib/nvml-mock");
	snprintf(s->driver_version, sizeof(s->driver_version), "550.54.15");
	snprintf(s->nvml_version, sizeof(s->nvml_version), "12.550.54.15");
	snprintf(s->cuda_version, sizeof(s->cuda_version), "12.4");
	s->cores_per_numa = 56;
	s->num_roots = 2;
	snprintf(s->roots[0].id, sizeof(s->roots[0].id), "pci0000:00");
	s->roots[0].numa_node = 0;
	snprintf(s->roots[0].cpu_affinity, sizeof(s->roots[0].cpu_affinity), "0-55");
	snprintf(s->roots[1].id, sizeof(s->roots[1].id), "pci0000:80");
	s->roots[1].numa_node = 1;
	s->roots[1].cpu_affinity[0] = '\0';
	s->num_devices = 3;
	for (int i = 0; i < s->num_devices; i++) {
		struct state_device *d = &s->devices[i];
		d->index = i;
		d->minor = i + 10;
		snprintf(d->uuid, sizeof(d->uuid), "GPU-%08x-1111-2222-3333-44445555666%d", 0xabc00 + i, i);
		snprintf(d->serial, sizeof(d->serial), "165%010d", i);
		snprintf(d->name, sizeof(d->name), "NVIDIA H100 80GB HBM3 \"quoted\" \\ %d", i);
		snprintf(d->architecture, sizeof(d->architecture), "Hopper");
		snprintf(d->bus_id, sizeof(d->bus_id), "0000:%02x:00.0", 0x18 + i * 0x20);
		d->vendor_id = 0x10de;
		d->device_id = 0x2330;
		d->subsys_vendor_id = 0x10de;
		d->subsys_device_id = 0xffff;
		d->numa_node = i == 2 ? -1 : i;
		d->root = i == 2 ? -1 : i;
		d->pcie.max_gen = 5;
		d->pcie.max_width = 16;
		d->pcie.cur_gen = 4 - i;
		d->pcie.cur_width = 8;
		d->memory_total_bytes = 85520809984ull + (uint64_t)i;
		d->bar1_total_bytes = (1ull << 63) + 1;	/* > 2^53 */
	}
	s->fabric.enabled = true;
	snprintf(s->fabric.state_dir, sizeof(s->fabric.state_dir), "/var/lib/nvml-mock/fabric");
	s->fabric.init_delay_ms = 2500;
	snprintf(s->fabric.cluster_uuid, sizeof(s->fabric.cluster_uuid),
		 "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
	s->fabric.clique_id = 4000000000u;
	s->fabric.links_per_gpu = 18;
	s->fabric.bandwidth_per_link_mbps = 26562;
	s->topology_doc = strdup("apiVersion: v1\nkind: Topology\nnodes:\n  - a\n");
	s->topology_len = strlen(s->topology_doc);
	s->profile_json = strdup("{\"name\":\"h100\",\"gpus\":[1,2,3],\"nested\":{\"x\":true}}");
}

static char *encode(const struct state *s)
{
	char *out = NULL;
	size_t len = 0;

	cr_assert_eq(state_encode(s, &out, &len), 0);
	cr_assert_not_null(out);
	cr_assert_eq(len, strlen(out));
	return out;
}

static int decode_str(const char *json, struct state *s)
{
	state_free(s);
	err[0] = '\0';
	return state_decode(json, strlen(json), s, err, sizeof(err));
}

Test(state, round_trip)
{
	char *json;

	populate(a);
	json = encode(a);
	cr_assert_eq(decode_str(json, b), 0, "%s", err);

	cr_assert_eq(b->generation, a->generation);
	cr_assert_str_eq(b->node_name, a->node_name);
	cr_assert_str_eq(b->mock_root, a->mock_root);
	cr_assert_str_eq(b->driver_version, a->driver_version);
	cr_assert_str_eq(b->nvml_version, a->nvml_version);
	cr_assert_str_eq(b->cuda_version, a->cuda_version);
	cr_assert_eq(b->cores_per_numa, 56);
	cr_assert_eq(b->num_roots, a->num_roots);
	for (int i = 0; i < a->num_roots; i++) {
		cr_assert_str_eq(b->roots[i].id, a->roots[i].id);
		cr_assert_eq(b->roots[i].numa_node, a->roots[i].numa_node);
		cr_assert_str_eq(b->roots[i].cpu_affinity, a->roots[i].cpu_affinity);
	}
	cr_assert_eq(b->num_devices, a->num_devices);
	for (int i = 0; i < a->num_devices; i++) {
		const struct state_device *x = &a->devices[i], *y = &b->devices[i];
		cr_assert_eq(y->index, x->index);
		cr_assert_eq(y->minor, x->minor);
		cr_assert_str_eq(y->uuid, x->uuid);
		cr_assert_str_eq(y->serial, x->serial);
		cr_assert_str_eq(y->name, x->name);
		cr_assert_str_eq(y->architecture, x->architecture);
		cr_assert_str_eq(y->bus_id, x->bus_id);
		cr_assert_eq(y->vendor_id, x->vendor_id);
		cr_assert_eq(y->device_id, x->device_id);
		cr_assert_eq(y->subsys_vendor_id, x->subsys_vendor_id);
		cr_assert_eq(y->subsys_device_id, x->subsys_device_id);
		cr_assert_eq(y->numa_node, x->numa_node);
		cr_assert_eq(y->root, x->root);
		cr_assert_eq(y->pcie.max_gen, x->pcie.max_gen);
		cr_assert_eq(y->pcie.max_width, x->pcie.max_width);
		cr_assert_eq(y->pcie.cur_gen, x->pcie.cur_gen);
		cr_assert_eq(y->pcie.cur_width, x->pcie.cur_width);
		cr_assert_eq(y->memory_total_bytes, x->memory_total_bytes);
		cr_assert_eq(y->bar1_total_bytes, x->bar1_total_bytes);
	}
	cr_assert_eq(b->fabric.enabled, true);
	cr_assert_str_eq(b->fabric.state_dir, a->fabric.state_dir);
	cr_assert_eq(b->fabric.init_delay_ms, 2500);
	cr_assert_str_eq(b->fabric.cluster_uuid, a->fabric.cluster_uuid);
	cr_assert_eq(b->fabric.clique_id, 4000000000u);
	cr_assert_eq(b->fabric.links_per_gpu, 18);
	cr_assert_eq(b->fabric.bandwidth_per_link_mbps, 26562);
	cr_assert_not_null(b->topology_doc);
	cr_assert_str_eq(b->topology_doc, a->topology_doc);
	cr_assert_eq(b->topology_len, a->topology_len);

	/* the profile is re-serialised: compare as JSON */
	cr_assert_not_null(b->profile_json);
	cJSON *p1 = cJSON_Parse(a->profile_json), *p2 = cJSON_Parse(b->profile_json);
	cr_assert(cJSON_Compare(p1, p2, 1));
	cJSON_Delete(p1);
	cJSON_Delete(p2);

	/* encoding the decoded state gives the same bytes */
	char *again = encode(b);
	cr_assert_str_eq(again, json);
	free(again);
	free(json);
}

Test(state, empty_round_trip)
{
	char *json = encode(a);

	cr_assert_eq(decode_str(json, b), 0, "%s", err);
	cr_assert_eq(b->num_devices, 0);
	cr_assert_eq(b->num_roots, 0);
	cr_assert_null(b->topology_doc);
	cr_assert_eq(b->topology_len, 0);
	cr_assert_null(b->profile_json);
	cr_assert_str_eq(b->mock_root, "/var/lib/nvml-mock");
	free(json);
}

Test(state, full_device_table_round_trips)
{
	char *json;

	populate(a);
	a->num_devices = STATE_MAX_DEVICES;
	for (int i = 0; i < STATE_MAX_DEVICES; i++) {
		a->devices[i] = a->devices[0];
		a->devices[i].index = i;
		snprintf(a->devices[i].bus_id, sizeof(a->devices[i].bus_id), "0000:%02x:%02x.%d",
			 i / 8, i % 32, i % 8);
	}
	json = encode(a);
	cr_assert_eq(decode_str(json, b), 0, "%s", err);
	cr_assert_eq(b->num_devices, STATE_MAX_DEVICES);
	cr_assert_str_eq(b->devices[63].bus_id, a->devices[63].bus_id);
	free(json);
}

Test(state, encode_refuses_bad_profile_json)
{
	char *out = NULL;
	size_t len;

	a->profile_json = strdup("{not json");
	cr_assert_eq(state_encode(a, &out, &len), -EINVAL);
}

/* Encode a populated state, let fn edit the JSON tree, and decode it. */
static int decode_edited(void (*fn)(cJSON *root))
{
	char *json, *edited;
	cJSON *root;
	int r;

	populate(a);
	json = encode(a);
	root = cJSON_Parse(json);
	cr_assert_not_null(root);
	fn(root);
	edited = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	free(json);
	r = decode_str(edited, b);
	free(edited);
	return r;
}

static void expect_reject(void (*fn)(cJSON *root), const char *what)
{
	int r = decode_edited(fn);

	cr_assert_eq(r, -EINVAL, "%s accepted", what);
	cr_assert_neq(err[0], '\0', "%s: no message", what);
	/* nothing heap-owned is left behind on failure */
	cr_assert_null(b->topology_doc, "%s", what);
	cr_assert_null(b->profile_json, "%s", what);
}

static cJSON *dev(cJSON *root, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "devices"), i);
}

static void ed_nothing(cJSON *r) { (void)r; }
static void ed_version2(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(r, "state_version", cJSON_CreateNumber(2));
}
static void ed_version_missing(cJSON *r) { cJSON_DeleteItemFromObjectCaseSensitive(r, "state_version"); }
static void ed_version_string(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(r, "state_version", cJSON_CreateString("1"));
}
static void ed_bus_upper(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(dev(r, 1), "bus_id", cJSON_CreateString("0000:3A:00.0"));
}
static void ed_bus_garbage(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(dev(r, 0), "bus_id", cJSON_CreateString("../../etc"));
}
static void ed_bus_too_long(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(dev(r, 0), "bus_id",
					       cJSON_CreateString("0000:18:00.0000000000000"));
}
static void ed_root_high(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(dev(r, 0), "root", cJSON_CreateNumber(2));
}
static void ed_root_low(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(dev(r, 0), "root", cJSON_CreateNumber(-2));
}
static void ed_root_id(cJSON *r)
{
	cJSON *root0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "roots"), 0);
	cJSON_ReplaceItemInObjectCaseSensitive(root0, "id", cJSON_CreateString("pci0000:0"));
}
static void ed_too_many_devices(cJSON *r)
{
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(r, "devices");
	while (cJSON_GetArraySize(arr) <= STATE_MAX_DEVICES)
		cJSON_AddItemToArray(arr, cJSON_Duplicate(cJSON_GetArrayItem(arr, 0), 1));
}
static void ed_too_many_roots(cJSON *r)
{
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(r, "roots");
	while (cJSON_GetArraySize(arr) <= STATE_MAX_ROOTS)
		cJSON_AddItemToArray(arr, cJSON_Duplicate(cJSON_GetArrayItem(arr, 0), 1));
}
static void ed_devices_object(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(r, "devices", cJSON_CreateObject());
}
static void ed_device_not_object(cJSON *r)
{
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(r, "devices"), cJSON_CreateNumber(1));
}
static void ed_missing_field(cJSON *r) { cJSON_DeleteItemFromObjectCaseSensitive(dev(r, 0), "uuid"); }
static void ed_generation_number(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(r, "generation", cJSON_CreateNumber(5));
}
static void ed_generation_junk(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(r, "generation", cJSON_CreateString("12abc"));
}
static void ed_generation_empty(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(r, "generation", cJSON_CreateString(""));
}
static void ed_generation_overflow(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(r, "generation",
					       cJSON_CreateString("18446744073709551616"));
}
static void ed_generation_negative(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(r, "generation", cJSON_CreateString("-1"));
}
static void ed_u16_range(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(dev(r, 0), "vendor_id", cJSON_CreateNumber(65536));
}
static void ed_u32_negative(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "fabric"),
					       "clique_id", cJSON_CreateNumber(-1));
}
static void ed_bool_type(cJSON *r)
{
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "fabric"),
					       "enabled", cJSON_CreateNumber(1));
}
static void ed_fabric_missing(cJSON *r) { cJSON_DeleteItemFromObjectCaseSensitive(r, "fabric"); }
static void ed_string_too_long(cJSON *r)
{
	char big[200];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cJSON_ReplaceItemInObjectCaseSensitive(r, "node_name", cJSON_CreateString(big));
}

Test(state, edited_baseline_decodes)
{
	cr_assert_eq(decode_edited(ed_nothing), 0, "%s", err);
}

Test(state, rejects_bad_json)
{
	cr_assert_eq(decode_str("", b), -EINVAL);
	cr_assert_eq(decode_str("{", b), -EINVAL);
	cr_assert_eq(decode_str("{\"state_version\":1,", b), -EINVAL);
	cr_assert_eq(decode_str("[]", b), -EINVAL);
	cr_assert_eq(decode_str("null", b), -EINVAL);
	cr_assert_eq(decode_str("{}", b), -EINVAL);
	cr_assert_neq(err[0], '\0');
}

Test(state, rejects_wrong_state_version)
{
	expect_reject(ed_version2, "state_version 2");
	expect_reject(ed_version_missing, "no state_version");
	expect_reject(ed_version_string, "state_version \"1\"");
}

Test(state, rejects_invalid_bus_id)
{
	expect_reject(ed_bus_upper, "uppercase bus_id");
	expect_reject(ed_bus_garbage, "path as bus_id");
	expect_reject(ed_bus_too_long, "overlong bus_id");
}

Test(state, rejects_root_index_out_of_range)
{
	expect_reject(ed_root_high, "root == num_roots");
	expect_reject(ed_root_low, "root -2");
	expect_reject(ed_root_id, "bad root id");
}

Test(state, rejects_too_many_entries)
{
	expect_reject(ed_too_many_devices, "65 devices");
	expect_reject(ed_too_many_roots, "17 roots");
	expect_reject(ed_devices_object, "devices as an object");
	expect_reject(ed_device_not_object, "a device that is a number");
}

Test(state, rejects_bad_fields)
{
	expect_reject(ed_missing_field, "missing uuid");
	expect_reject(ed_generation_number, "generation as a number");
	expect_reject(ed_generation_junk, "generation 12abc");
	expect_reject(ed_generation_empty, "generation \"\"");
	expect_reject(ed_generation_overflow, "generation 2^64");
	expect_reject(ed_generation_negative, "generation -1");
	expect_reject(ed_u16_range, "vendor_id 65536");
	expect_reject(ed_u32_negative, "clique_id -1");
	expect_reject(ed_bool_type, "enabled 1");
	expect_reject(ed_fabric_missing, "no fabric");
	expect_reject(ed_string_too_long, "199-char node_name");
}

Test(state, decode_does_not_read_past_len)
{
	char *json, *buf;
	size_t n;

	populate(a);
	json = encode(a);
	n = strlen(json);
	/* exact-size buffer without a NUL: decode must go by len */
	buf = malloc(n);
	memcpy(buf, json, n);
	cr_assert_eq(state_decode(buf, n, b, err, sizeof(err)), 0, "%s", err);
	state_free(b);
	cr_assert_eq(state_decode(buf, n - 1, b, err, sizeof(err)), -EINVAL);
	free(buf);
	free(json);
}

/* ---- validators ---- */

Test(valid, bdf)
{
	cr_assert(state_valid_bdf("0000:00:00.0"));
	cr_assert(state_valid_bdf("0000:1a:00.0"));
	cr_assert(state_valid_bdf("ffff:ff:1f.7"));
	cr_assert(state_valid_bdf("0001:c0:1e.3"));
	cr_assert_not(state_valid_bdf(NULL));
	cr_assert_not(state_valid_bdf(""));
	cr_assert_not(state_valid_bdf("0000:1A:00.0"), "uppercase hex");
	cr_assert_not(state_valid_bdf("ABCD:00:00.0"), "uppercase domain");
	cr_assert_not(state_valid_bdf("0000:00:20.0"), "device 0x20");
	cr_assert_not(state_valid_bdf("0000:00:ff.0"), "device 0xff");
	cr_assert_not(state_valid_bdf("0000:00:00.8"), "function 8");
	cr_assert_not(state_valid_bdf("0000:00:00.a"), "function a");
	cr_assert_not(state_valid_bdf("00:00.0"), "no domain");
	cr_assert_not(state_valid_bdf("0000:00:00.00"), "too long");
	cr_assert_not(state_valid_bdf("0000-00:00.0"));
	cr_assert_not(state_valid_bdf("0000:00-00.0"));
	cr_assert_not(state_valid_bdf("0000:00:00-0"));
	cr_assert_not(state_valid_bdf("0000:0g:00.0"));
	cr_assert_not(state_valid_bdf(" 000:00:00.0"));
}

Test(valid, root_id)
{
	cr_assert(state_valid_root_id("pci0000:00"));
	cr_assert(state_valid_root_id("pci0001:8a"));
	cr_assert_not(state_valid_root_id(NULL));
	cr_assert_not(state_valid_root_id(""));
	cr_assert_not(state_valid_root_id("pci0000:0"));
	cr_assert_not(state_valid_root_id("pci0000:000"));
	cr_assert_not(state_valid_root_id("pci0000:8A"));
	cr_assert_not(state_valid_root_id("PCI0000:00"));
	cr_assert_not(state_valid_root_id("pcx0000:00"));
	cr_assert_not(state_valid_root_id("pci0000-00"));
	cr_assert_not(state_valid_root_id("pci/../:00"));
}

Test(valid, path_component)
{
	char s[300];

	cr_assert(state_valid_path_component("nvidia0"));
	cr_assert(state_valid_path_component("..."));
	cr_assert(state_valid_path_component(".hidden"));
	cr_assert(state_valid_path_component("a..b"));
	cr_assert_not(state_valid_path_component(NULL));
	cr_assert_not(state_valid_path_component(""));
	cr_assert_not(state_valid_path_component("."));
	cr_assert_not(state_valid_path_component(".."));
	cr_assert_not(state_valid_path_component("a/b"));
	cr_assert_not(state_valid_path_component("/"));
	cr_assert_not(state_valid_path_component("../x"));
	memset(s, 'n', 255);
	s[255] = '\0';
	cr_assert(state_valid_path_component(s), "255 chars is the limit");
	s[255] = 'n';
	s[256] = '\0';
	cr_assert_not(state_valid_path_component(s), "256 chars");
}
