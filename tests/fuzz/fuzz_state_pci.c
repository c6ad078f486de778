/* Fuzz the state decoder where it reads the PCI plan (the seeds are
 * compiled states with their plan): whatever it accepts must be a plan
 * the renderers can build paths from, and must survive a second round
 * trip unchanged.  Aborts when a result breaks that. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_plan(const struct state_pci *p)
{
	if (p->ncpus < 0 || p->ncpus > STATE_PCI_MAX_CPUS || p->num_roots < 0 ||
	    p->num_roots > STATE_PCI_MAX_ROOTS || p->num_fns < 0 || p->num_fns > STATE_PCI_MAX_FNS)
		abort();
	for (int i = 0; i < p->num_roots; i++)
		if (!state_valid_root_id(p->roots[i]))
			abort();
	for (int i = 0; i < p->num_fns; i++) {
		const struct state_pci_fn *f = &p->fns[i], *up;
		int top;

		if (!state_valid_bdf(f->bdf) || !state_valid_root_id(f->root_id) ||
		    f->kind < 0 || f->kind >= STATE_PCI_KINDS || f->nres < 0 ||
		    f->nres > STATE_PCI_NUM_RESOURCES || state_pci_find(p, f->bdf) != f)
			abort();
		if (f->cpulist[0] && state_cpulist_parse(f->cpulist, NULL, &top) < 0)
			abort();
		if (!f->parent_bdf[0])
			continue;
		up = state_pci_find(p, f->parent_bdf);
		if (!up || up->kind != STATE_PCI_PORT || up->parent_bdf[0] ||
		    strcmp(up->root_id, f->root_id) != 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct state s, again;	/* large: keep them off the stack */
	char err[256] = "", *json = NULL;
	size_t len = 0;
	int r = state_decode((const char *)data, size, &s, err, sizeof(err));

	if (r == -EINVAL) {
		if (!err[0])
			abort();
		return 0;
	}
	if (r != 0)
		abort();
	check_plan(&s.pci);
	if (state_encode(&s, &json, &len) < 0 ||
	    state_decode(json, len, &again, err, sizeof(err)) != 0 ||
	    again.pci.num_fns != s.pci.num_fns || again.pci.ncpus != s.pci.ncpus)
		abort();
	for (int i = 0; i < s.pci.num_fns; i++)
		if (strcmp(again.pci.fns[i].bdf, s.pci.fns[i].bdf) != 0 ||
		    strcmp(again.pci.fns[i].cpulist, s.pci.fns[i].cpulist) != 0 ||
		    again.pci.fns[i].irq != s.pci.fns[i].irq ||
		    memcmp(again.pci.fns[i].res, s.pci.fns[i].res, sizeof(s.pci.fns[i].res)) != 0)
			abort();
	free(json);
	state_free(&again);
	state_free(&s);
	return 0;
}
