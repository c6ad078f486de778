/* Profile compiler, InfiniBand: the reference's `infiniband:` block (plus
 * Mokka's per-HCA overrides, counters and fabric shape) -> struct state_ib.
 *
 * Identities follow the reference (IB.md §1.3) so a node keeps the GUIDs
 * and LIDs it had under the Go implementation:
 *   nid   = FNV-1a-32(node name)
 *   ident = ((nid & 0x7fffff) << 9) | (idx << 1)
 *   node GUID = first 8 hex digits of guid_prefix << 32 | ident; port = | 1
 *   LID   = 0x100 + (nid mod floor(0xbf00 / count)) * count + idx
 * Each HCA sits on a free PCI bus next to the GPU it serves (same root
 * complex, so the same NUMA node), as on a DGX-style board. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/compile.h"
#include "profile/compile_internal.h"
#include "profile/identity.h"

#define IB_DEFAULT_PORT 18515

static const char *const port_states[] = {
	[1] = "DOWN", [2] = "INIT", [3] = "ARMED", [4] = "ACTIVE", [5] = "ACTIVE_DEFER",
};
static const struct { const char *name; int v; } phys_states[] = {
	{ "Sleep", 1 }, { "Polling", 2 }, { "Disabled", 3 },
	{ "PortConfigurationTraining", 4 }, { "Training", 4 }, { "LinkUp", 5 },
	{ "LinkErrorRecovery", 6 }, { "Phy Test", 7 }, { "PhyTest", 7 },
};

uint32_t compile_ib_fnv1a32(const char *s)
{
	uint32_t h = 0x811c9dc5u;

	if (!s || !*s)
		return 0;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619u;
	}
	return h;
}

static int get_port_state(struct cctx *c, const struct ynode *n, const char *path, int *out)
{
	char buf[32];
	int rc = cc_get_str(c, n, path, buf, sizeof(buf));

	if (rc < 0 || !buf[0])
		return rc;
	for (int i = 1; i <= 5; i++)
		if (!strcasecmp(buf, port_states[i])) {
			*out = i;
			return 0;
		}
	return cc_fail(c, n, path, "unknown port state '%s' (DOWN, INIT, ARMED, ACTIVE, "
		       "ACTIVE_DEFER)", buf);
}

static int get_phys_state(struct cctx *c, const struct ynode *n, const char *path, int *out)
{
	char buf[32];
	int rc = cc_get_str(c, n, path, buf, sizeof(buf));

	if (rc < 0 || !buf[0])
		return rc;
	for (size_t i = 0; i < sizeof(phys_states) / sizeof(phys_states[0]); i++)
		if (!strcasecmp(buf, phys_states[i].name)) {
			*out = phys_states[i].v;
			return 0;
		}
	return cc_fail(c, n, path, "unknown physical state '%s' (Sleep, Polling, Disabled, "
		       "Training, LinkUp, LinkErrorRecovery, Phy Test)", buf);
}

static int get_counters(struct cctx *c, const struct ynode *map, const char *base,
			uint64_t *ctr)
{
	char path[KEY_PATH_MAX];
	uint64_t u;
	int rc;

	if (ytree_is_null(map))
		return 0;
	for (int k = 0; k < STATE_IB_COUNTERS; k++) {
		const struct ynode *n = cc_lookup(map, state_ib_counter_names[k]);

		if (ytree_is_null(n))
			continue;
		cc_join_key(path, base, state_ib_counter_names[k]);
		if ((rc = cc_get_u64(c, n, path, UINT64_MAX, &u)) < 0)
			return rc;
		ctr[k] = u;
	}
	return 0;
}

static int get_text(struct cctx *c, const struct ynode *ib, const char *key,
		    const char *def, const char *allowed, char *buf, size_t size)
{
	char path[KEY_PATH_MAX];
	const struct ynode *n = cc_lookup(ib, key);
	int rc;

	cc_join_key(path, "infiniband", key);
	if ((rc = cc_get_str(c, n, path, buf, size)) < 0)
		return rc;
	if (!buf[0])
		snprintf(buf, size, "%s", def);
	if (!cc_all_chars(buf, allowed))
		return cc_fail(c, n, path, "'%s' has characters outside [%s]", buf, allowed);
	return 0;
}

#define ALNUM "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

/* {node_name} and {idx} substituted; the result is the 64-byte NodeDescription. */
static int node_desc(struct cctx *c, const struct ynode *at, const char *tmpl,
		     const char *node, int idx, char *out, size_t size)
{
	size_t o = 0;
	char num[16];

	for (const char *p = tmpl; *p;) {
		const char *ins = NULL;

		if (!strncmp(p, "{node_name}", 11)) {
			ins = node;
			p += 11;
		} else if (!strncmp(p, "{idx}", 5)) {
			snprintf(num, sizeof(num), "%d", idx);
			ins = num;
			p += 5;
		}
		if (ins) {
			size_t n = strlen(ins);
			if (o + n >= size)
				goto toolong;
			memcpy(out + o, ins, n);
			o += n;
			continue;
		}
		if (o + 1 >= size)
			goto toolong;
		out[o++] = *p++;
	}
	out[o] = '\0';
	return 0;
toolong:
	return cc_fail(c, at, "infiniband.node_desc_template",
		       "node description for HCA %d is longer than %zu bytes", idx, size - 1);
}

