/* The fabric model: members' CAs plus the synthetic switches of a
 * rail-optimised 2-level fat tree, identical on every mock-ib instance for
 * the same member set.
 *
 *   rail r = HCA index; member slot s = its position after sorting by name
 *   groups G = ceil(members / leaf_ports); leaf (r, g) serves slots
 *   g*leaf_ports.. on rail r, CA -> leaf port (s % leaf_ports) + 1
 *   leaf ports leaf_ports+1..leaf_ports+spines -> spines 0..spines-1,
 *   spine port = leaf index + 1
 *
 * When one leaf per rail would need spines wider than a switch can number
 * (more than IB_SWITCH_MAX_PORTS leaves, e.g. 2 nodes x 256 HCAs), the
 * fewest adjacent rails that fit share a leaf, each rail on its own block
 * of CA ports.  Switch 0 (leaf r0 g0) holds LID 1, the SM. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/ib/mad/fabric.h"

#define SWITCH_GUID_BASE 0xb8cef60300000000ull
#define DEFAULT_LEAF_PORTS 32
#define DEFAULT_RATE 400
#define MAX_LEAF_PORTS 128
#define MAX_SPINES 64
#define MAX_UNICAST_LID 0xbfffu
#define MAX_SWITCHES 16384

/* Sorted (key, kind, idx) entries: LIDs and GUIDs of CAs and switches. */
struct ib_key {
	uint64_t key;
	int kind;
	int idx;
};

struct ib_fab_index {
	struct ib_key *lids;
	int nlids;
	struct ib_key *guids;
	int nguids;
};

struct sort_member {
	const struct ib_member *m;
	int index;
};

static int cmp_member(const void *a, const void *b)
{
	const struct sort_member *x = a, *y = b;
	int c = strncmp(x->m->node, y->m->node, sizeof(x->m->node));

	return c ? c : (x->index > y->index) - (x->index < y->index);
}

