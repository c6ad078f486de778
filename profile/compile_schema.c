/* Profile compiler, schema side: one key table per block, the walk that
 * warns about unknown keys and rejects wrongly typed values, and the
 * typed, range-checked extraction and error reporting the other
 * compile_*.c files share. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ipc/log.h"
#include "profile/compile.h"
#include "profile/compile_internal.h"

/* ------------------------------------------------------------------ */
/* Errors and key paths.                                               */

int cc_fail(struct cctx *c, const struct ynode *at, const char *path,
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

void cc_join_key(char *dst, const char *base, const char *key)
{
	snprintf(dst, KEY_PATH_MAX, "%s%s%.64s", base, *base ? "." : "", key);
}

void cc_join_index(char *dst, const char *base, size_t i)
{
	snprintf(dst, KEY_PATH_MAX, "%s[%zu]", base, i);
}

const char *cc_text(const struct ynode *n)
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
/* seq: the injection's sequence number (mokka-ctl), so the same code
 * injected twice is two events. */
static const struct field xid_f[] = { I("code"), U("seq"), END };
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
static const struct field ib_counters_f[] = {
	U("symbol_error"), U("link_error_recovery"), U("link_downed"), U("port_rcv_errors"),
	U("port_rcv_remote_physical_errors"), U("port_rcv_switch_relay_errors"),
	U("port_xmit_discards"), U("port_xmit_constraint_errors"),
	U("port_rcv_constraint_errors"), U("local_link_integrity_errors"),
	U("excessive_buffer_overrun_errors"), U("VL15_dropped"), U("port_xmit_data"),
	U("port_rcv_data"), U("port_xmit_packets"), U("port_rcv_packets"),
	U("port_xmit_wait"), U("unicast_xmit_packets"), U("unicast_rcv_packets"),
	U("multicast_xmit_packets"), U("multicast_rcv_packets"), END };
static const struct field ib_hca_f[] = {
	I("index"), S("port_state"), S("phys_state"), M("counters", ib_counters_f), END };
static const struct field ib_fabric_f[] = { I("leaf_ports"), I("spines"), END };
static const struct field infiniband_f[] = {
	B("enabled"), S("hca_type"), S("fw_version"), S("hw_rev"), S("board_id"),
	S("link_layer"), I("rate_gbps"), S("port_state"), S("phys_state"),
	I("hcas_per_gpu"), I("hca_count"), S("guid_prefix"), S("node_desc_template"),
	/* Mokka extensions */
	M("counters", ib_counters_f), SEQM("hcas", ib_hca_f), M("fabric", ib_fabric_f), END };
static const struct field profile_f[] = {
	S("version"), M("system", system_f), M("device_defaults", device_config_f),
	SEQM("devices", device_override_f), M("nvlink", nvlink_f),
	M("pcie_topology", pcie_topology_f),
	M("infiniband", infiniband_f),
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
		return cc_fail(c, map, path, "expected a mapping, got %s", cc_text(map));
	for (size_t i = 0; i < ytree_map_size(map); i++) {
		const struct ynode *k = ytree_map_key(map, i);
		const struct field *f = find_field(table, k);

		cc_join_key(sub, path, k->str);
		if (!f && c->strict)
			return cc_fail(c, k, sub, "unknown key");
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
		return cc_fail(c, v, path, "'%.64s' is out of range for %s", v->str, want[type]);
	if (rc < 0)
		return cc_fail(c, v, path, "expected %s, got '%.64s'", want[type], cc_text(v));
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
		return cc_fail(c, v, path, "expected a list, got %s", cc_text(v));
	for (size_t i = 0; i < v->n; i++) {
		cc_join_index(item, path, i);
		rc = check_value(c, elem, F_END, sub, v->kids[i], item);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int compile_check_profile(struct cctx *c, const struct ynode *root)
{
	return check_block(c, profile_f, root, "");
}

int compile_check_topology(struct cctx *c, const struct ynode *doc)
{
	return check_block(c, topology_f, doc, "");
}

int compile_check_overrides(const char *name, const char *yaml, size_t len,
			    char *err, size_t errlen)
{
	struct cctx c = { name, err, errlen, true };
	const struct ynode *devs;
	struct ytree_error ye;
	struct ynode *root = NULL;
	char path[KEY_PATH_MAX];
	int rc;

	if (len > COMPILE_MAX_INPUT)
		return cc_fail(&c, NULL, "(document)", "too large (%zu bytes)", len);
	if (ytree_parse(yaml, len, &root, &ye) < 0) {
		snprintf(err, errlen, "%s:%d:%d: yaml: %s", name, ye.line, ye.col, ye.msg);
		return -EINVAL;
	}
	rc = 0;
	if (!ytree_is_null(root) && root->kind != YNODE_MAP)
		rc = cc_fail(&c, root, "(document)", "expected a mapping");
	if (rc == 0 && !ytree_is_null(root) && !ytree_is_null(ytree_map_get(root, "all")))
		rc = check_block(&c, device_config_f, ytree_map_get(root, "all"), "all");
	devs = ytree_is_null(root) ? NULL : ytree_map_get(root, "devices");
	if (rc == 0 && !ytree_is_null(devs) && devs->kind != YNODE_MAP)
		rc = cc_fail(&c, devs, "devices", "expected a mapping");
	for (size_t i = 0; rc == 0 && !ytree_is_null(devs) && i < ytree_map_size(devs); i++) {
		const struct ynode *v = ytree_map_value(devs, i);

		cc_join_key(path, "devices", ytree_map_key(devs, i)->str);
		if (!ytree_is_null(v))
			rc = check_block(&c, device_config_f, v, path);
	}
	ytree_free(root);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Typed extraction.                                                   */

const struct ynode *cc_lookup(const struct ynode *map, const char *dotted)
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

int cc_get_int(struct cctx *c, const struct ynode *n, const char *path,
	       int64_t lo, int64_t hi, int64_t *out)
{
	int rc = ytree_int(n, out);

	if (rc == -EINVAL)
		return cc_fail(c, n, path, "expected an integer, got '%.64s'", cc_text(n));
	if (rc < 0 || *out < lo || *out > hi)
		return cc_fail(c, n, path, "%.64s is out of range (%lld..%lld)", cc_text(n),
			       (long long)lo, (long long)hi);
	return 0;
}

int cc_get_u64(struct cctx *c, const struct ynode *n, const char *path,
	       uint64_t hi, uint64_t *out)
{
	int rc = ytree_uint(n, out);

	if (rc == -EINVAL)
		return cc_fail(c, n, path, "expected a non-negative integer, got '%.64s'",
			       cc_text(n));
	if (rc < 0 || *out > hi)
		return cc_fail(c, n, path, "%.64s is out of range (0..%llu)", cc_text(n),
			       (unsigned long long)hi);
	return 0;
}

/* Copy a scalar into buf; a null or absent node gives "". */
int cc_get_str(struct cctx *c, const struct ynode *n, const char *path,
	       char *buf, size_t size)
{
	buf[0] = '\0';
	if (ytree_is_null(n))
		return 0;
	if (n->kind != YNODE_SCALAR)
		return cc_fail(c, n, path, "expected a string, got %s", cc_text(n));
	if (memchr(n->str, '\0', n->len))
		return cc_fail(c, n, path, "contains a NUL byte");
	if (n->len >= size)
		return cc_fail(c, n, path, "'%.32s...' is too long (%zu bytes, at most %zu)",
			       n->str, n->len, size - 1);
	memcpy(buf, n->str, n->len + 1);
	return 0;
}

void cc_lowercase(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

bool cc_all_chars(const char *s, const char *set)
{
	return s[strspn(s, set)] == '\0';
}


/* A BDF value: lowercased, pattern-checked, safe as a path component. */
int cc_get_bdf(struct cctx *c, const struct ynode *n, const char *path,
	       char *buf, size_t size)
{
	int rc = cc_get_str(c, n, path, buf, size);

	if (rc < 0)
		return rc;
	cc_lowercase(buf);
	if (!state_valid_bdf(buf) || !state_valid_path_component(buf))
		return cc_fail(c, n, path, "invalid PCI address '%.64s' (want dddd:bb:dd.f)",
			       cc_text(n));
	return 0;
}
