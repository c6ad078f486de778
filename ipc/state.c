/* The compiled state as JSON.  Field tables drive both directions so a
 * field is added in one place. */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "ipc/state.h"
#include "ipc/state_fields.h"

static const struct field device_fields[] = {
	FI(struct state_device, index, F_INT),
	FI(struct state_device, minor, F_INT),
	FS(struct state_device, uuid),
	FS(struct state_device, serial),
	FS(struct state_device, name),
	FS(struct state_device, architecture),
	FS(struct state_device, bus_id),
	FI(struct state_device, vendor_id, F_U16),
	FI(struct state_device, device_id, F_U16),
	FI(struct state_device, subsys_vendor_id, F_U16),
	FI(struct state_device, subsys_device_id, F_U16),
	FI(struct state_device, numa_node, F_INT),
	FI(struct state_device, root, F_INT),
	FN(struct state_device, "pcie_max_gen", pcie.max_gen, F_INT),
	FN(struct state_device, "pcie_max_width", pcie.max_width, F_INT),
	FN(struct state_device, "pcie_cur_gen", pcie.cur_gen, F_INT),
	FN(struct state_device, "pcie_cur_width", pcie.cur_width, F_INT),
	FI(struct state_device, memory_total_bytes, F_U64),
	FI(struct state_device, bar1_total_bytes, F_U64),
};

static const struct field root_fields[] = {
	FS(struct state_root_complex, id),
	FI(struct state_root_complex, numa_node, F_INT),
	FS(struct state_root_complex, cpu_affinity),
};

static const struct field fabric_fields[] = {
	FI(struct state_fabric, enabled, F_BOOL),
	FS(struct state_fabric, state_dir),
	FI(struct state_fabric, init_delay_ms, F_LONG),
	FS(struct state_fabric, cluster_uuid),
	FI(struct state_fabric, clique_id, F_U32),
	FI(struct state_fabric, links_per_gpu, F_INT),
	FI(struct state_fabric, bandwidth_per_link_mbps, F_LONG),
};

const char *const state_ib_counter_names[STATE_IB_COUNTERS] = {
	"symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
	"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
	"port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
	"local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped",
	"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets",
	"port_xmit_wait", "unicast_xmit_packets", "unicast_rcv_packets",
	"multicast_xmit_packets", "multicast_rcv_packets",
};

static const struct field ib_fields[] = {
	FI(struct state_ib, enabled, F_BOOL),
	FS(struct state_ib, hca_type),
	FI(struct state_ib, device_id, F_U16),
	FS(struct state_ib, fw_version),
	FS(struct state_ib, hw_rev),
	FS(struct state_ib, board_id),
	FS(struct state_ib, link_layer),
	FI(struct state_ib, rate_gbps, F_INT),
	FI(struct state_ib, sm_lid, F_U32),
	FI(struct state_ib, cap_mask, F_U32),
	FI(struct state_ib, leaf_ports, F_INT),
	FI(struct state_ib, spines, F_INT),
	FI(struct state_ib, tcp_port, F_INT),
	FS(struct state_ib, listen),
	FS(struct state_ib, peers),
	FS(struct state_ib, socket),
};

static const struct field hca_fields[] = {
	FI(struct state_hca, index, F_INT),
	FS(struct state_hca, name),
	FS(struct state_hca, bus_id),
	FI(struct state_hca, root, F_INT),
	FI(struct state_hca, numa_node, F_INT),
	FI(struct state_hca, node_guid, F_U64),
	FI(struct state_hca, port_guid, F_U64),
	FI(struct state_hca, lid, F_U32),
	FI(struct state_hca, port_state, F_INT),
	FI(struct state_hca, phys_state, F_INT),
	FS(struct state_hca, node_desc),
};

static const struct field cri_fields[] = {
	FS(struct state_cri, runtime),
	FS(struct state_cri, restart),
	FS(struct state_cri, config),
	FS(struct state_cri, config_dir),
	FS(struct state_cri, systemd_unit),
	FI(struct state_cri, nri, F_BOOL),
	FS(struct state_cri, nri_socket),
	FS(struct state_cri, nri_lock),
	FS(struct state_cri, nri_stagedz),
};