static int bus_of(const char *bdf)
{
	return (int)strtol(bdf + 5, NULL, 16);
}

/* Buses the profile already uses: GPUs and NVSwitches. */
static void used_buses(const struct ynode *root, const struct state *s, unsigned char used[256])
{
	const struct ynode *sw = cc_lookup(root, "nvlink.switches");

	memset(used, 0, 256);
	used[0] = 1;
	for (int i = 0; i < s->num_devices; i++)
		used[bus_of(s->devices[i].bus_id)] = 1;
	for (size_t i = 0; !ytree_is_null(sw) && i < sw->n; i++) {
		const struct ynode *b = cc_lookup(sw->kids[i], "bdf");
		if (!ytree_is_null(b) && b->kind == YNODE_SCALAR && b->len >= 12 && b->str[4] == ':')
			used[bus_of(b->str) & 0xff] = 1;
	}
}

static int place_hcas(struct cctx *c, const struct ynode *root, struct state *s,
		      int per_gpu)
{
	struct state_ib *ib = &s->ib;
	unsigned char used[256];

	used_buses(root, s, used);
	for (int i = 0; i < ib->num_hcas; i++) {
		struct state_hca *h = &ib->hcas[i];
		const struct state_device *g = NULL;
		char domain[5] = "0000";
		int bus = 0x80;

		if (s->num_devices > 0) {
			int gi = ib->num_hcas == s->num_devices * per_gpu
				 ? i / per_gpu : i * s->num_devices / ib->num_hcas;
			g = &s->devices[gi % s->num_devices];
			memcpy(domain, g->bus_id, 4);
			bus = bus_of(g->bus_id) + 1;
			/* Several HCAs per GPU: one multi-port adapter, a physical
			 * function per port on one bus (xx:00.0, xx:00.1, ...), as
			 * a dual- or quad-port ConnectX shows, not a bus each. */
			if (per_gpu > 1 && ib->num_hcas == s->num_devices * per_gpu &&
			    i % per_gpu > 0) {
				const struct state_hca *first = &ib->hcas[i - i % per_gpu];
				snprintf(h->bus_id, sizeof(h->bus_id), "%.10s.%x", first->bus_id,
					 i % per_gpu);
				h->root = first->root;
				h->numa_node = first->numa_node;
				continue;
			}
		}
		for (int tries = 0; tries < 256 && used[bus & 0xff]; tries++)
			bus = (bus + 1) & 0xff;
		if (used[bus & 0xff])
			return cc_fail(c, cc_lookup(root, "infiniband"), "infiniband",
				       "no free PCI bus left for HCA %d", i);
		used[bus] = 1;
		snprintf(h->bus_id, sizeof(h->bus_id), "%s:%02x:00.0", domain, bus);
		h->root = g ? g->root : (s->num_roots ? 0 : -1);
		h->numa_node = g ? g->numa_node : (s->num_roots ? s->roots[0].numa_node : -1);
	}
	return 0;
}

