/* Profile compiler: reference-schema YAML -> struct state.
 *
 * Two passes over the parsed tree: first a schema walk (one key table per
 * block) that warns about unknown keys and rejects wrongly typed values,
 * then extraction of what struct state carries, with range and path
 * checks.  Nothing is written to *out unless everything succeeded, so the
 * caller's last good state stays in force. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "ipc/log.h"
#include "supervisor/compile.h"
#include "supervisor/yaml_tree.h"

/* The file source caps what it reads; the compiler refuses more anyway so
 * a direct caller cannot make it build a huge tree. */
#define COMPILE_MAX_INPUT (4u << 20)
#define KEY_PATH_MAX 192
#define DEFAULT_MOCK_ROOT "/var/lib/nvml-mock"

struct cctx {
	const char *file;
	char *err;
	size_t errlen;
};

static int cfail(struct cctx *c, const struct ynode *at, const char *path,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int cfail(struct cctx *c, const struct ynode *at, const char *path,
		 const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "%s:%d:%d: %s: %s", c->file,
			 at ? at->line : 1, at ? at->col : 1,
			 *path ? path : "(document)", why);
	return -EINVAL;
}

static void join_key(char *dst, const char *base, const char *key)
{
	snprintf(dst, KEY_PATH_MAX, "%s%s%.64s", base, *base ? "." : "", key);
}

static void join_index(char *dst, const char *base, size_t i)
{
	snprintf(dst, KEY_PATH_MAX, "%s[%zu]", base, i);
}

static const char *text(const struct ynode *n)
{
	static const char *const kinds[] = {
		[YNODE_MAP] = "<mapping>", [YNODE_SEQ] = "<sequence>" };

	if (!n)
		return "<missing>";
	return n->kind == YNODE_SCALAR ? n->str : kinds[n->kind];
}

/* ------------------------------------------------------------------ */
/* Schema: one key table per block.                                    */

enum ftype { F_END, F_STR, F_INT, F_UINT, F_BOOL, F_FLOAT, F_MAP, F_SEQ, F_ANY };

struct field {
	const char *key;
	enum ftype type;
	enum ftype elem;		/* F_SEQ: element type */
	const struct field *sub;	/* F_MAP / F_SEQ of F_MAP: the block;
					 * on the F_END row: table it extends */
};

#define S(k)		{ k, F_STR, F_END, NULL }
#define I(k)		{ k, F_INT, F_END, NULL }
#define U(k)		{ k, F_UINT, F_END, NULL }
#define B(k)		{ k, F_BOOL, F_END, NULL }
#define FL(k)		{ k, F_FLOAT, F_END, NULL }
#define ANY(k)		{ k, F_ANY, F_END, NULL }
#define M(k, t)		{ k, F_MAP, F_END, t }
#define SEQ(k, e)	{ k, F_SEQ, e, NULL }
#define SEQM(k, t)	{ k, F_SEQ, F_MAP, t }
#define END		{ NULL, F_END, F_END, NULL }
#define EXTENDS(t)	{ NULL, F_END, F_END, t }

static const struct field cc_f[] = { I("major"), I("minor"), END };
static const struct field inforom_f[] = {
	S("image_version"), S("oem_object"), S("ecc_object"), S("pwr_object"), END };
static const struct field memory_f[] = {
	U("total_bytes"), U("reserved_bytes"), U("free_bytes"), U("used_bytes"),
	I("memory_bus_width"), END };
static const struct field bar1_f[] = {
	U("total_bytes"), U("free_bytes"), U("used_bytes"), END };
static const struct field pci_f[] = {
	U("device_id"), U("subsystem_id"), S("bus_id"), END };
static const struct field pcie_f[] = {
	I("max_link_gen"), I("current_link_gen"), I("max_link_width"),
	I("current_link_width"), U("replay_counter"), U("tx_throughput_kbps"),
	U("rx_throughput_kbps"), END };
static const struct field power_f[] = {
	B("management_supported"), S("management_mode"), U("default_limit_mw"),
	U("enforced_limit_mw"), U("min_limit_mw"), U("max_limit_mw"),
	U("current_draw_mw"), S("power_state"), U("total_energy_consumption_mj"), END };
static const struct field thermal_f[] = {
	I("temperature_gpu_c"), I("temperature_memory_c"), I("shutdown_threshold_c"),
	I("slowdown_threshold_c"), I("max_operating_c"), I("target_temperature_c"), END };
static const struct field fan_f[] = {
	I("count"), S("speed_percent"), S("target_speed_percent"), END };
static const struct field clocks_f[] = {
	I("graphics_current"), I("graphics_max"), I("graphics_app"),
	I("graphics_app_default"), I("sm_current"), I("sm_max"),
	I("memory_current"), I("memory_max"), I("memory_app"),
	I("memory_app_default"), I("video_current"), I("video_max"), END };
static const struct field throttle_counters_f[] = {
	U("sw_power_cap_us"), U("sync_boost_us"), U("sw_thermal_slowdown_us"),
	U("hw_thermal_slowdown_us"), U("hw_power_brake_slowdown_us"), END };
static const struct field throttle_f[] = {
	B("gpu_idle"), B("applications_clocks_setting"), B("sw_power_cap"),
	B("hw_slowdown"), B("hw_thermal_slowdown"), B("hw_power_brake_slowdown"),
	B("sync_boost"), B("sw_thermal_slowdown"), B("display_clocks_setting"),
	M("counters", throttle_counters_f), END };
static const struct field memory_clock_f[] = {
	I("freq_mhz"), SEQ("graphics_clocks", F_INT), END };
static const struct field supported_clocks_f[] = {
	SEQM("memory_clocks", memory_clock_f), END };
static const struct field utilization_f[] = {
	I("gpu"), I("memory"), I("encoder"), I("decoder"), I("jpeg"), I("ofa"), END };
static const struct field codec_stats_f[] = {
	I("session_count"), FL("average_fps"), FL("average_latency_us"), END };
static const struct field ecc_counts_f[] = {
	U("device_memory"), U("l1_cache"), U("l2_cache"), U("register_file"),
	U("texture_memory"), U("total"), END };
static const struct field ecc_bits_f[] = {
	M("single_bit", ecc_counts_f), M("double_bit", ecc_counts_f), END };
static const struct field ecc_errors_f[] = {
	M("volatile", ecc_bits_f), M("aggregate", ecc_bits_f), END };
static const struct field sram_counts_f[] = {
	U("correctable"), U("uncorrectable_parity"), U("uncorrectable_secded"), END };
static const struct field sram_sources_f[] = {
	U("l2"), U("sm"), U("microcontroller"), U("pcie"), U("other"), END };
static const struct field sram_f[] = {
	M("volatile", sram_counts_f), M("aggregate", sram_counts_f),
	M("uncorrectable_sources", sram_sources_f), B("threshold_exceeded"), END };
