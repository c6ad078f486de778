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
#include "overrides/overrides_schema.h"

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

/* Rows, shorthands and DeviceConfig's table are the overrides module's:
 * the overrides document is made of DeviceConfig subtrees. */
static const struct ovr_field device_override_f[] = {
	I("index"), S("uuid"), I("minor_number"), I("grace_cpu_pair"),
	EXTENDS(ovr_device_config) };
static const struct ovr_field system_f[] = {
	S("driver_version"), S("nvml_version"), S("cuda_version"),
	I("cuda_version_major"), I("cuda_version_minor"), I("num_devices"), END };
static const struct ovr_field nvlink_link_f[] = {
	I("link"), S("state"), S("remote_device_type"), S("remote_pci_bus_id"),
	I("remote_index"), END };
static const struct ovr_field nvlink_switch_f[] = {
	S("bdf"), S("uuid"), U("device_id"), END };
static const struct ovr_field nvlink_defaults_f[] = {
	S("state"), FL("duty_cycle"), I("counter_seed"), FL("error_rate"), END };
static const struct ovr_field nvlink_device_links_f[] = {
	I("index"), SEQM("links", nvlink_link_f), END };
static const struct ovr_field nvlink_f[] = {
	B("multi_node"),	/* compile_imex.c: IMEX on (GB200/GB300 NVL racks) */
	I("version"), I("links_per_gpu"), U("bandwidth_per_link_mbps"),
	B("c2c_enabled"), ANY("bw_mode"), SEQM("links", nvlink_link_f),
	SEQM("switches", nvlink_switch_f), M("defaults", nvlink_defaults_f),
	SEQM("device_links", nvlink_device_links_f), END };
static const struct ovr_field root_complex_f[] = {
	S("id"), I("numa_node"), SEQ("devices", OVR_STR), S("cpu_affinity"), END };
/* Mokka: the GPUs' SR-IOV capability (compile_sriov.c). */
static const struct ovr_field gpu_sriov_f[] = {
	U("total_vfs"), U("vf_offset"), U("vf_stride"), U("vf_device_id"), END };
static const struct ovr_field pcie_topology_f[] = {
	SEQM("root_complexes", root_complex_f), I("cores_per_numa"),
	B("iommu"),	/* Mokka: the node has an IOMMU (mokka-pcifs, vfio-pci) */
	M("gpu_sriov", gpu_sriov_f),
	END };
/* Mokka: other vendors' accelerators (compile_accel.c). */
static const struct ovr_field accel_f[] = {
	S("name"), U("vendor_id"), U("device_id"), U("subsystem_vendor_id"),
	U("subsystem_device_id"), U("class"), S("driver"), U("count"), I("numa_node"),
	SEQ("bus_ids", OVR_STR), END };
static const struct ovr_field ib_counters_f[] = {
	U("symbol_error"), U("link_error_recovery"), U("link_downed"), U("port_rcv_errors"),
	U("port_rcv_remote_physical_errors"), U("port_rcv_switch_relay_errors"),
	U("port_xmit_discards"), U("port_xmit_constraint_errors"),
	U("port_rcv_constraint_errors"), U("local_link_integrity_errors"),
	U("excessive_buffer_overrun_errors"), U("VL15_dropped"), U("port_xmit_data"),
	U("port_rcv_data"), U("port_xmit_packets"), U("port_rcv_packets"),
	U("port_xmit_wait"), U("unicast_xmit_packets"), U("unicast_rcv_packets"),
	U("multicast_xmit_packets"), U("multicast_rcv_packets"), END };
static const struct ovr_field ib_hca_f[] = {
	I("index"), S("port_state"), S("phys_state"), M("counters", ib_counters_f), END };
