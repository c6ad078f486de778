/* Profile compiler, topology: pcie_topology root complexes (which device
 * and NVSwitch sits under which root, hence its NUMA node), and the
 * ComputeDomain topology document that gives this node its clique. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/log.h"
#include "profile/compile_internal.h"

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
	const struct ynode *sw = cc_lookup(root, "nvlink.switches");
	char path[KEY_PATH_MAX];
	int rc;

	if (ytree_is_null(sw))
		return 0;
	if (sw->n > 64)
		return cc_fail(c, sw, "nvlink.switches", "%zu switches listed, at most 64 supported",
			       sw->n);
	for (size_t i = 0; i < sw->n; i++) {
		const struct ynode *bdf = cc_lookup(sw->kids[i], "bdf");

		snprintf(path, sizeof(path), "nvlink.switches[%zu].bdf", i);
		if (ytree_is_null(bdf))
			continue;
		rc = cc_get_bdf(c, bdf, path, t->switch_bdf[i], sizeof(t->switch_bdf[i]));
		if (rc < 0)
			return rc;
		for (int j = 0; j < t->nowners; j++)
			if (!strcmp(t->owners[j].bdf, t->switch_bdf[i]))
				return cc_fail(c, bdf, path, "duplicate PCI address '%s'",
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
	int rc, top;

	if (rc_node->kind != YNODE_MAP)
		return cc_fail(c, rc_node, rp, "expected a mapping, got %s", cc_text(rc_node));
	cc_join_key(path, rp, "id");
	n = cc_lookup(rc_node, "id");
	if (ytree_is_null(n))
		return cc_fail(c, rc_node, path, "missing (want pcidddd:bb)");
	rc = cc_get_str(c, n, path, r->id, sizeof(r->id));
	if (rc < 0)
		return rc;
	cc_lowercase(r->id);
	if (!state_valid_root_id(r->id) || !state_valid_path_component(r->id))
		return cc_fail(c, n, path, "invalid root complex id '%.64s' (want pcidddd:bb)",
			       cc_text(n));
	for (int i = 0; i < s->num_roots; i++)
		if (!strcmp(s->roots[i].id, r->id))
			return cc_fail(c, n, path, "duplicate root complex '%s'", r->id);

	cc_join_key(path, rp, "numa_node");
	n = cc_lookup(rc_node, "numa_node");
	if (!ytree_is_null(n) && (rc = cc_get_int(c, n, path, -1, 1023, &v)) < 0)
		return rc;
	r->numa_node = (int)v;

	cc_join_key(path, rp, "cpu_affinity");
	n = cc_lookup(rc_node, "cpu_affinity");
	rc = cc_get_str(c, n, path, r->cpu_affinity, sizeof(r->cpu_affinity));
	if (rc < 0)
		return rc;
	/* pcibus's rule (state_cpulist_parse), here where it is written: a
	 * list the Stage would refuse never compiles. */
	if (r->cpu_affinity[0] && state_cpulist_parse(r->cpu_affinity, NULL, &top) < 0)
		return cc_fail(c, n, path, "CPU list '%.64s': want a kernel cpulist of CPUs "
			       "0..%d, ascending ranges (e.g. 0-55,112-167)", r->cpu_affinity,
			       STATE_PCI_MAX_CPUS - 1);
	return 0;
}

