/* LID routing through the fat tree, and what the SM can see.
 *
 * A packet goes CA -> its leaf [-> spine 0 -> the target's leaf] -> target,
 * so it arrives at a CA on port 1, at its own leaf on the CA's leaf port, at
 * a spine on (sender's leaf + 1) and at another leaf on its first uplink.
 * Without spines only the sender's own leaf is reachable. */
#include "workers/ib/mad/mad_internal.h"

bool mad_lid_node(const struct ib_fabric *f, uint32_t lid, struct mad_node *n)
{
	int i;

	if ((i = ib_fabric_ca_by_lid(f, lid)) >= 0) {
		*n = (struct mad_node){ IB_LINK_CA, i };
		return true;
	}
	if ((i = ib_fabric_switch_by_lid(f, lid)) >= 0) {
		*n = (struct mad_node){ IB_LINK_SWITCH, i };
		return true;
	}
	return false;
}

bool mad_guid_node(const struct ib_fabric *f, uint64_t guid, struct mad_node *n)
{
	int i;

	if ((i = ib_fabric_ca_by_guid(f, guid)) >= 0) {
		*n = (struct mad_node){ IB_LINK_CA, i };
		return true;
	}
	if ((i = ib_fabric_switch_by_guid(f, guid)) >= 0) {
		*n = (struct mad_node){ IB_LINK_SWITCH, i };
		return true;
	}
	return false;
}

/* The leaf a node hangs off (a leaf is its own), or -1 for a spine or an
 * unwired CA. */
static int leaf_of(const struct ib_fabric *f, struct mad_node n)
{
	if (n.kind == IB_LINK_SWITCH)
		return n.idx < f->nleaves ? n.idx : -1;
	return f->cas[n.idx].up.kind == IB_LINK_SWITCH ? f->cas[n.idx].up.idx : -1;
}

/* Port on which a packet from leaf `from` enters node `to` (not a CA). */
static int switch_ingress(const struct ib_fabric *f, int from, int to)
{
	if (to >= f->nleaves)
		return from + 1;		/* spine: one port per leaf */
	return f->leaf_ports + 1;		/* another leaf: from spine 0 */
}

static bool leaves_connect(const struct ib_fabric *f, int a, int b)
{
	return a >= 0 && b >= 0 && (a == b || f->spines > 0);
}

bool mad_route_lid(const struct ib_fabric *f, int from_ca, uint32_t lid, struct mad_node *to,
		   int *ingress)
{
	struct mad_node src = { IB_LINK_CA, from_ca };
	int leaf = leaf_of(f, src);

	if (!mad_lid_node(f, lid, to))
		return false;
	if (to->kind == IB_LINK_CA && to->idx == from_ca) {
		*ingress = 1;			/* loopback in the HCA */
		return true;
	}
	if (!mad_ca_active(f, from_ca) || leaf < 0)
		return false;
	if (to->kind == IB_LINK_CA) {
		*ingress = 1;
		return mad_ca_active(f, to->idx) && leaves_connect(f, leaf, leaf_of(f, *to));
	}
	if (to->idx == leaf) {
		*ingress = f->cas[from_ca].up.port;
		return true;
	}
	if (f->spines == 0)
		return false;
	*ingress = switch_ingress(f, leaf, to->idx);
	return true;
}

/* The SM (on switch sm_switch, a leaf) knows every switch it can reach and
 * every CA whose link is up behind them. */
bool mad_sm_sees(const struct ib_fabric *f, struct mad_node n)
{
	if (f->sm_switch < 0)
		return false;
	if (n.kind == IB_LINK_CA && !mad_ca_link_up(f, n.idx))
		return false;
	if (n.kind == IB_LINK_SWITCH && n.idx >= f->nleaves)
		return f->spines > 0;
	return leaves_connect(f, f->sm_switch, leaf_of(f, n));
}

/* NodeInfo.LocalPortNum as the SM read it (NodeRecord). */
int mad_ingress_from_sm(const struct ib_fabric *f, struct mad_node n)
{
	if (n.kind == IB_LINK_CA)
		return 1;
	if (n.idx == f->sm_switch)
		return 0;
	return switch_ingress(f, f->sm_switch, n.idx);
}