static int compile_ib_opts(struct cctx *c, const struct compile_opts *o, struct state_ib *ib,
			   const char *mock_root)
{
	ib->tcp_port = o->ib_port > 0 ? o->ib_port : IB_DEFAULT_PORT;
	if (ib->tcp_port > 65535)
		return cc_fail(c, NULL, "ib_port", "%d is not a TCP port", ib->tcp_port);
	if (o->ib_peers && strlen(o->ib_peers) >= sizeof(ib->peers))
		return cc_fail(c, NULL, "ib_peers", "list too long (at most %zu bytes)",
			       sizeof(ib->peers) - 1);
	snprintf(ib->peers, sizeof(ib->peers), "%s", o->ib_peers ? o->ib_peers : "");
	/* The relay listens when asked, or as soon as there are peers. */
	snprintf(ib->listen, sizeof(ib->listen), "%s",
		 o->ib_listen ? o->ib_listen : ib->peers[0] ? "0.0.0.0" : "");
	if (o->ib_socket) {
		if (o->ib_socket[0] != '/' || strstr(o->ib_socket, "..") ||
		    strlen(o->ib_socket) >= sizeof(ib->socket))
			return cc_fail(c, NULL, "ib_socket", "'%.64s' must be an absolute path "
				       "without '..', shorter than %zu bytes", o->ib_socket,
				       sizeof(ib->socket));
		snprintf(ib->socket, sizeof(ib->socket), "%s", o->ib_socket);
	} else if ((size_t)snprintf(ib->socket, sizeof(ib->socket), "%s/run/mock-ib.sock",
				    mock_root) >= sizeof(ib->socket))
		return cc_fail(c, NULL, "ib_socket", "mock root too long");
	return 0;
}

/* What every HCA starts from before its `hcas:` entry, if any, applies. */
struct hca_defaults {
	char prefix[64];	/* guid_prefix, then its first 8 hex digits */
	char tmpl[128];		/* node_desc_template */
	int port_state, phys_state;
	uint64_t counters[STATE_IB_COUNTERS];
};

/* The descriptive strings; hca_type must name a PCI device id. */
static int get_identity(struct cctx *c, const struct ynode *ibn, struct state_ib *ib,
			struct hca_defaults *d)
{
	long v;
	int rc;

	if ((rc = get_text(c, ibn, "hca_type", "MT4129", ALNUM, ib->hca_type,
			   sizeof(ib->hca_type))) < 0 ||
	    (rc = get_text(c, ibn, "fw_version", "28.39.2048", "0123456789.", ib->fw_version,
			   sizeof(ib->fw_version))) < 0 ||
	    (rc = get_text(c, ibn, "hw_rev", "0x0", ALNUM, ib->hw_rev, sizeof(ib->hw_rev))) < 0 ||
	    (rc = get_text(c, ibn, "board_id", "MT_0000000838", ALNUM "_-.", ib->board_id,
			   sizeof(ib->board_id))) < 0 ||
	    (rc = get_text(c, ibn, "link_layer", "InfiniBand", ALNUM, ib->link_layer,
			   sizeof(ib->link_layer))) < 0 ||
	    (rc = get_text(c, ibn, "guid_prefix", "a088c20300ab", "0123456789abcdefABCDEF:",
			   d->prefix, sizeof(d->prefix))) < 0 ||
	    (rc = get_text(c, ibn, "node_desc_template", "{node_name} mlx5_{idx}",
			   ALNUM " {}_-.:@#/", d->tmpl, sizeof(d->tmpl))) < 0)
		return rc;
	/* MT<decimal> is the PCI device id (MT4129 = 0x1021, ConnectX-7). */
	v = strtol(ib->hca_type + 2, NULL, 10);
	if (strncmp(ib->hca_type, "MT", 2) || !ib->hca_type[2] ||
	    !cc_all_chars(ib->hca_type + 2, "0123456789") || v <= 0 || v > 0xffff)
		return cc_fail(c, cc_lookup(ibn, "hca_type"), "infiniband.hca_type",
			       "'%s' is not MT<PCI device id in decimal> (e.g. MT4129)",
			       ib->hca_type);
	ib->device_id = (uint16_t)v;
	if (strcmp(ib->link_layer, "InfiniBand") && strcmp(ib->link_layer, "Ethernet"))
		return cc_fail(c, cc_lookup(ibn, "link_layer"), "infiniband.link_layer",
			       "'%s' is neither InfiniBand nor Ethernet", ib->link_layer);
	return 0;
}