static int cmp_key(const void *a, const void *b)
{
	const struct ib_key *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int member_hcas(const struct ib_member *m)
{
	if (!m->ib || m->ib->num_hcas < 0)
		return 0;
	return m->ib->num_hcas > STATE_MAX_HCAS ? STATE_MAX_HCAS : m->ib->num_hcas;
}

static int div_up(int a, int b)
{
	return (a + b - 1) / b;
}

/* The shape: leaf_ports, spines, rate from the first member (after
 * sorting) that has settings; rails per leaf so spines fit. */
static int plan_shape(struct ib_fabric *f, const struct sort_member *sm, int n, int rails)
{
	const struct state_ib *ib = NULL;
	int groups, per_group, k;

	for (int i = 0; i < n && !ib; i++)
		ib = sm[i].m->ib;
	f->leaf_ports = ib && ib->leaf_ports > 0 ? ib->leaf_ports : DEFAULT_LEAF_PORTS;
	if (f->leaf_ports > MAX_LEAF_PORTS)
		f->leaf_ports = MAX_LEAF_PORTS;
	f->spines = ib && ib->spines > 0 ? ib->spines : 0;
	if (f->spines > MAX_SPINES)
		f->spines = MAX_SPINES;
	f->rate_gbps = ib && ib->rate_gbps > 0 ? ib->rate_gbps : DEFAULT_RATE;
	f->rails_per_leaf = 1;
	if (rails == 0 || n == 0)
		return 0;
	groups = div_up(n, f->leaf_ports);
	per_group = groups == 1 ? n : f->leaf_ports;
	for (k = 1; f->spines > 0 && div_up(rails, k) * groups > IB_SWITCH_MAX_PORTS; k++)
		if ((k + 1) * per_group > f->leaf_ports)
			return -E2BIG;	/* no packing keeps leaves within leaf_ports */
	f->rails_per_leaf = k;
	f->nleaves = div_up(rails, k) * groups;
	return 0;
}

static void name_switches(struct ib_fabric *f, int groups)
{
	for (int i = 0; i < f->nsws; i++) {
		struct ib_fab_switch *sw = &f->sws[i];

		sw->guid = SWITCH_GUID_BASE | ((uint64_t)(i + 1) << 8);
		if (i < f->nleaves)
			snprintf(sw->desc, sizeof(sw->desc), "MF0;leaf-r%d-g%d:MQM9700/U1",
				 (i / groups) * f->rails_per_leaf, i % groups);
		else
			snprintf(sw->desc, sizeof(sw->desc), "MF0;spine-%d:MQM9700/U1",
				 i - f->nleaves);
	}
}

static void wire_spines(struct ib_fabric *f)
{
	for (int l = 0; l < f->nleaves; l++) {
		f->sws[l].nports = f->leaf_ports + f->spines;
		for (int s = 0; s < f->spines; s++) {
			int sp = f->nleaves + s;

			f->sws[l].port[f->leaf_ports + 1 + s] =
				(struct ib_link){ IB_LINK_SWITCH, sp, l + 1 };
			f->sws[sp].port[l + 1] =
				(struct ib_link){ IB_LINK_SWITCH, l, f->leaf_ports + 1 + s };
		}
	}
	for (int s = 0; s < f->spines && f->nleaves; s++)
		f->sws[f->nleaves + s].nports = f->nleaves;
}

/* CAs in member order then HCA index, each wired to its leaf. */
static void place_cas(struct ib_fabric *f, const struct sort_member *sm, int n)
{
	int groups = div_up(n, f->leaf_ports);
	int per_group = groups == 1 ? n : f->leaf_ports;
	int c = 0;

	for (int slot = 0; slot < n; slot++) {
		const struct ib_member *m = sm[slot].m;

		for (int h = 0; h < member_hcas(m); h++, c++) {
			struct ib_fab_ca *ca = &f->cas[c];
			int leaf = (h / f->rails_per_leaf) * groups + slot / f->leaf_ports;
			int port = (h % f->rails_per_leaf) * per_group + slot % f->leaf_ports + 1;

			ca->member = sm[slot].index;
			ca->hca = &m->ib->hcas[h];
			ca->ib = m->ib;
			ca->local = m->local;
			ca->up = (struct ib_link){ IB_LINK_SWITCH, leaf, port };
			f->sws[leaf].port[port] = (struct ib_link){ IB_LINK_CA, c, 1 };
		}
	}
}

/* Switch LIDs 1, 2, ... skipping any a CA holds (CAs sit at 0x100+). */
static int assign_switch_lids(struct ib_fabric *f)
{
	uint32_t *ca_lids = malloc(sizeof(*ca_lids) * (size_t)(f->ncas ? f->ncas : 1));
	uint32_t lid = 1;
	int j = 0;

	if (!ca_lids)
		return -ENOMEM;
	for (int i = 0; i < f->ncas; i++)
		ca_lids[i] = f->cas[i].hca->lid;
	qsort(ca_lids, (size_t)f->ncas, sizeof(*ca_lids), cmp_u32);
	for (int i = 0; i < f->nsws; i++, lid++) {
		for (; j < f->ncas && ca_lids[j] <= lid; j++)
			if (ca_lids[j] == lid)
				lid++;
		if (lid > MAX_UNICAST_LID) {
			free(ca_lids);
			return -E2BIG;
		}
		f->sws[i].lid = lid;
	}
	free(ca_lids);
	return 0;
}

static int build_index(struct ib_fabric *f)
{
	struct ib_fab_index *ix = calloc(1, sizeof(*ix));
	size_t n = (size_t)f->ncas + (size_t)f->nsws;

	if (!ix)
		return -ENOMEM;
	f->ix = ix;
	ix->lids = malloc(sizeof(*ix->lids) * (n ? n : 1));
	ix->guids = malloc(sizeof(*ix->guids) * (n ? n : 1));
	if (!ix->lids || !ix->guids)
		return -ENOMEM;
	for (int i = 0; i < f->ncas; i++) {
		ix->lids[ix->nlids++] = (struct ib_key){ f->cas[i].hca->lid, IB_LINK_CA, i };
		ix->guids[ix->nguids++] =
			(struct ib_key){ f->cas[i].hca->port_guid, IB_LINK_CA, i };
	}
	for (int i = 0; i < f->nsws; i++) {
		ix->lids[ix->nlids++] = (struct ib_key){ f->sws[i].lid, IB_LINK_SWITCH, i };
		ix->guids[ix->nguids++] = (struct ib_key){ f->sws[i].guid, IB_LINK_SWITCH, i };
	}
	qsort(ix->lids, (size_t)ix->nlids, sizeof(*ix->lids), cmp_key);
	qsort(ix->guids, (size_t)ix->nguids, sizeof(*ix->guids), cmp_key);
	return 0;
}

int ib_fabric_build(struct ib_fabric *f, const struct ib_member *m, int n)
{
	struct sort_member *sm = NULL;
	int rails = 0, rc;

	if (!f)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	f->sm_lid = 1;
	f->sm_switch = -1;
	if (n < 0 || (n > 0 && !m))
		return -EINVAL;
	if (n > 0 && !(sm = malloc(sizeof(*sm) * (size_t)n)))
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		sm[i] = (struct sort_member){ &m[i], i };
		f->ncas += member_hcas(&m[i]);
		if (member_hcas(&m[i]) > rails)
			rails = member_hcas(&m[i]);
	}
	if (n > 1)
		qsort(sm, (size_t)n, sizeof(*sm), cmp_member);
	if ((rc = plan_shape(f, sm, n, rails)) < 0)
		goto fail;
	f->nsws = f->nleaves ? f->nleaves + f->spines : 0;
	rc = -E2BIG;
	if (f->nsws > MAX_SWITCHES)
		goto fail;
	rc = -ENOMEM;
	if (f->ncas && !(f->cas = calloc((size_t)f->ncas, sizeof(*f->cas))))
		goto fail;
	if (f->nsws && !(f->sws = calloc((size_t)f->nsws, sizeof(*f->sws))))
		goto fail;
	if (f->nsws) {
		name_switches(f, div_up(n, f->leaf_ports));
		wire_spines(f);
		place_cas(f, sm, n);
		if ((rc = assign_switch_lids(f)) < 0)
			goto fail;
		f->sm_switch = 0;
		f->sm_lid = f->sws[0].lid;
	}
	if ((rc = build_index(f)) < 0)
		goto fail;
	free(sm);
	return 0;
fail:
	free(sm);
	ib_fabric_free(f);
	return rc;
}