static const struct ovr_field ib_fabric_f[] = { I("leaf_ports"), I("spines"), END };
static const struct ovr_field infiniband_f[] = {
	B("enabled"), S("hca_type"), S("fw_version"), S("hw_rev"), S("board_id"),
	S("link_layer"), I("rate_gbps"), S("port_state"), S("phys_state"),
	I("hcas_per_gpu"), I("hca_count"), S("guid_prefix"), S("node_desc_template"),
	/* Mokka extensions */
	M("counters", ib_counters_f), SEQM("hcas", ib_hca_f), M("fabric", ib_fabric_f), END };
static const struct ovr_field profile_f[] = {
	S("version"), M("system", system_f), M("device_defaults", ovr_device_config),
	SEQM("devices", device_override_f), M("nvlink", nvlink_f),
	M("pcie_topology", pcie_topology_f),
	M("infiniband", infiniband_f),
	SEQM("accelerators", accel_f),
	S("node_identity"),	/* Mokka: pinned | derived (identity.h) */
	END };

static const struct ovr_field clique_f[] = { U("id"), SEQ("nodes", OVR_STR), END };
static const struct ovr_field domain_f[] = {
	S("name"), S("uuid"), SEQM("cliques", clique_f), END };
static const struct ovr_field topology_f[] = {
	S("version"), SEQM("domains", domain_f), END };

static int check_value(struct cctx *c, enum ovr_ftype type, enum ovr_ftype elem,
		       const struct ovr_field *sub, const struct ynode *v,
		       const char *path);

static int check_block(struct cctx *c, const struct ovr_field *table,
		       const struct ynode *map, const char *path)
{
	char sub[KEY_PATH_MAX];
	int rc;

	if (map->kind != YNODE_MAP)
		return cc_fail(c, map, path, "expected a mapping, got %s", cc_text(map));
	for (size_t i = 0; i < ytree_map_size(map); i++) {
		const struct ynode *k = ytree_map_key(map, i);
		const struct ovr_field *f = ovr_field_find(table, k->str, k->len);

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

static int check_scalar(struct cctx *c, enum ovr_ftype type, const struct ynode *v,
			const char *path)
{
	static const char *const want[] = {
		[OVR_STR] = "a scalar", [OVR_INT] = "an integer",
		[OVR_UINT] = "a non-negative integer", [OVR_BOOL] = "true or false",
		[OVR_FLOAT] = "a number" };
	union { int64_t i; uint64_t u; bool b; double d; } tmp;
	int rc = v->kind == YNODE_SCALAR ? 0 : -EINVAL;

	if (rc == 0 && type == OVR_INT)
		rc = ytree_int(v, &tmp.i);
	else if (rc == 0 && type == OVR_UINT)
		rc = ytree_uint(v, &tmp.u);
	else if (rc == 0 && type == OVR_BOOL)
		rc = ytree_bool(v, &tmp.b);
	else if (rc == 0 && type == OVR_FLOAT)
		rc = ytree_float(v, &tmp.d);
	if (rc == -ERANGE)
		return cc_fail(c, v, path, "'%.64s' is out of range for %s", v->str, want[type]);
	if (rc < 0)
		return cc_fail(c, v, path, "expected %s, got '%.64s'", want[type], cc_text(v));
	return 0;
}

static int check_value(struct cctx *c, enum ovr_ftype type, enum ovr_ftype elem,
		       const struct ovr_field *sub, const struct ynode *v,
		       const char *path)
{
	char item[KEY_PATH_MAX];
	int rc;

	if (type == OVR_ANY || ytree_is_null(v))
		return 0;	/* absent and null both mean "unset" */
	if (type == OVR_MAP)
		return check_block(c, sub, v, path);
	if (type != OVR_SEQ)
		return check_scalar(c, type, v, path);
	if (v->kind != YNODE_SEQ)
		return cc_fail(c, v, path, "expected a list, got %s", cc_text(v));
	for (size_t i = 0; i < v->n; i++) {
		cc_join_index(item, path, i);
		rc = check_value(c, elem, OVR_END, sub, v->kids[i], item);
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