static const struct field imex_fields[] = {
	FI(struct state_imex, enabled, F_BOOL),
	FI(struct state_imex, channel_count, F_INT),
	FI(struct state_imex, channel_major, F_INT),
	FI(struct state_imex, caps_major, F_INT),
	FS(struct state_imex, archive),
	FS(struct state_imex, checksums),
	FI(struct state_imex, from_profile, F_BOOL),
	FI(struct state_imex, download, F_BOOL),
	FS(struct state_imex, download_url),
	FS(struct state_imex, download_sha256),
	FS(struct state_imex, download_version),
	FS(struct state_imex, download_arch),
};

static const struct field top_fields[] = {
	FI(struct state, generation, F_U64),
	FS(struct state, node_name),
	FS(struct state, mock_root),
	FS(struct state, driver_version),
	FS(struct state, nvml_version),
	FS(struct state, cuda_version),
	FI(struct state, cores_per_numa, F_INT),
	FS(struct state, nvidia_smi_src),
	FS(struct state, kernel_log),
};

void state_init(struct state *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->mock_root, sizeof(s->mock_root), "/var/lib/nvml-mock");
}

void state_free(struct state *s)
{
	free(s->topology_doc);
	free(s->profile_json);
	free(s->profile_doc);
	s->profile_doc = NULL;
	s->profile_len = 0;
	s->topology_doc = NULL;
	s->profile_json = NULL;
	s->topology_len = 0;
}

int state_put_fields(cJSON *obj, const void *base, const struct field *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *p = (const char *)base + f[i].off;
		cJSON *v;
		char num[32];

		switch (f[i].type) {
		case F_INT: v = cJSON_CreateNumber(*(const int *)p); break;
		case F_U16: v = cJSON_CreateNumber(*(const uint16_t *)p); break;
		case F_U32: v = cJSON_CreateNumber(*(const uint32_t *)p); break;
		case F_LONG: v = cJSON_CreateNumber((double)*(const long *)p); break;
		case F_BOOL: v = cJSON_CreateBool(*(const bool *)p); break;
		case F_STR: v = cJSON_CreateString(p); break;
		case F_U64:
			/* doubles lose precision above 2^53: carry as a string */
			snprintf(num, sizeof(num), "%llu", (unsigned long long)*(const uint64_t *)p);
			v = cJSON_CreateString(num);
			break;
		default: v = NULL;
		}
		if (!v || !cJSON_AddItemToObject(obj, f[i].key, v)) {
			cJSON_Delete(v);
			return -ENOMEM;
		}
	}
	return 0;
}

int state_get_fields(const cJSON *obj, void *base, const struct field *f, size_t n,
		      const char *where, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		char *p = (char *)base + f[i].off;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, f[i].key);
		int ok;

		if (!v) {
			snprintf(err, errlen, "state: %s.%s: missing", where, f[i].key);
			return -EINVAL;
		}
		switch (f[i].type) {
		case F_BOOL:
			ok = cJSON_IsBool(v);
			if (ok)
				*(bool *)p = cJSON_IsTrue(v);
			break;
		case F_STR:
			ok = cJSON_IsString(v) && strlen(v->valuestring) < f[i].size;
			if (ok)
				memcpy(p, v->valuestring, strlen(v->valuestring) + 1);
			break;
		case F_U64: {
			char *end;
			/* digits only: strtoull would take "-1", " 1" or "+1" */
			ok = cJSON_IsString(v) && isdigit((unsigned char)v->valuestring[0]);
			if (ok) {
				errno = 0;
				unsigned long long x = strtoull(v->valuestring, &end, 10);
				ok = !errno && *end == '\0' && end != v->valuestring;
				*(uint64_t *)p = x;
			}
			break;
		}
		default:
			ok = cJSON_IsNumber(v);
			if (!ok)
				break;
			if (f[i].type == F_INT)
				*(int *)p = v->valueint;
			else if (f[i].type == F_U16)
				ok = v->valuedouble >= 0 && v->valuedouble <= 0xffff &&
				     (*(uint16_t *)p = (uint16_t)v->valuedouble, 1);
			else if (f[i].type == F_U32)
				ok = v->valuedouble >= 0 && v->valuedouble <= 4294967295.0 &&
				     (*(uint32_t *)p = (uint32_t)v->valuedouble, 1);
			else
				*(long *)p = (long)v->valuedouble;
		}
		if (!ok) {
			snprintf(err, errlen, "state: %s.%s: wrong type or range", where, f[i].key);
			return -EINVAL;
		}
	}
	return 0;
}