static const struct field ecc_f[] = {
	S("mode_current"), S("mode_pending"), S("default_mode"),
	M("errors", ecc_errors_f), M("sram", sram_f), END };
static const struct field retirement_f[] = {
	U("count"), SEQ("addresses", F_UINT), END };
static const struct field retired_pages_f[] = {
	M("single_bit_retirement", retirement_f), M("double_bit_retirement", retirement_f),
	B("pending_blacklist"), B("pending_retirement"), END };
static const struct field histogram_f[] = {
	U("max"), U("high"), U("partial"), U("low"), U("none"), END };
static const struct field remapped_rows_f[] = {
	U("correctable"), U("uncorrectable"), B("pending"), B("failure_occurred"),
	M("availability_histogram", histogram_f), END };
static const struct field display_f[] = { S("mode"), S("active"), END };
static const struct field mig_f[] = {
	S("mode_current"), S("mode_pending"), I("max_gpu_instances"), END };
static const struct field current_pending_f[] = { S("current"), S("pending"), END };
static const struct field accounting_f[] = { S("mode"), I("buffer_size"), END };
static const struct field virtualization_f[] = { S("mode"), S("host_vgpu_mode"), END };
static const struct field gsp_f[] = { S("mode"), S("version"), END };
static const struct field features_f[] = {
	B("transformer_engine"), B("fp4_support"), B("fp6_support"), B("fp8_support"),
	B("confidential_compute"), B("nvlink_c2c"), B("decompression_engine"),
	B("fifth_gen_tensor_cores"), END };
static const struct field grace_f[] = {
	B("enabled"), I("cpu_cores"), I("cpu_memory_gb"), B("coherent_memory"), END };
static const struct field cpu_f[] = {
	S("type"), I("cores"), I("memory_gb"), B("coherent_memory"), END };
static const struct field topology_hint_f[] = { S("default_level"), END };
static const struct field process_f[] = {
	I("pid"), S("type"), S("name"), U("used_memory_mib"), I("sm_util"),
	I("mem_util"), I("enc_util"), I("dec_util"), END };
static const struct field dyn_temp_f[] = {
	FL("base_c"), FL("variance_c"), FL("ramp_c"), FL("ramp_period_sec"), END };
static const struct field dyn_power_f[] = { FL("base_mw"), FL("variance_mw"), END };
static const struct field dyn_util_f[] = {
	S("pattern"), FL("gpu_min"), FL("gpu_max"), FL("memory_min"),
	FL("memory_max"), FL("burst_period_sec"), END };
static const struct field dynamic_f[] = {
	I("seed"), M("temperature", dyn_temp_f), M("power", dyn_power_f),
	M("utilization", dyn_util_f), END };
static const struct field gpm_f[] = {
	B("supported"), FL("pcie_tx_mib_per_sec"), FL("pcie_rx_mib_per_sec"), END };
static const struct field xid_f[] = { I("code"), END };
static const struct field failure_f[] = {
	S("mode"), FL("probability"), I("after_calls"), I("seed"), M("xid", xid_f), END };
static const struct field fabric_health_f[] = {
	S("degraded_bandwidth"), S("route_recovery"), S("route_unhealthy"),
	S("access_timeout_recovery"), S("incorrect_configuration"), END };
static const struct field fabric_f[] = {
	S("cluster_uuid"), U("clique_id"), S("state"), S("health_summary"),
	M("health", fabric_health_f), U("health_mask"), END };
static const struct field nvlink_error_f[] = { FL("rate"), SEQ("links", F_INT), END };
static const struct field platform_f[] = {
	S("chassis_serial_number"), I("slot_number"), I("tray_index"), I("host_id"),
	S("peer_type"), I("module_id"), END };

/* DeviceConfig: device_defaults, and what a devices[] entry may inline. */
static const struct field device_config_f[] = {
	S("name"), S("brand"), S("serial"), S("board_part_number"),
	S("vbios_version"), S("architecture"), M("compute_capability", cc_f),
	I("num_gpu_cores"), M("inforom", inforom_f), M("memory", memory_f),
	M("bar1_memory", bar1_f), M("pci", pci_f), M("pcie", pcie_f),
	M("power", power_f), M("thermal", thermal_f), M("fan", fan_f),
	M("clocks", clocks_f), M("clocks_throttle_reasons", throttle_f),
	M("supported_clocks", supported_clocks_f), S("performance_state"),
	M("utilization", utilization_f), M("encoder_stats", codec_stats_f),
	M("fbc_stats", codec_stats_f), M("ecc", ecc_f),
	M("retired_pages", retired_pages_f), M("remapped_rows", remapped_rows_f),
	M("display", display_f), S("persistence_mode"), S("compute_mode"),
	M("mig", mig_f), M("gpu_operation_mode", current_pending_f),
	M("driver_model", current_pending_f), M("accounting", accounting_f),
	M("virtualization", virtualization_f), M("gsp_firmware", gsp_f),
	M("features", features_f), M("grace_superchip", grace_f), M("cpu", cpu_f),
	M("topology", topology_hint_f), SEQM("processes", process_f),
	M("dynamic_metrics", dynamic_f), M("gpm", gpm_f), M("failure", failure_f),
	M("fabric", fabric_f), M("nvlink_error", nvlink_error_f),
	M("platform", platform_f), END };
static const struct field device_override_f[] = {
	I("index"), S("uuid"), I("minor_number"), I("grace_cpu_pair"),
	EXTENDS(device_config_f) };
static const struct field system_f[] = {
	S("driver_version"), S("nvml_version"), S("cuda_version"),
	I("cuda_version_major"), I("cuda_version_minor"), I("num_devices"), END };
static const struct field nvlink_link_f[] = {
	I("link"), S("state"), S("remote_device_type"), S("remote_pci_bus_id"),
	I("remote_index"), END };
static const struct field nvlink_switch_f[] = {
	S("bdf"), S("uuid"), U("device_id"), END };
static const struct field nvlink_defaults_f[] = {
	S("state"), FL("duty_cycle"), I("counter_seed"), FL("error_rate"), END };
static const struct field nvlink_device_links_f[] = {
	I("index"), SEQM("links", nvlink_link_f), END };
static const struct field nvlink_f[] = {
	I("version"), I("links_per_gpu"), U("bandwidth_per_link_mbps"),
	B("c2c_enabled"), ANY("bw_mode"), SEQM("links", nvlink_link_f),
	SEQM("switches", nvlink_switch_f), M("defaults", nvlink_defaults_f),
	SEQM("device_links", nvlink_device_links_f), END };
static const struct field root_complex_f[] = {
	S("id"), I("numa_node"), SEQ("devices", F_STR), S("cpu_affinity"), END };
static const struct field pcie_topology_f[] = {
	SEQM("root_complexes", root_complex_f), I("cores_per_numa"), END };