/* An optional integer in [lo, hi] at infiniband.<key>; *out keeps its default if absent. */
static int get_opt_int(struct cctx *c, const struct ynode *ibn, const char *key, int64_t lo,
		       int64_t hi, int64_t *out)
{
	const struct ynode *n = cc_lookup(ibn, key);
	char path[KEY_PATH_MAX];

	if (ytree_is_null(n))
		return 0;
	cc_join_key(path, "infiniband", key);
	return cc_get_int(c, n, path, lo, hi, out);
}

/* Rate, then the port and physical states and counters every HCA starts with. */
static int get_link(struct cctx *c, const struct ynode *ibn, struct state_ib *ib,
		    struct hca_defaults *d)
{
	int64_t rate = 400;
	int rc;

	if ((rc = get_opt_int(c, ibn, "rate_gbps", 1, 3200, &rate)) < 0)
		return rc;
	ib->rate_gbps = (int)rate;
	d->port_state = 4;
	d->phys_state = 5;
	if ((rc = get_port_state(c, cc_lookup(ibn, "port_state"), "infiniband.port_state",
				 &d->port_state)) < 0 ||
	    (rc = get_phys_state(c, cc_lookup(ibn, "phys_state"), "infiniband.phys_state",
				 &d->phys_state)) < 0 ||
	    (rc = get_counters(c, cc_lookup(ibn, "counters"), "infiniband.counters",
			       d->counters)) < 0)
		return rc;
	return 0;
}

/* hca_count, or one per GPU times hcas_per_gpu. */
static int get_count(struct cctx *c, const struct ynode *ibn, const struct state *s,
		     int64_t *per_gpu, int64_t *count)
{
	int rc;

	*per_gpu = 1;
	*count = 0;
	if ((rc = get_opt_int(c, ibn, "hcas_per_gpu", 1, 8, per_gpu)) < 0 ||
	    (rc = get_opt_int(c, ibn, "hca_count", 0, STATE_MAX_HCAS, count)) < 0)
		return rc;
	if (!*count)
		*count = s->num_devices * *per_gpu;
	if (*count > STATE_MAX_HCAS)
		return cc_fail(c, ibn, "infiniband", "%lld HCAs (GPUs x hcas_per_gpu), at most %d",
			       (long long)*count, STATE_MAX_HCAS);
	return 0;
}

/* guid_prefix lower-cased without colons; its first 8 hex digits are kept. */
static int norm_guid_prefix(struct cctx *c, const struct ynode *ibn, char *prefix)
{
	size_t hex = 0;

	for (char *p = prefix; *p; p++)
		if (*p != ':')
			prefix[hex++] = (char)tolower((unsigned char)*p);
	prefix[hex] = '\0';
	if (hex < 8 || hex > 16)
		return cc_fail(c, cc_lookup(ibn, "guid_prefix"), "infiniband.guid_prefix",
			       "want 8 to 16 hex digits, got %zu", hex);
	prefix[8] = '\0';
	return 0;
}

/* The fabric shape and the subnet manager the port reports. */
static int get_fabric(struct cctx *c, const struct ynode *ibn, struct state_ib *ib)
{
	int64_t leaf_ports = 32, spines = 2;
	int rc;

	if ((rc = get_opt_int(c, ibn, "fabric.leaf_ports", 1, 128, &leaf_ports)) < 0 ||
	    (rc = get_opt_int(c, ibn, "fabric.spines", 0, 64, &spines)) < 0)
		return rc;
	ib->leaf_ports = (int)leaf_ports;
	ib->spines = (int)spines;
	ib->sm_lid = 1;
	/* IsSM off; IsTrapSupported, IsAutomaticMigration, IsSLMapping,
	 * IsLedInfo, IsSystemImageGUID, IsExtendedSpeeds (bit 14),
	 * IsCapabilityMask2, IsCommunicationManagement, IsVendorClass,
	 * IsClientReregistration, IsLinkSpeedWidthPairsTable... as mlx5 reports. */
	ib->cap_mask = 0xa651e848;
	return 0;
}

