/* Mock NVML engine: PCIe locality (pcie_topology), the ComputeDomain
 * topology overlay (SURFACES.md §4) and the fabric state coupled to the
 * fake fabric manager's readiness marker (SURFACES.md §5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "engine_internal.h"

struct bdf {
	unsigned long dom;
	unsigned bus, dev, fn;
};

static bool bdf_of(const char *s, struct bdf *b)
{
	return s && eng_parse_bdf(s, &b->dom, &b->bus, &b->dev, &b->fn);
}

/* Each listed function's BDF is parsed once for all devices (parsing was
 * most of this at init, once per device and listed function). */
void eng_pcie_affinity(void)
{
	const struct yl_node *roots = yl_path(eng.profile, "pcie_topology.root_complexes");
	struct bdf own[ENG_MAX_DEVICES], x;
	bool have[ENG_MAX_DEVICES], done[ENG_MAX_DEVICES] = { false };

	for (unsigned k = 0; k < eng.ndev; k++) {
		eng_devs[k].numa_node = -1;
		eng_devs[k].cpu_affinity[0] = 0;
		have[k] = bdf_of(eng_devs[k].bus_id, &own[k]);
	}
	for (size_t i = 0; roots && roots->kind == YL_SEQ && i < roots->n; i++) {
		const struct yl_node *devs = yl_get(roots->kids[i], "devices");
		const char *cpus = yl_text(yl_get(roots->kids[i], "cpu_affinity"));
		int64_t numa;
		bool numa_ok = yl_i64(yl_get(roots->kids[i], "numa_node"), &numa) &&
			       numa >= 0 && numa <= 0xffff;

		for (size_t j = 0; devs && devs->kind == YL_SEQ && j < devs->n; j++) {
			if (!bdf_of(yl_text(devs->kids[j]), &x))
				continue;
			for (unsigned k = 0; k < eng.ndev; k++) {
				struct mdev *d = &eng_devs[k];

				/* the first root complex that lists it wins */
				if (!have[k] || done[k] || x.dom != own[k].dom || x.bus != own[k].bus ||
				    x.dev != own[k].dev || x.fn != own[k].fn)
					continue;
				done[k] = true;
				if (numa_ok)
					d->numa_node = (int)numa;
				snprintf(d->cpu_affinity, sizeof(d->cpu_affinity), "%s",
					 cpus ? cpus : "");
			}
		}
	}
}

static bool lists(const struct yl_node *nodes, const char *name)
{
	for (size_t i = 0; nodes && nodes->kind == YL_SEQ && i < nodes->n; i++) {
		const char *s = yl_text(nodes->kids[i]);

		if (s && !strcmp(s, name))
			return true;
	}
	return false;
}

static int apply_clique(const struct yl_node *domain, const struct yl_node *clique)
{
	const struct yl_node *uuid = yl_get(domain, "uuid"), *id = yl_get(clique, "id");
	struct yl_node *v = NULL;

	for (unsigned i = 0; i < eng.ndev; i++) {
		struct yl_node *fab = yl_get(eng_devs[i].base, "fabric");
		const char *state;

		if (!fab || fab->kind != YL_MAP)
			continue;
		if (yl_text(uuid) && ((v = yl_clone(uuid)) == NULL ||
				      yl_map_set(fab, "cluster_uuid", v) < 0))
			goto nomem;
		if (yl_text(id) && ((v = yl_clone(id)) == NULL ||
				    yl_map_set(fab, "clique_id", v) < 0))
			goto nomem;
		state = yl_text(yl_get(fab, "state"));
		if ((!state || !*state) && ((v = yl_new_scalar("completed")) == NULL ||
					     yl_map_set(fab, "state", v) < 0))
			goto nomem;
	}
	return 0;
nomem:
	yl_free(v);
	return -1;
}

int eng_topology_overlay(void)
{
	const char *node = getenv("NODE_NAME");
	const struct yl_node *fabric = yl_path(eng.profile, "device_defaults.fabric");
	const struct yl_node *domains;
	struct yl_node *doc;
	bool missing;
	int rc = 0;

	/* A100/L40S/T4 have no fabric: they keep NOT_SUPPORTED. */
	if (!node || !*node || !fabric || fabric->kind != YL_MAP)
		return 0;
	doc = eng_load_yaml(eng.topology_path, &missing);
	if (!doc)
		return 0;	/* eng_load_yaml said why; no overlay */
	domains = yl_get(doc, "domains");
	for (size_t i = 0; domains && domains->kind == YL_SEQ && i < domains->n; i++) {
		const struct yl_node *cliques = yl_get(domains->kids[i], "cliques");

		for (size_t j = 0; cliques && cliques->kind == YL_SEQ && j < cliques->n; j++) {
			if (!lists(yl_get(cliques->kids[j], "nodes"), node))
				continue;
			eng_debug("%s: node %s is in clique %s of domain %s", eng.topology_path,
				  node, yl_text(yl_get(cliques->kids[j], "id")) ?: "?",
				  yl_text(yl_get(domains->kids[i], "uuid")) ?: "?");
			rc = apply_clique(domains->kids[i], cliques->kids[j]);
			goto out;
		}
	}
	eng_debug("%s: node %s is in no clique", eng.topology_path, node);
out:
	yl_free(doc);
	return rc;
}

/* "auto": marker present -> completed; absent -> in progress, unless no
 * fabric manager is set up at all (default dir missing) -> completed. */
static unsigned marker_state(void)
{
	char marker[PATH_MAX + 32];
	struct stat st;
	double now = eng_now();

	if (now - eng.fm_checked < ENG_TTL_S)
		return eng.fm_state;
	eng.fm_checked = now;
	snprintf(marker, sizeof(marker), "%s/fabricmanager.ready", eng.fm_dir);
	if (!eng.fm_dir[0] || stat(marker, &st) == 0)
		eng.fm_state = 3;
	else if (eng.fm_dir_from_env)
		eng.fm_state = 2;
	else
		eng.fm_state = stat(eng.fm_dir, &st) == 0 && S_ISDIR(st.st_mode) ? 2 : 3;
	return eng.fm_state;
}

unsigned mdev_fabric_state(struct mdev *d)
{
	static const struct {
		const char *name;
		unsigned state;
	} states[] = {
		{ "not_supported", 0 }, { "not_started", 1 }, { "in_progress", 2 },
	};
	const struct yl_node *fab;
	const char *s;
	unsigned r = 0;

	eng_lock();
	if (!eng_dev_ready(d))
		goto out;
	fab = yl_get(d->eff, "fabric");
	if (!fab || fab->kind != YL_MAP)
		goto out;
	s = yl_text(yl_get(fab, "state"));
	r = 3;	/* completed, empty and unknown */
	if (s && !strcasecmp(s, "auto"))
		r = marker_state();
	for (size_t i = 0; s && i < sizeof(states) / sizeof(states[0]); i++)
		if (!strcasecmp(s, states[i].name))
			r = states[i].state;
out:
	eng_unlock();
	return r;
}