static int root_member(struct cctx *c, struct topo_build *t, int ri,
		       const struct ynode *n, const char *path)
{
	char bdf[16];
	int rc = cc_get_bdf(c, n, path, bdf, sizeof(bdf));
	int owner = -1;

	if (rc < 0)
		return rc;
	for (int i = 0; i < t->nowners; i++)
		if (!strcmp(t->owners[i].bdf, bdf))
			owner = i;
	if (owner < 0)
		return cc_fail(c, n, path, "'%s' is not a device's pci.bus_id nor an nvlink.switches bdf",
			       bdf);
	if (t->claimed_by[owner] >= 0)
		return cc_fail(c, n, path, "'%s' is already under root complex %s", bdf,
			       t->s->roots[t->claimed_by[owner]].id);
	if (owning_root(t->s, bdf) != ri)
		return cc_fail(c, n, path, "'%s' is outside the bus range of %s", bdf,
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
		return cc_fail(c, roots, "pcie_topology.root_complexes",
			       "%zu root complexes listed, at most %d supported",
			       roots->n, STATE_MAX_ROOTS);
	/* Headers first: bus ranges depend on every root's bus number. */
	for (size_t i = 0; i < roots->n; i++) {
		cc_join_index(rp, "pcie_topology.root_complexes", i);
		rc = root_header(c, roots->kids[i], rp, t->s);
		if (rc < 0)
			return rc;
		t->s->num_roots++;
	}
	for (size_t i = 0; i < roots->n; i++) {
		cc_join_index(rp, "pcie_topology.root_complexes", i);
		cc_join_key(mp, rp, "devices");
		members = cc_lookup(roots->kids[i], "devices");
		for (size_t j = 0; members && members->kind == YNODE_SEQ && j < members->n; j++) {
			cc_join_index(path, mp, j);
			rc = root_member(c, t, (int)i, members->kids[j], path);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

int compile_topology(struct cctx *c, const struct ynode *root,
		     struct dev_build *devs, int ndevs, struct state *s)
{
	const struct ynode *roots = cc_lookup(root, "pcie_topology.root_complexes");
	const struct ynode *cores = cc_lookup(root, "pcie_topology.cores_per_numa");
	struct topo_build *t = calloc(1, sizeof(*t));
	int64_t v = 0;
	int rc;

	if (!t)
		return cc_fail(c, root, "pcie_topology", "out of memory");
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
		rc = cc_get_int(c, cores, "pcie_topology.cores_per_numa", 0, 65536, &v);
	s->cores_per_numa = (int)v;
	if (rc == 0 && (ytree_is_null(roots) || roots->n == 0))
		flat_topology(t);
	else if (rc == 0)
		rc = compile_roots(c, roots, t);
	free(t);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Topology document (ComputeDomain cliques).                          */

static int topology_lookup(struct cctx *c, const struct ynode *doc,
			   const char *node_name, bool apply, struct state *s)
{
	const struct ynode *domains = cc_lookup(doc, "domains");
	char path[KEY_PATH_MAX];
	bool found = false;
	uint64_t id = 0;
	int rc;

	for (size_t d = 0; domains && domains->kind == YNODE_SEQ && d < domains->n; d++) {
		const struct ynode *cliques = cc_lookup(domains->kids[d], "cliques");

		for (size_t q = 0; cliques && cliques->kind == YNODE_SEQ && q < cliques->n; q++) {
			const struct ynode *cl = cliques->kids[q];
			const struct ynode *nodes = cc_lookup(cl, "nodes");

			snprintf(path, sizeof(path), "domains[%zu].cliques[%zu].id", d, q);
			if (!ytree_is_null(cc_lookup(cl, "id")) &&
			    (rc = cc_get_u64(c, cc_lookup(cl, "id"), path, UINT32_MAX, &id)) < 0)
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
				rc = cc_get_str(c, cc_lookup(domains->kids[d], "uuid"), path,
						s->fabric.cluster_uuid, sizeof(s->fabric.cluster_uuid));
				if (rc < 0)
					return rc;
				s->fabric.clique_id = (uint32_t)id;
			}
		}
	}
	return 0;
}

int compile_topology_doc(struct cctx *c, const char *topo, size_t len,
			 const char *node_name, bool has_fabric, struct state *s)
{
	struct ytree_error ye;
	struct ynode *doc;
	int rc;

	if (len > COMPILE_MAX_INPUT)
		return cc_fail(c, NULL, "(document)", "topology too large (%zu bytes, at most %u)",
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
	rc = compile_check_topology(c, doc);
	/* A profile without a fabric block keeps its NOT_SUPPORTED fabric. */
	if (rc == 0)
		rc = topology_lookup(c, doc, node_name, has_fabric, s);
	ytree_free(doc);
	if (rc < 0)
		return rc;
	s->topology_doc = malloc(len + 1);
	if (!s->topology_doc)
		return cc_fail(c, NULL, "(document)", "out of memory");
	memcpy(s->topology_doc, topo, len);
	s->topology_doc[len] = '\0';
	s->topology_len = len;
	return 0;
}