/* Counters travel as decimal strings (u64). */
static int put_ib(cJSON *root, const struct state_ib *ib)
{
	cJSON *o = cJSON_AddObjectToObject(root, "ib"), *arr, *h, *c, *v;
	char num[32];

	if (!o || state_put_fields(o, ib, ib_fields, NFIELDS(ib_fields)) < 0 ||
	    !(arr = cJSON_AddArrayToObject(o, "hcas")))
		return -ENOMEM;
	for (int i = 0; i < ib->num_hcas; i++) {
		if (!(h = cJSON_CreateObject()))
			return -ENOMEM;
		cJSON_AddItemToArray(arr, h);
		if (state_put_fields(h, &ib->hcas[i], hca_fields, NFIELDS(hca_fields)) < 0 ||
		    !(c = cJSON_AddArrayToObject(h, "counters")))
			return -ENOMEM;
		for (int k = 0; k < STATE_IB_COUNTERS; k++) {
			snprintf(num, sizeof(num), "%llu", (unsigned long long)ib->hcas[i].counters[k]);
			if (!(v = cJSON_CreateString(num)))
				return -ENOMEM;
			cJSON_AddItemToArray(c, v);
		}
	}
	return 0;
}

static int get_ib(const cJSON *root, struct state_ib *ib, char *err, size_t errlen)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "ib"), *arr, *it, *c, *v;
	int i = 0;

	if (state_get_fields(o, ib, ib_fields, NFIELDS(ib_fields), "ib", err, errlen) < 0)
		return -EINVAL;
	arr = cJSON_GetObjectItemCaseSensitive(o, "hcas");
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > STATE_MAX_HCAS) {
		snprintf(err, errlen, "state: ib.hcas: not an array of at most %d", STATE_MAX_HCAS);
		return -EINVAL;
	}
	cJSON_ArrayForEach(it, arr) {
		struct state_hca *h = &ib->hcas[i++];
		int k = 0;

		if (state_get_fields(it, h, hca_fields, NFIELDS(hca_fields), "ib.hcas[]", err, errlen) < 0)
			return -EINVAL;
		if (!state_valid_bdf(h->bus_id) || !state_valid_path_component(h->name)) {
			snprintf(err, errlen, "state: ib.hcas[%d]: invalid name or bus_id", i - 1);
			return -EINVAL;
		}
		c = cJSON_GetObjectItemCaseSensitive(it, "counters");
		if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) != STATE_IB_COUNTERS) {
			snprintf(err, errlen, "state: ib.hcas[%d].counters: want %d values", i - 1,
				 STATE_IB_COUNTERS);
			return -EINVAL;
		}
		cJSON_ArrayForEach(v, c) {
			char *end;

			if (!cJSON_IsString(v) || !isdigit((unsigned char)v->valuestring[0])) {
				snprintf(err, errlen, "state: ib.hcas[%d].counters: not decimal", i - 1);
				return -EINVAL;
			}
			h->counters[k++] = strtoull(v->valuestring, &end, 10);
		}
	}
	ib->num_hcas = i;
	return 0;
}