/* Every HCA's identity (see the top of the file) and its starting link state. */
static int make_hcas(struct cctx *c, const struct ynode *ibn, struct state *s, int count,
		     const struct hca_defaults *d)
{
	struct state_ib *ib = &s->ib;
	uint32_t nid = compile_ib_fnv1a32(s->node_name);
	int rc;

	ib->num_hcas = count;
	for (int i = 0; i < ib->num_hcas; i++) {
		struct state_hca *h = &ib->hcas[i];

		h->index = i;
		snprintf(h->name, sizeof(h->name), "mlx5_%d", i);
		/* the node's own GUIDs live with its other identities */
		h->node_guid = identity_ib_node_guid((uint32_t)strtoull(d->prefix, NULL, 16),
						     s->node_name, i);
		h->port_guid = h->node_guid | 1;
		h->lid = 0x100 + (nid % (0xbf00u / (uint32_t)count)) * (uint32_t)count + (uint32_t)i;
		h->port_state = d->port_state;
		h->phys_state = d->phys_state;
		memcpy(h->counters, d->counters, sizeof(d->counters));
		if ((rc = node_desc(c, cc_lookup(ibn, "node_desc_template"), d->tmpl, s->node_name,
				    i, h->node_desc, sizeof(h->node_desc))) < 0)
			return rc;
	}
	return 0;
}

/* One `hcas:` entry (at path): its index, then what it overrides for that HCA. */
static int apply_hca_entry(struct cctx *c, const struct ynode *e, const char *path,
			   struct state_ib *ib)
{
	const struct ynode *n = cc_lookup(e, "index");
	char p2[KEY_PATH_MAX];
	struct state_hca *h;
	int64_t v;
	int rc;

	if (ytree_is_null(n))
		return cc_fail(c, e, path, "missing index");
	cc_join_key(p2, path, "index");
	if ((rc = cc_get_int(c, n, p2, 0, STATE_MAX_HCAS - 1, &v)) < 0)
		return rc;
	if (v >= ib->num_hcas)
		return cc_fail(c, n, p2, "HCA %lld does not exist (%d HCAs)", (long long)v,
			       ib->num_hcas);
	h = &ib->hcas[v];
	cc_join_key(p2, path, "port_state");
	if ((rc = get_port_state(c, cc_lookup(e, "port_state"), p2, &h->port_state)) < 0)
		return rc;
	cc_join_key(p2, path, "phys_state");
	if ((rc = get_phys_state(c, cc_lookup(e, "phys_state"), p2, &h->phys_state)) < 0)
		return rc;
	cc_join_key(p2, path, "counters");
	return get_counters(c, cc_lookup(e, "counters"), p2, h->counters);
}

static int apply_hca_entries(struct cctx *c, const struct ynode *ibn, struct state_ib *ib)
{
	const struct ynode *hl = cc_lookup(ibn, "hcas");
	char path[KEY_PATH_MAX];
	int rc;

	for (size_t k = 0; !ytree_is_null(hl) && k < hl->n; k++) {
		cc_join_index(path, "infiniband.hcas", k);
		if ((rc = apply_hca_entry(c, hl->kids[k], path, ib)) < 0)
			return rc;
	}
	return 0;
}

int compile_ib(struct cctx *c, const struct ynode *root, const struct compile_opts *o,
	       struct state *s)
{
	const struct ynode *ibn = cc_lookup(root, "infiniband"), *n;
	struct state_ib *ib = &s->ib;
	struct hca_defaults d = { 0 };
	int64_t per_gpu, count;
	bool en = false;
	int rc;

	memset(ib, 0, sizeof(*ib));
	if ((rc = compile_ib_opts(c, o, ib, s->mock_root)) < 0)
		return rc;
	n = cc_lookup(ibn, "enabled");
	if (!ytree_is_null(n) && ytree_bool(n, &en) < 0)
		return cc_fail(c, n, "infiniband.enabled", "expected true or false");
	if (!en)
		return 0;
	ib->enabled = true;
	if ((rc = get_identity(c, ibn, ib, &d)) < 0 ||
	    (rc = get_link(c, ibn, ib, &d)) < 0 ||
	    (rc = get_count(c, ibn, s, &per_gpu, &count)) < 0 ||
	    (rc = norm_guid_prefix(c, ibn, d.prefix)) < 0 ||
	    (rc = get_fabric(c, ibn, ib)) < 0 ||
	    (rc = make_hcas(c, ibn, s, (int)count, &d)) < 0 ||
	    (rc = apply_hca_entries(c, ibn, ib)) < 0)
		return rc;
	return place_hcas(c, root, s, (int)per_gpu);
}