void ib_fabric_free(struct ib_fabric *f)
{
	if (!f)
		return;
	if (f->ix) {
		free(f->ix->lids);
		free(f->ix->guids);
		free(f->ix);
	}
	free(f->cas);
	free(f->sws);
	memset(f, 0, sizeof(*f));
	f->sm_switch = -1;
}

/* First entry with this key and kind (lowest index), or -1. */
static int find(const struct ib_key *tab, int n, uint64_t key, int kind)
{
	int lo = 0, hi = n;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (tab[mid].key < key || (tab[mid].key == key && tab[mid].kind < kind))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && tab[lo].key == key && tab[lo].kind == kind ? tab[lo].idx : -1;
}

int ib_fabric_ca_by_lid(const struct ib_fabric *f, uint32_t lid)
{
	return f && f->ix ? find(f->ix->lids, f->ix->nlids, lid, IB_LINK_CA) : -1;
}

int ib_fabric_ca_by_guid(const struct ib_fabric *f, uint64_t port_guid)
{
	return f && f->ix ? find(f->ix->guids, f->ix->nguids, port_guid, IB_LINK_CA) : -1;
}

int ib_fabric_switch_by_lid(const struct ib_fabric *f, uint32_t lid)
{
	return f && f->ix ? find(f->ix->lids, f->ix->nlids, lid, IB_LINK_SWITCH) : -1;
}

int ib_fabric_switch_by_guid(const struct ib_fabric *f, uint64_t guid)
{
	return f && f->ix ? find(f->ix->guids, f->ix->nguids, guid, IB_LINK_SWITCH) : -1;
}

int ib_fabric_local_ca(const struct ib_fabric *f, const char *name)
{
	if (!f || !name)
		return -1;
	for (int i = 0; i < f->ncas; i++)
		if (f->cas[i].local && !strncmp(f->cas[i].hca->name, name,
						 sizeof(f->cas[i].hca->name)))
			return i;
	return -1;
}