int state_encode(const struct state *s, char **out, size_t *len)
{
	cJSON *root = cJSON_CreateObject(), *arr, *o;
	int r = -ENOMEM;

	if (!root)
		return -ENOMEM;
	if (!cJSON_AddNumberToObject(root, "state_version", STATE_VERSION) ||
	    state_put_fields(root, s, top_fields, NFIELDS(top_fields)) < 0)
		goto out;
	if (!(arr = cJSON_AddArrayToObject(root, "devices")))
		goto out;
	for (int i = 0; i < s->num_devices; i++) {
		if (!(o = cJSON_CreateObject()))
			goto out;
		cJSON_AddItemToArray(arr, o);
		if (state_put_fields(o, &s->devices[i], device_fields, NFIELDS(device_fields)) < 0)
			goto out;
	}
	if (!(arr = cJSON_AddArrayToObject(root, "roots")))
		goto out;
	for (int i = 0; i < s->num_roots; i++) {
		if (!(o = cJSON_CreateObject()))
			goto out;
		cJSON_AddItemToArray(arr, o);
		if (state_put_fields(o, &s->roots[i], root_fields, NFIELDS(root_fields)) < 0)
			goto out;
	}
	if (!(o = cJSON_AddObjectToObject(root, "fabric")) ||
	    state_put_fields(o, &s->fabric, fabric_fields, NFIELDS(fabric_fields)) < 0)
		goto out;
	if (put_ib(root, &s->ib) < 0)
		goto out;
	if (!(o = cJSON_AddObjectToObject(root, "cri")) ||
	    state_put_fields(o, &s->cri, cri_fields, NFIELDS(cri_fields)) < 0)
		goto out;
	if (!(o = cJSON_AddObjectToObject(root, "imex")) ||
	    state_put_fields(o, &s->imex, imex_fields, NFIELDS(imex_fields)) < 0)
		goto out;
	if (state_pci_encode(root, &s->pci) < 0)
		goto out;
	if (s->topology_doc) {
		if (!cJSON_AddStringToObject(root, "topology_doc", s->topology_doc))
			goto out;
	} else if (!cJSON_AddNullToObject(root, "topology_doc"))
		goto out;
	if (s->profile_doc) {
		if (!cJSON_AddStringToObject(root, "profile_doc", s->profile_doc))
			goto out;
	} else if (!cJSON_AddNullToObject(root, "profile_doc"))
		goto out;
	if (s->profile_json) {
		cJSON *p = cJSON_Parse(s->profile_json);
		if (!p) {
			r = -EINVAL;
			goto out;
		}
		cJSON_AddItemToObject(root, "profile", p);
	}
	*out = cJSON_PrintUnformatted(root);
	if (!*out)
		goto out;
	*len = strlen(*out);
	r = 0;
out:
	cJSON_Delete(root);
	return r;
}

/* One array of records ("devices", "roots"): at most max of them, each read
 * through its field table into base[i] (elements size bytes apart). */
static int get_records(const cJSON *root, const char *key, void *base, size_t size, int max,
		       const struct field *f, size_t nf, int *count, char *err, size_t errlen)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key), *it;
	char where[32];
	int i = 0;

	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > max) {
		snprintf(err, errlen, "state: %s: not an array of at most %d", key, max);
		return -EINVAL;
	}
	snprintf(where, sizeof(where), "%s[]", key);
	cJSON_ArrayForEach(it, arr) {
		if (state_get_fields(it, (char *)base + (size_t)i++ * size, f, nf, where, err,
				     errlen) < 0)
			return -EINVAL;
	}
	*count = i;
	return 0;
}

/* Devices and root complexes: the records, then their ids and links. */
static int get_topology(const cJSON *root, struct state *s, char *err, size_t errlen)
{
	if (get_records(root, "devices", s->devices, sizeof(s->devices[0]), STATE_MAX_DEVICES,
			device_fields, NFIELDS(device_fields), &s->num_devices, err, errlen) < 0 ||
	    get_records(root, "roots", s->roots, sizeof(s->roots[0]), STATE_MAX_ROOTS,
			root_fields, NFIELDS(root_fields), &s->num_roots, err, errlen) < 0)
		return -EINVAL;
	for (int i = 0; i < s->num_devices; i++) {
		const struct state_device *d = &s->devices[i];
		if (!state_valid_bdf(d->bus_id) || d->root < -1 || d->root >= s->num_roots) {
			snprintf(err, errlen, "state: devices[%d]: invalid bus_id or root", i);
			return -EINVAL;
		}
	}
	for (int i = 0; i < s->num_roots; i++)
		if (!state_valid_root_id(s->roots[i].id)) {
			snprintf(err, errlen, "state: roots[%d]: invalid id", i);
			return -EINVAL;
		}
	return 0;
}

/* The per-service sections; the HCAs' roots are checked against the topology. */
static int get_sections(const cJSON *root, struct state *s, char *err, size_t errlen)
{
	if (state_get_fields(cJSON_GetObjectItemCaseSensitive(root, "fabric"), &s->fabric,
			     fabric_fields, NFIELDS(fabric_fields), "fabric", err, errlen) < 0 ||
	    get_ib(root, &s->ib, err, errlen) < 0 ||
	    state_get_fields(cJSON_GetObjectItemCaseSensitive(root, "cri"), &s->cri,
			     cri_fields, NFIELDS(cri_fields), "cri", err, errlen) < 0 ||
	    state_get_fields(cJSON_GetObjectItemCaseSensitive(root, "imex"), &s->imex,
			     imex_fields, NFIELDS(imex_fields), "imex", err, errlen) < 0)
		return -EINVAL;
	for (int i = 0; i < s->ib.num_hcas; i++)
		if (s->ib.hcas[i].root < -1 || s->ib.hcas[i].root >= s->num_roots) {
			snprintf(err, errlen, "state: ib.hcas[%d]: invalid root", i);
			return -EINVAL;
		}
	return 0;
}