static const struct field profile_f[] = {
	S("version"), M("system", system_f), M("device_defaults", device_config_f),
	SEQM("devices", device_override_f), M("nvlink", nvlink_f),
	M("pcie_topology", pcie_topology_f),
	ANY("infiniband"),	/* consumed by the InfiniBand simulator */
	END };

static const struct field clique_f[] = { U("id"), SEQ("nodes", F_STR), END };
static const struct field domain_f[] = {
	S("name"), S("uuid"), SEQM("cliques", clique_f), END };
static const struct field topology_f[] = {
	S("version"), SEQM("domains", domain_f), END };

static const struct field *find_field(const struct field *t, const struct ynode *key)
{
	while (t) {
		for (; t->key; t++)
			if (strlen(t->key) == key->len && strcmp(t->key, key->str) == 0)
				return t;
		t = t->sub;	/* the END row names the table this one extends */
	}
	return NULL;
}

static int check_value(struct cctx *c, enum ftype type, enum ftype elem,
		       const struct field *sub, const struct ynode *v,
		       const char *path);

static int check_block(struct cctx *c, const struct field *table,
		       const struct ynode *map, const char *path)
{
	char sub[KEY_PATH_MAX];
	int rc;

	if (map->kind != YNODE_MAP)
		return cfail(c, map, path, "expected a mapping, got %s", text(map));
	for (size_t i = 0; i < ytree_map_size(map); i++) {
		const struct ynode *k = ytree_map_key(map, i);
		const struct field *f = find_field(table, k);

		join_key(sub, path, k->str);
		if (!f) {
			log_warn("%s:%d:%d: %s: unknown key, ignored", c->file,
				 k->line, k->col, sub);
			continue;
		}
		rc = check_value(c, f->type, f->elem, f->sub, ytree_map_value(map, i), sub);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int check_scalar(struct cctx *c, enum ftype type, const struct ynode *v,
			const char *path)
{
	static const char *const want[] = {
		[F_STR] = "a scalar", [F_INT] = "an integer",
		[F_UINT] = "a non-negative integer", [F_BOOL] = "true or false",
		[F_FLOAT] = "a number" };
	union { int64_t i; uint64_t u; bool b; double d; } tmp;
	int rc = v->kind == YNODE_SCALAR ? 0 : -EINVAL;

	if (rc == 0 && type == F_INT)
		rc = ytree_int(v, &tmp.i);
	else if (rc == 0 && type == F_UINT)
		rc = ytree_uint(v, &tmp.u);
	else if (rc == 0 && type == F_BOOL)
		rc = ytree_bool(v, &tmp.b);
	else if (rc == 0 && type == F_FLOAT)
		rc = ytree_float(v, &tmp.d);
	if (rc == -ERANGE)
		return cfail(c, v, path, "'%.64s' is out of range for %s", v->str, want[type]);
	if (rc < 0)
		return cfail(c, v, path, "expected %s, got '%.64s'", want[type], text(v));
	return 0;
}

static int check_value(struct cctx *c, enum ftype type, enum ftype elem,
		       const struct field *sub, const struct ynode *v,
		       const char *path)
{
	char item[KEY_PATH_MAX];
	int rc;

	if (type == F_ANY || ytree_is_null(v))
		return 0;	/* absent and null both mean "unset" */
	if (type == F_MAP)
		return check_block(c, sub, v, path);
	if (type != F_SEQ)
		return check_scalar(c, type, v, path);
	if (v->kind != YNODE_SEQ)
		return cfail(c, v, path, "expected a list, got %s", text(v));
	for (size_t i = 0; i < v->n; i++) {
		join_index(item, path, i);
		rc = check_value(c, elem, F_END, sub, v->kids[i], item);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Typed extraction.                                                   */

static const struct ynode *lookup(const struct ynode *map, const char *dotted)
{
	char key[64];

	while (map && *dotted) {
		size_t n = strcspn(dotted, ".");

		if (map->kind != YNODE_MAP || n >= sizeof(key))
			return NULL;
		memcpy(key, dotted, n);
		key[n] = '\0';
		map = ytree_map_get(map, key);
		dotted += n + (dotted[n] == '.');
	}
	return map;
}

static int get_int(struct cctx *c, const struct ynode *n, const char *path,
		   int64_t lo, int64_t hi, int64_t *out)
{
	int rc = ytree_int(n, out);

	if (rc == -EINVAL)
		return cfail(c, n, path, "expected an integer, got '%.64s'", text(n));
	if (rc < 0 || *out < lo || *out > hi)
		return cfail(c, n, path, "%.64s is out of range (%lld..%lld)", text(n),
			     (long long)lo, (long long)hi);
	return 0;
}

static int get_u64(struct cctx *c, const struct ynode *n, const char *path,
		   uint64_t hi, uint64_t *out)
{
	int rc = ytree_uint(n, out);

	if (rc == -EINVAL)
		return cfail(c, n, path, "expected a non-negative integer, got '%.64s'",
			     text(n));
	if (rc < 0 || *out > hi)
		return cfail(c, n, path, "%.64s is out of range (0..%llu)", text(n),
			     (unsigned long long)hi);
	return 0;
}

/* Copy a scalar into buf; a null or absent node gives "". */
static int get_str(struct cctx *c, const struct ynode *n, const char *path,
		   char *buf, size_t size)
{
	buf[0] = '\0';
	if (ytree_is_null(n))
		return 0;
	if (n->kind != YNODE_SCALAR)
		return cfail(c, n, path, "expected a string, got %s", text(n));
	if (memchr(n->str, '\0', n->len))
		return cfail(c, n, path, "contains a NUL byte");
	if (n->len >= size)
		return cfail(c, n, path, "'%.32s...' is too long (%zu bytes, at most %zu)",
			     n->str, n->len, size - 1);
	memcpy(buf, n->str, n->len + 1);
	return 0;
}

static void lowercase(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

static bool all_chars(const char *s, const char *set)
{
	return s[strspn(s, set)] == '\0';
}

#define HEX "0123456789abcdefABCDEF"

/* A BDF value: lowercased, pattern-checked, safe as a path component. */
static int get_bdf(struct cctx *c, const struct ynode *n, const char *path,
		   char *buf, size_t size)
{
	int rc = get_str(c, n, path, buf, size);

	if (rc < 0)
		return rc;
	lowercase(buf);
	if (!state_valid_bdf(buf) || !state_valid_path_component(buf))
		return cfail(c, n, path, "invalid PCI address '%.64s' (want dddd:bb:dd.f)",
			     text(n));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Devices.                                                            */

/* A device entry while compiling: the compiled fields plus the nodes that
 * errors found later (duplicates, topology) must point at. */
struct dev_build {
	struct state_device d;
	const struct ynode *entry, *bus;
	char bus_path[KEY_PATH_MAX];
};

/* Where a merged value came from, so errors name the right line. */
struct pick {
	const struct ynode *node;
	char path[KEY_PATH_MAX];
};

static bool zero_or_empty(const struct ynode *n)
{
	uint64_t v;

	return ytree_is_null(n) || (n->kind == YNODE_SCALAR &&
		(n->len == 0 || (ytree_uint(n, &v) == 0 && v == 0)));
}

/* Scalars and pci.* merge field by field: a set device value wins (the
 * reference cannot tell zero from unset, nor can we). */
static void pick_field(const struct ynode *dev, const char *dev_path,
		       const struct ynode *def, const char *key, struct pick *p)
{
	const struct ynode *v = lookup(dev, key);

	if (zero_or_empty(v) && def) {
		v = lookup(def, key);
		dev_path = "device_defaults";
	}
	p->node = v;
	join_key(p->path, dev_path, key);
}

/* memory, bar1_memory, fabric... are replaced wholesale by a device block. */
static void pick_in_block(const struct ynode *dev, const char *dev_path,
			  const struct ynode *def, const char *block,
			  const char *key, struct pick *p)
{
	const struct ynode *b = lookup(dev, block);
	char tmp[KEY_PATH_MAX];

	if (ytree_is_null(b)) {
		b = def ? lookup(def, block) : NULL;
		dev_path = "device_defaults";
	}
	p->node = lookup(b, key);
	join_key(tmp, dev_path, block);
	join_key(p->path, tmp, key);
}

static int device_pci(struct cctx *c, const struct ynode *dev, const char *dp,
		      const struct ynode *def, struct dev_build *b)
{
	struct pick p;
	uint64_t v = 0;
	int rc;

	pick_field(dev, dp, def, "pci.device_id", &p);
	if (!ytree_is_null(p.node) &&
	    (rc = get_u64(c, p.node, p.path, UINT32_MAX, &v)) < 0)
		return rc;
	/* An absent id still names an NVIDIA function. */
	b->d.vendor_id = v ? (uint16_t)(v & 0xffff) : 0x10de;
	b->d.device_id = (uint16_t)(v >> 16);

	v = 0;
	pick_field(dev, dp, def, "pci.subsystem_id", &p);
	if (!ytree_is_null(p.node) &&
	    (rc = get_u64(c, p.node, p.path, UINT32_MAX, &v)) < 0)
		return rc;
	b->d.subsys_vendor_id = (uint16_t)(v & 0xffff);
	if (!b->d.subsys_vendor_id)
		b->d.subsys_vendor_id = b->d.vendor_id;
	b->d.subsys_device_id = (uint16_t)(v >> 16);

	pick_field(dev, dp, def, "pci.bus_id", &p);
	b->bus = p.node;
	snprintf(b->bus_path, sizeof(b->bus_path), "%s", p.path);
	/* Every GPU sits on the PCI bus: workers key their files on it. */
	if (ytree_is_null(p.node))
		return cfail(c, dev, p.path, "missing (required, e.g. \"0000:1a:00.0\")");
	return get_bdf(c, p.node, p.path, b->d.bus_id, sizeof(b->d.bus_id));
}

static bool valid_width(int64_t w)
{
	static const int widths[] = { 1, 2, 4, 8, 16, 32 };

	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
		if (w == widths[i])
			return true;
	return false;
}

/* pcie is not merged per device (reference rule): defaults only. */
static int device_pcie(struct cctx *c, const struct ynode *def,
		       struct state_pcie_link *l)
{
	static const struct {
		const char *key;
		bool width;
		size_t off;
	} keys[] = {
		{ "max_link_gen", false, offsetof(struct state_pcie_link, max_gen) },
		{ "current_link_gen", false, offsetof(struct state_pcie_link, cur_gen) },
		{ "max_link_width", true, offsetof(struct state_pcie_link, max_width) },
		{ "current_link_width", true, offsetof(struct state_pcie_link, cur_width) },
	};
	const struct ynode *pcie = lookup(def, "pcie");
	char path[KEY_PATH_MAX];
	int64_t v;
	int rc;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const struct ynode *n = lookup(pcie, keys[i].key);

		if (ytree_is_null(n))
			continue;
		join_key(path, "device_defaults.pcie", keys[i].key);
		rc = get_int(c, n, path, 1, keys[i].width ? 32 : 6, &v);
		if (rc < 0)
			return rc;
		if (keys[i].width && !valid_width(v))
			return cfail(c, n, path, "invalid link width %lld (want 1, 2, 4, 8, 16 or 32)",
				     (long long)v);
		*(int *)((char *)l + keys[i].off) = (int)v;
	}
	if (!l->cur_gen)
		l->cur_gen = l->max_gen;
	if (!l->cur_width)
		l->cur_width = l->max_width;
	if (l->max_gen && l->cur_gen > l->max_gen)
		return cfail(c, lookup(pcie, "current_link_gen"),
			     "device_defaults.pcie.current_link_gen",
			     "Gen%d exceeds max_link_gen Gen%d", l->cur_gen, l->max_gen);
	if (l->max_width && l->cur_width > l->max_width)
		return cfail(c, lookup(pcie, "current_link_width"),
			     "device_defaults.pcie.current_link_width",
			     "x%d exceeds max_link_width x%d", l->cur_width, l->max_width);
	return 0;
}

static int device_memory(struct cctx *c, const struct ynode *dev, const char *dp,
			 const struct ynode *def, struct state_device *d)
{
	struct pick p;
	int rc;

	pick_in_block(dev, dp, def, "memory", "total_bytes", &p);
	if (!ytree_is_null(p.node)) {
		rc = get_u64(c, p.node, p.path, UINT64_MAX, &d->memory_total_bytes);
		if (rc < 0)
			return rc;
		if (!d->memory_total_bytes)
			return cfail(c, p.node, p.path, "memory size must be greater than 0");
	}
	pick_in_block(dev, dp, def, "bar1_memory", "total_bytes", &p);
	if (ytree_is_null(p.node))
		return 0;
	return get_u64(c, p.node, p.path, UINT64_MAX, &d->bar1_total_bytes);
}

static int device_strings(struct cctx *c, const struct ynode *dev, const char *dp,
			  const struct ynode *def, struct state_device *d)
{
	const struct {
		const char *key;
		char *buf;
		size_t size;
	} keys[] = {
		{ "name", d->name, sizeof(d->name) },
		{ "serial", d->serial, sizeof(d->serial) },
		{ "architecture", d->architecture, sizeof(d->architecture) },
	};
	struct pick p;
	int rc;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		pick_field(dev, dp, def, keys[i].key, &p);
		rc = get_str(c, p.node, p.path, keys[i].buf, keys[i].size);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;	/* field separator */
}

/* A stable UUID from what identifies the board in the profile, so every
 * node compiling the same profile reports the same ids. */
static void default_uuid(struct state_device *d)
{
	char idx[32];
	uint64_t h[2] = { 0xcbf29ce484222325ull, 0x84222325cbf29ce4ull };

	snprintf(idx, sizeof(idx), "%d:%04x:%04x", d->index, d->device_id,
		 d->vendor_id);
	for (int i = 0; i < 2; i++) {
		h[i] = fnv1a(h[i], d->name);
		h[i] = fnv1a(h[i], d->serial);
		h[i] = fnv1a(h[i], d->bus_id);
		h[i] = fnv1a(h[i], idx);
	}
	snprintf(d->uuid, sizeof(d->uuid), "GPU-%08x-%04x-%04x-%04x-%012llx",
		 (unsigned)(h[0] >> 32), (unsigned)(h[0] >> 16) & 0xffff,
		 (unsigned)h[0] & 0xffff, (unsigned)(h[1] >> 48),
		 (unsigned long long)(h[1] & 0xffffffffffffull));
}

static int device_identity(struct cctx *c, const struct ynode *dev, const char *dp,
			   size_t pos, struct state_device *d)
{
	char path[KEY_PATH_MAX];
	const struct ynode *n;
	int64_t v = (int64_t)pos;
	int rc;

	join_key(path, dp, "index");
	n = lookup(dev, "index");
	if (!ytree_is_null(n) &&
	    (rc = get_int(c, n, path, 0, STATE_MAX_DEVICES - 1, &v)) < 0)
		return rc;
	d->index = (int)v;

	join_key(path, dp, "minor_number");
	n = lookup(dev, "minor_number");
	/* 255 is /dev/nvidiactl's minor. */
	if (!ytree_is_null(n) && (rc = get_int(c, n, path, 0, 254, &v)) < 0)
		return rc;
	d->minor = (int)v;

	join_key(path, dp, "uuid");
	n = lookup(dev, "uuid");
	rc = get_str(c, n, path, d->uuid, sizeof(d->uuid));
	if (rc < 0 || !d->uuid[0])
		return rc;
	if (strncmp(d->uuid, "GPU-", 4) || !d->uuid[4] || !all_chars(d->uuid + 4, HEX "-") ||
	    !state_valid_path_component(d->uuid))
		return cfail(c, n, path, "invalid GPU UUID '%.64s' (want GPU-<hex digits and dashes>)",
			     d->uuid);
	return 0;
}

static int compile_device(struct cctx *c, const struct ynode *dev, size_t pos,
			  const struct ynode *def, struct dev_build *b)
{
	char dp[KEY_PATH_MAX];
	int rc;

	join_index(dp, "devices", pos);
	b->entry = dev;
	if (dev->kind != YNODE_MAP)
		return cfail(c, dev, dp, "expected a mapping, got %s", text(dev));
	if ((rc = device_identity(c, dev, dp, pos, &b->d)) < 0 ||
	    (rc = device_strings(c, dev, dp, def, &b->d)) < 0 ||
	    (rc = device_pci(c, dev, dp, def, b)) < 0 ||
	    (rc = device_pcie(c, def, &b->d.pcie)) < 0 ||
	    (rc = device_memory(c, dev, dp, def, &b->d)) < 0)
		return rc;
	b->d.numa_node = -1;
	b->d.root = -1;
	if (!b->d.uuid[0])
		default_uuid(&b->d);
	return 0;
}

static int by_index(const void *a, const void *b)
{
	return ((const struct dev_build *)a)->d.index -
	       ((const struct dev_build *)b)->d.index;
}

/* Pairwise uniqueness of index, minor, uuid and BDF (n <= 64). */
static int check_unique(struct cctx *c, const struct dev_build *b, int n)
{
	char path[KEY_PATH_MAX];

	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++) {
			const struct state_device *x = &b[i].d, *y = &b[j].d;

			if (x->index == y->index)
				return cfail(c, lookup(b[i].entry, "index"), "devices.index",
					     "duplicate device index %d", x->index);
			if (x->minor == y->minor)
				return cfail(c, b[i].entry, "devices.minor_number",
					     "devices with index %d and %d share minor number %d",
					     y->index, x->index, x->minor);
			if (!strcmp(x->uuid, y->uuid)) {
				snprintf(path, sizeof(path), "devices(index %d).uuid", x->index);
				return cfail(c, lookup(b[i].entry, "uuid"), path,
					     "duplicate UUID '%s'", x->uuid);
			}
			if (x->bus_id[0] && !strcmp(x->bus_id, y->bus_id))
				return cfail(c, b[i].bus, b[i].bus_path,
					     "duplicate PCI address '%s' (also used by the device with index %d)",
					     x->bus_id, y->index);
		}
	return 0;
}

static int compile_devices(struct cctx *c, const struct ynode *root,
			   struct dev_build *b, int *count)
{
	const struct ynode *devs = lookup(root, "devices");
	const struct ynode *def = lookup(root, "device_defaults");
	int rc;

	if (ytree_is_null(devs) || devs->n == 0)
		return cfail(c, devs ? devs : root, "devices",
			     "at least one device is required");
	if (devs->n > STATE_MAX_DEVICES)
		return cfail(c, devs, "devices", "%zu devices listed, at most %d supported",
			     devs->n, STATE_MAX_DEVICES);
	if (ytree_is_null(def))
		def = NULL;
	for (size_t i = 0; i < devs->n; i++) {
		rc = compile_device(c, devs->kids[i], i, def, &b[i]);
		if (rc < 0)
			return rc;
	}
	*count = (int)devs->n;
	qsort(b, devs->n, sizeof(*b), by_index);
	return check_unique(c, b, *count);
}

/* ------------------------------------------------------------------ */
/* PCIe topology.                                                      */

struct bdf_owner {			/* a BDF a root complex may list */
	const char *bdf;
	int device;			/* index into the dev_build array, -1 = switch */
};

struct topo_build {
	struct state *s;
	struct dev_build *devs;
	int ndevs;
	struct bdf_owner owners[STATE_MAX_DEVICES + 64];
	int nowners;
	char switch_bdf[64][16];
	int claimed_by[STATE_MAX_DEVICES + 64];	/* root index per owner, -1 */
};

static int collect_switches(struct cctx *c, const struct ynode *root,
			    struct topo_build *t)
{
	const struct ynode *sw = lookup(root, "nvlink.switches");
	char path[KEY_PATH_MAX];
	int rc;

	if (ytree_is_null(sw))
		return 0;
	if (sw->n > 64)
		return cfail(c, sw, "nvlink.switches", "%zu switches listed, at most 64 supported",
			     sw->n);
	for (size_t i = 0; i < sw->n; i++) {
		const struct ynode *bdf = lookup(sw->kids[i], "bdf");

		snprintf(path, sizeof(path), "nvlink.switches[%zu].bdf", i);
		if (ytree_is_null(bdf))
			continue;
		rc = get_bdf(c, bdf, path, t->switch_bdf[i], sizeof(t->switch_bdf[i]));
		if (rc < 0)
			return rc;
		for (int j = 0; j < t->nowners; j++)
			if (!strcmp(t->owners[j].bdf, t->switch_bdf[i]))
				return cfail(c, bdf, path, "duplicate PCI address '%s'",
					     t->switch_bdf[i]);
		t->owners[t->nowners++] = (struct bdf_owner){ t->switch_bdf[i], -1 };
	}
	return 0;
}

static void parse_root_id(const char *id, unsigned *domain, unsigned *bus)
{
	if (sscanf(id, "pci%4x:%2x", domain, bus) != 2)
		*domain = *bus = 0;
}

/* The root complex whose bus range holds bdf: same domain, the highest
 * root bus number not above the BDF's bus. */
static int owning_root(const struct state *s, const char *bdf)
{
	unsigned dom, bus, rdom, rbus;
	int best = -1;
	unsigned best_bus = 0;

	if (sscanf(bdf, "%4x:%2x", &dom, &bus) != 2)
		return -1;
	for (int i = 0; i < s->num_roots; i++) {
		parse_root_id(s->roots[i].id, &rdom, &rbus);
		if (rdom == dom && rbus <= bus && (best < 0 || rbus > best_bus))
			best = i, best_bus = rbus;
	}
	return best;
}

static int root_header(struct cctx *c, const struct ynode *rc_node, const char *rp,
		       struct state *s)
{
	struct state_root_complex *r = &s->roots[s->num_roots];
	char path[KEY_PATH_MAX];
	const struct ynode *n;
	int64_t v = 0;
	int rc;

	if (rc_node->kind != YNODE_MAP)
		return cfail(c, rc_node, rp, "expected a mapping, got %s", text(rc_node));
	join_key(path, rp, "id");
	n = lookup(rc_node, "id");
	if (ytree_is_null(n))
		return cfail(c, rc_node, path, "missing (want pcidddd:bb)");
	rc = get_str(c, n, path, r->id, sizeof(r->id));
	if (rc < 0)
		return rc;
	lowercase(r->id);
	if (!state_valid_root_id(r->id) || !state_valid_path_component(r->id))
		return cfail(c, n, path, "invalid root complex id '%.64s' (want pcidddd:bb)",
			     text(n));
	for (int i = 0; i < s->num_roots; i++)
		if (!strcmp(s->roots[i].id, r->id))
			return cfail(c, n, path, "duplicate root complex '%s'", r->id);

	join_key(path, rp, "numa_node");
	n = lookup(rc_node, "numa_node");
	if (!ytree_is_null(n) && (rc = get_int(c, n, path, -1, 1023, &v)) < 0)
		return rc;
	r->numa_node = (int)v;

	join_key(path, rp, "cpu_affinity");
	n = lookup(rc_node, "cpu_affinity");
	rc = get_str(c, n, path, r->cpu_affinity, sizeof(r->cpu_affinity));
	if (rc < 0)
		return rc;
	if (!all_chars(r->cpu_affinity, "0123456789,-"))
		return cfail(c, n, path, "invalid cpu list '%.64s' (want e.g. 0-55,112-167)",
			     r->cpu_affinity);
	return 0;
}

static int root_member(struct cctx *c, struct topo_build *t, int ri,
		       const struct ynode *n, const char *path)
{
	char bdf[16];
	int rc = get_bdf(c, n, path, bdf, sizeof(bdf));
	int owner = -1;

	if (rc < 0)
		return rc;
	for (int i = 0; i < t->nowners; i++)
		if (!strcmp(t->owners[i].bdf, bdf))
			owner = i;
	if (owner < 0)
		return cfail(c, n, path, "'%s' is not a device's pci.bus_id nor an nvlink.switches bdf",
			     bdf);
	if (t->claimed_by[owner] >= 0)
		return cfail(c, n, path, "'%s' is already under root complex %s", bdf,
			     t->s->roots[t->claimed_by[owner]].id);
	if (owning_root(t->s, bdf) != ri)
		return cfail(c, n, path, "'%s' is outside the bus range of %s", bdf,
			     t->s->roots[ri].id);
	t->claimed_by[owner] = ri;
	if (t->owners[owner].device >= 0) {
		t->devs[t->owners[owner].device].d.root = ri;
		t->devs[t->owners[owner].device].d.numa_node = t->s->roots[ri].numa_node;
	}
	return 0;
}

/* Without pcie_topology: one root pci0000:00 on NUMA 0 holding every
 * device with a bus_id (a project decision: render them all). */
static void flat_topology(struct topo_build *t)
{
	struct state_root_complex *r = &t->s->roots[0];

	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "pci0000:00");
	t->s->num_roots = 1;
	for (int i = 0; i < t->ndevs; i++)
		if (t->devs[i].d.bus_id[0]) {
			t->devs[i].d.root = 0;
			t->devs[i].d.numa_node = 0;
		}
}

static int compile_roots(struct cctx *c, const struct ynode *roots,
			 struct topo_build *t)
{
	char rp[KEY_PATH_MAX], mp[KEY_PATH_MAX], path[KEY_PATH_MAX];
	const struct ynode *members;
	int rc;

	if (roots->n > STATE_MAX_ROOTS)
		return cfail(c, roots, "pcie_topology.root_complexes",
			     "%zu root complexes listed, at most %d supported",
			     roots->n, STATE_MAX_ROOTS);
	/* Headers first: bus ranges depend on every root's bus number. */
	for (size_t i = 0; i < roots->n; i++) {
		join_index(rp, "pcie_topology.root_complexes", i);
		rc = root_header(c, roots->kids[i], rp, t->s);
		if (rc < 0)
			return rc;
		t->s->num_roots++;
	}
	for (size_t i = 0; i < roots->n; i++) {
		join_index(rp, "pcie_topology.root_complexes", i);
		join_key(mp, rp, "devices");
		members = lookup(roots->kids[i], "devices");
		for (size_t j = 0; members && members->kind == YNODE_SEQ && j < members->n; j++) {
			join_index(path, mp, j);
			rc = root_member(c, t, (int)i, members->kids[j], path);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int compile_topology(struct cctx *c, const struct ynode *root,
			    struct dev_build *devs, int ndevs, struct state *s)
{
	const struct ynode *roots = lookup(root, "pcie_topology.root_complexes");
	const struct ynode *cores = lookup(root, "pcie_topology.cores_per_numa");
	struct topo_build *t = calloc(1, sizeof(*t));
	int64_t v = 0;
	int rc;

	if (!t)
		return cfail(c, root, "pcie_topology", "out of memory");
	t->s = s;
	t->devs = devs;
	t->ndevs = ndevs;
	for (int i = 0; i < ndevs; i++)
		if (devs[i].d.bus_id[0])
			t->owners[t->nowners++] = (struct bdf_owner){ devs[i].d.bus_id, i };
	for (size_t i = 0; i < sizeof(t->claimed_by) / sizeof(t->claimed_by[0]); i++)
		t->claimed_by[i] = -1;
	rc = collect_switches(c, root, t);
	if (rc == 0 && !ytree_is_null(cores))
		rc = get_int(c, cores, "pcie_topology.cores_per_numa", 0, 65536, &v);
	s->cores_per_numa = (int)v;
	if (rc == 0 && (ytree_is_null(roots) || roots->n == 0))
		flat_topology(t);
	else if (rc == 0)
		rc = compile_roots(c, roots, t);
	free(t);
	return rc;
}

/* ------------------------------------------------------------------ */
/* System, fabric, options.                                            */

static int compile_system(struct cctx *c, const struct ynode *root,
			  const struct compile_opts *o, struct state *s)
{
	const struct ynode *sys = lookup(root, "system");
	const struct ynode *drv = lookup(sys, "driver_version");
	int rc;

	if (ytree_is_null(lookup(root, "version")))
		return cfail(c, root, "version", "missing (required, e.g. \"1.0\")");
	if ((rc = get_str(c, drv, "system.driver_version", s->driver_version,
			  sizeof(s->driver_version))) < 0 ||
	    (rc = get_str(c, lookup(sys, "nvml_version"), "system.nvml_version",
			  s->nvml_version, sizeof(s->nvml_version))) < 0 ||
	    (rc = get_str(c, lookup(sys, "cuda_version"), "system.cuda_version",
			  s->cuda_version, sizeof(s->cuda_version))) < 0)
		return rc;
	if (!s->driver_version[0] && o->driver_version) {
		if (strlen(o->driver_version) >= sizeof(s->driver_version))
			return cfail(c, sys ? sys : root, "system.driver_version",
				     "DRIVER_VERSION fallback '%.40s' is too long",
				     o->driver_version);
		strcpy(s->driver_version, o->driver_version);
	}
	if (!s->driver_version[0])
		return cfail(c, sys ? sys : root, "system.driver_version",
			     "missing (required, e.g. \"550.163.01\")");
	/* It names library files (libnvidia-ml.so.<version>). */
	if (!all_chars(s->driver_version, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._-") ||
	    !state_valid_path_component(s->driver_version))
		return cfail(c, drv ? drv : root, "system.driver_version",
			     "invalid driver version '%s' (want e.g. 550.163.01)",
			     s->driver_version);
	return 0;
}

static int compile_fabric(struct cctx *c, const struct ynode *root,
			  const struct compile_opts *o, struct state *s)
{
	const struct ynode *fab = lookup(root, "device_defaults.fabric");
	const struct ynode *sw = lookup(root, "nvlink.switches");
	const struct ynode *n;
	struct state_fabric *f = &s->fabric;
	uint64_t u;
	int64_t v;
	int rc;

	n = lookup(fab, "state");
	f->enabled = (!ytree_is_null(sw) && sw->n > 0) ||
		     (n && n->kind == YNODE_SCALAR && !strcmp(n->str, "auto"));
	rc = get_str(c, lookup(fab, "cluster_uuid"), "device_defaults.fabric.cluster_uuid",
		     f->cluster_uuid, sizeof(f->cluster_uuid));
	if (rc < 0)
		return rc;
	n = lookup(fab, "clique_id");
	if (!ytree_is_null(n)) {
		rc = get_u64(c, n, "device_defaults.fabric.clique_id", UINT32_MAX, &u);
		if (rc < 0)
			return rc;
		f->clique_id = (uint32_t)u;
	}
	n = lookup(root, "nvlink.links_per_gpu");
	if (!ytree_is_null(n)) {
		rc = get_int(c, n, "nvlink.links_per_gpu", 0, 64, &v);
		if (rc < 0)
			return rc;
		f->links_per_gpu = (int)v;
	}
	n = lookup(root, "nvlink.bandwidth_per_link_mbps");
	if (!ytree_is_null(n)) {
		rc = get_u64(c, n, "nvlink.bandwidth_per_link_mbps", LONG_MAX, &u);
		if (rc < 0)
			return rc;
		f->bandwidth_per_link_mbps = (long)u;
	}
	f->init_delay_ms = o->fabric_init_delay_ms;
	if (o->fabric_state_dir)
		rc = snprintf(f->state_dir, sizeof(f->state_dir), "%s", o->fabric_state_dir);
	else
		rc = snprintf(f->state_dir, sizeof(f->state_dir), "%s/fabric-state",
			      s->mock_root);
	if (rc < 0 || (size_t)rc >= sizeof(f->state_dir))
		return cfail(c, NULL, "fabric_state_dir", "path too long (at most %zu bytes)",
			     sizeof(f->state_dir) - 1);
	return 0;
}

static int copy_opt(struct cctx *c, const char *name, const char *v,
		    char *buf, size_t size)
{
	if (!v)
		return 0;
	if (strlen(v) >= size)
		return cfail(c, NULL, name, "'%.40s...' is too long (at most %zu bytes)",
			     v, size - 1);
	strcpy(buf, v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Topology document (ComputeDomain cliques).                          */

static int topology_lookup(struct cctx *c, const struct ynode *doc,
			   const char *node_name, bool apply, struct state *s)
{
	const struct ynode *domains = lookup(doc, "domains");
	char path[KEY_PATH_MAX];
	bool found = false;
	uint64_t id = 0;
	int rc;

	for (size_t d = 0; domains && domains->kind == YNODE_SEQ && d < domains->n; d++) {
		const struct ynode *cliques = lookup(domains->kids[d], "cliques");

		for (size_t q = 0; cliques && cliques->kind == YNODE_SEQ && q < cliques->n; q++) {
			const struct ynode *cl = cliques->kids[q];
			const struct ynode *nodes = lookup(cl, "nodes");

			snprintf(path, sizeof(path), "domains[%zu].cliques[%zu].id", d, q);
			if (!ytree_is_null(lookup(cl, "id")) &&
			    (rc = get_u64(c, lookup(cl, "id"), path, UINT32_MAX, &id)) < 0)
				return rc;
			for (size_t k = 0; node_name && nodes && nodes->kind == YNODE_SEQ &&
					   k < nodes->n; k++) {
				const struct ynode *nn = nodes->kids[k];

				if (nn->kind != YNODE_SCALAR || strcmp(nn->str, node_name))
					continue;
				if (found) {
					log_warn("%s:%d:%d: domains[%zu].cliques[%zu].nodes[%zu]: node '%s' is listed again; the first clique wins",
						 c->file, nn->line, nn->col, d, q, k, node_name);
					continue;
				}
				found = true;
				if (!apply)
					continue;
				snprintf(path, sizeof(path), "domains[%zu].uuid", d);
				rc = get_str(c, lookup(domains->kids[d], "uuid"), path,
					     s->fabric.cluster_uuid, sizeof(s->fabric.cluster_uuid));
				if (rc < 0)
					return rc;
				s->fabric.clique_id = (uint32_t)id;
			}
		}
	}
	return 0;
}

static int compile_topology_doc(struct cctx *c, const char *topo, size_t len,
				const char *node_name, bool has_fabric, struct state *s)
{
	struct ytree_error ye;
	struct ynode *doc;
	int rc;

	if (len > COMPILE_MAX_INPUT)
		return cfail(c, NULL, "(document)", "topology too large (%zu bytes, at most %u)",
			     len, COMPILE_MAX_INPUT);
	rc = ytree_parse(topo, len, &doc, &ye);
	if (rc < 0) {
		if (c->err && c->errlen)
			snprintf(c->err, c->errlen, "%s:%d:%d: yaml: %s", c->file,
				 ye.line, ye.col, ye.msg);
		return -EINVAL;
	}
	if (ytree_is_null(doc)) {	/* empty document: no topology */
		ytree_free(doc);
		return 0;
	}
	rc = check_block(c, topology_f, doc, "");
	/* A profile without a fabric block keeps its NOT_SUPPORTED fabric. */
	if (rc == 0)
		rc = topology_lookup(c, doc, node_name, has_fabric, s);
	ytree_free(doc);
	if (rc < 0)
		return rc;
	s->topology_doc = malloc(len + 1);
	if (!s->topology_doc)
		return cfail(c, NULL, "(document)", "out of memory");
	memcpy(s->topology_doc, topo, len);
	s->topology_doc[len] = '\0';
	s->topology_len = len;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Profile as JSON, for the NVML library.                              */

static cJSON *scalar_json(const struct ynode *n)
{
	char num[32];
	int64_t i;
	uint64_t u;
	double d;
	bool b;

	if (!n->plain)
		return cJSON_CreateString(n->str);
	if (ytree_is_null(n))
		return cJSON_CreateNull();
	/* Only the YAML 1.2 words: "on"/"yes" stay strings in untyped data. */
	if (!strcmp(n->str, "true") || !strcmp(n->str, "false") ||
	    !strcmp(n->str, "True") || !strcmp(n->str, "False") ||
	    !strcmp(n->str, "TRUE") || !strcmp(n->str, "FALSE"))
		return ytree_bool(n, &b) == 0 ? cJSON_CreateBool(b) : NULL;
	/* Integers go out as exact decimal text: a double would round
	 * 64-bit byte counts. */
	if (ytree_int(n, &i) == 0) {
		snprintf(num, sizeof(num), "%lld", (long long)i);
		return cJSON_CreateRaw(num);
	}
	if (ytree_uint(n, &u) == 0) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)u);
		return cJSON_CreateRaw(num);
	}
	if (ytree_float(n, &d) == 0)
		return cJSON_CreateNumber(d);
	return cJSON_CreateString(n->str);
}

static cJSON *tree_json(const struct ynode *n)
{
	cJSON *j, *kid;

	if (n->kind == YNODE_SCALAR)
		return scalar_json(n);
	j = n->kind == YNODE_MAP ? cJSON_CreateObject() : cJSON_CreateArray();
	for (size_t i = 0; j && i < n->n; i += n->kind == YNODE_MAP ? 2 : 1) {
		kid = tree_json(n->kind == YNODE_MAP ? n->kids[i + 1] : n->kids[i]);
		if (!kid) {
			cJSON_Delete(j);
			return NULL;
		}
		if (n->kind == YNODE_MAP)
			cJSON_AddItemToObject(j, n->kids[i]->str, kid);
		else
			cJSON_AddItemToArray(j, kid);
	}
	return j;
}

static int profile_json(struct cctx *c, const struct ynode *root, struct state *s)
{
	cJSON *j = tree_json(root);

	s->profile_json = j ? cJSON_PrintUnformatted(j) : NULL;
	cJSON_Delete(j);
	if (!s->profile_json)
		return cfail(c, root, "(document)", "out of memory converting to JSON");
	return 0;
}

/* ------------------------------------------------------------------ */

static int compile_tree(struct cctx *c, const struct ynode *root,
			const struct compile_opts *o, struct state *s,
			struct dev_build *devs)
{
	int ndevs = 0, rc;

	if ((rc = check_block(c, profile_f, root, "")) < 0 ||
	    (rc = compile_system(c, root, o, s)) < 0 ||
	    (rc = copy_opt(c, "node_name", o->node_name, s->node_name,
			   sizeof(s->node_name))) < 0 ||
	    (rc = copy_opt(c, "mock_root", o->mock_root ? o->mock_root : DEFAULT_MOCK_ROOT,
			   s->mock_root, sizeof(s->mock_root))) < 0 ||
	    (rc = compile_devices(c, root, devs, &ndevs)) < 0 ||
	    (rc = compile_topology(c, root, devs, ndevs, s)) < 0 ||
	    (rc = compile_fabric(c, root, o, s)) < 0)
		return rc;
	if (o->gpu_count_cap > 0 && o->gpu_count_cap < ndevs)
		ndevs = o->gpu_count_cap;
	s->num_devices = ndevs;
	for (int i = 0; i < ndevs; i++)
		s->devices[i] = devs[i].d;
	return profile_json(c, root, s);
}

int compile_profile(const char *profile_name, const char *yaml, size_t len,
		    const char *topology_name, const char *topo, size_t topo_len,
		    const struct compile_opts *opts, struct state *out,
		    char *err, size_t errlen)
{
	static const struct compile_opts no_opts;
	struct cctx c = { profile_name ? profile_name : "<profile>", err, errlen };
	const struct compile_opts *o = opts ? opts : &no_opts;
	struct dev_build *devs = NULL;
	struct ytree_error ye;
	struct ynode *root = NULL;
	struct state *s;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (len > COMPILE_MAX_INPUT)
		return cfail(&c, NULL, "(document)", "profile too large (%zu bytes, at most %u)",
			     len, COMPILE_MAX_INPUT);
	rc = ytree_parse(yaml ? yaml : "", yaml ? len : 0, &root, &ye);
	if (rc < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s:%d:%d: yaml: %s", c.file, ye.line, ye.col, ye.msg);
		return -EINVAL;
	}
	if (ytree_is_null(root)) {
		ytree_free(root);
		return cfail(&c, NULL, "(document)", "empty profile");
	}
	s = calloc(1, sizeof(*s));
	devs = calloc(STATE_MAX_DEVICES, sizeof(*devs));
	if (!s || !devs)
		rc = cfail(&c, NULL, "(document)", "out of memory");
	else
		rc = compile_tree(&c, root, o, s, devs);
	if (rc == 0 && topo && topo_len) {
		c.file = topology_name ? topology_name : "<topology>";
		rc = compile_topology_doc(&c, topo, topo_len, s->node_name[0] ? s->node_name : NULL,
					  !ytree_is_null(lookup(root, "device_defaults.fabric")), s);
	}
	ytree_free(root);
	free(devs);
	if (rc < 0) {
		if (s) {
			free(s->topology_doc);
			free(s->profile_json);
		}
		free(s);
		return rc;
	}
	s->generation = out->generation;
	*out = *s;
	free(s);
	return 0;
}