/* An optional string member copied out; absent or not a string leaves *out alone. */
static int get_doc(const cJSON *root, const char *key, char **out, size_t *len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

	if (!cJSON_IsString(v))
		return 0;
	if (!(*out = strdup(v->valuestring)))
		return -ENOMEM;
	*len = strlen(*out);
	return 0;
}

/* The source documents the state was compiled from, carried as they are. */
static int get_docs(const cJSON *root, struct state *s)
{
	const cJSON *v;

	if (get_doc(root, "topology_doc", &s->topology_doc, &s->topology_len) < 0 ||
	    get_doc(root, "profile_doc", &s->profile_doc, &s->profile_len) < 0)
		return -ENOMEM;
	v = cJSON_GetObjectItemCaseSensitive(root, "profile");
	if (v && !(s->profile_json = cJSON_PrintUnformatted(v)))
		return -ENOMEM;
	return 0;
}

int state_decode(const char *json, size_t len, struct state *s, char *err, size_t errlen)
{
	cJSON *root = cJSON_ParseWithLength(json, len), *v;
	int r = -EINVAL;

	state_init(s);
	if (!root) {
		snprintf(err, errlen, "state: not valid JSON");
		return -EINVAL;
	}
	v = cJSON_GetObjectItemCaseSensitive(root, "state_version");
	if (!cJSON_IsNumber(v) || v->valuedouble != STATE_VERSION)
		snprintf(err, errlen, "state: unsupported state_version");
	else if (state_get_fields(root, s, top_fields, NFIELDS(top_fields), "state", err,
				  errlen) == 0 &&
		 get_topology(root, s, err, errlen) == 0 &&
		 get_sections(root, s, err, errlen) == 0 &&
		 state_pci_decode(root, &s->pci, err, errlen) == 0)
		r = get_docs(root, s);
	cJSON_Delete(root);
	if (r)
		state_free(s);
	return r;
}

int state_ib_encode(const char *node_name, const struct state_ib *ib, char **out, size_t *len)
{
	cJSON *root = cJSON_CreateObject();
	int r = -ENOMEM;

	if (root && cJSON_AddStringToObject(root, "node_name", node_name) &&
	    put_ib(root, ib) == 0 && (*out = cJSON_PrintUnformatted(root))) {
		*len = strlen(*out);
		r = 0;
	}
	cJSON_Delete(root);
	return r;
}

int state_ib_decode(const char *json, size_t len, char *node_name, struct state_ib *ib,
		    char *err, size_t errlen)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	const cJSON *n;
	int r = -EINVAL;

	memset(ib, 0, sizeof(*ib));
	if (!root) {
		snprintf(err, errlen, "ib config: not valid JSON");
		return -EINVAL;
	}
	n = cJSON_GetObjectItemCaseSensitive(root, "node_name");
	if (!cJSON_IsString(n) || strlen(n->valuestring) >= STATE_NAME_MAX)
		snprintf(err, errlen, "ib config: node_name: missing or too long");
	else if (get_ib(root, ib, err, errlen) == 0) {
		strcpy(node_name, n->valuestring);
		r = 0;
	}
	cJSON_Delete(root);
	return r;
}

static bool hexn(const char *s, int n)
{
	for (int i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

bool state_valid_bdf(const char *s)
{
	return s && strlen(s) == 12 && hexn(s, 4) && s[4] == ':' && hexn(s + 5, 2) &&
	       s[7] == ':' && hexn(s + 8, 2) && s[10] == '.' && s[11] >= '0' && s[11] <= '7' &&
	       /* device number is 5 bits */
	       strtoul((char[3]){ s[8], s[9], 0 }, NULL, 16) < 32;
}

bool state_valid_root_id(const char *s)
{
	return s && strlen(s) == 10 && strncmp(s, "pci", 3) == 0 && hexn(s + 3, 4) &&
	       s[7] == ':' && hexn(s + 8, 2);
}

bool state_valid_path_component(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n > 0 && n <= 255 && !strchr(s, '/') && strcmp(s, ".") != 0 &&
	       strcmp(s, "..") != 0;
}
