/* The PCI plan's part of the state document (ipc/state_pci.c): round
 * trip, what the decoder refuses (it reads bytes from another process),
 * and the cpulist helpers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <cjson/cJSON.h>

#include "ipc/state.h"

static char err[256];
static struct state *a, *b;

static void setup(void)
{
	a = calloc(1, sizeof(*a));
	b = calloc(1, sizeof(*b));
	cr_assert(a && b);
	state_init(a);
	state_init(b);
}

static void teardown(void)
{
	state_free(a);
	state_free(b);
	free(a);
	free(b);
}

TestSuite(state_pci, .init = setup, .fini = teardown);

/* A PCI plan as the compiler leaves it: a root port with a GPU behind it,
 * and an HCA on the second root's own bus. */
static void populate(struct state *s)
{
	struct state_pci *p = &s->pci;
	struct state_pci_fn *f;

	memset(p, 0, sizeof(*p));
	p->ncpus = 112;
	p->num_roots = 2;
	snprintf(p->roots[0], sizeof(p->roots[0]), "pci0000:00");
	snprintf(p->roots[1], sizeof(p->roots[1]), "pci0000:80");
	p->num_fns = 3;
	for (int i = 0; i < 3; i++) {
		f = &p->fns[i];
		f->irq = 24 + i;
		f->link = (struct state_pcie_link){ 5, 16, 4, 8 };
		f->nres = 13;
		snprintf(f->cpulist, sizeof(f->cpulist), "0-55");
		snprintf(f->root_id, sizeof(f->root_id), "pci0000:00");
	}
	f = &p->fns[0];
	snprintf(f->bdf, sizeof(f->bdf), "0000:00:01.0");
	f->kind = STATE_PCI_PORT;
	f->vendor = f->subsys_vendor = 0x8086;
	f->device = 0x2030;
	f->class_code = 0x060400;
	f->revision = 4;
	f->secondary_bus = f->subordinate_bus = 0x18;
	f->nres = 17;
	f->res[14] = (struct state_pci_res){ 0x90000000ull, 16ull << 20, 0x200 };
	f->res[15] = (struct state_pci_res){ 0x200000000000ull, 1ull << 38, 0x102201 };
	f = &p->fns[1];
	snprintf(f->bdf, sizeof(f->bdf), "0000:18:00.0");
	snprintf(f->parent_bdf, sizeof(f->parent_bdf), "0000:00:01.0");
	f->kind = STATE_PCI_GPU;
	f->vendor = f->subsys_vendor = 0x10de;
	f->device = 0x2330;
	f->subsys_device = 0x16c1;
	f->class_code = 0x030200;
	f->revision = 0xa1;
	f->res[0] = (struct state_pci_res){ 0x90000000ull, 16ull << 20, 0x40200 };
	f->res[1] = (struct state_pci_res){ 0x200000000000ull, 1ull << 38, 0x14220c };
	f = &p->fns[2];
	snprintf(f->bdf, sizeof(f->bdf), "0000:80:02.0");
	snprintf(f->root_id, sizeof(f->root_id), "pci0000:80");
	snprintf(f->cpulist, sizeof(f->cpulist), "56-111,200");
	f->kind = STATE_PCI_HCA;
	f->numa_node = 1;
	f->vendor = f->subsys_vendor = 0x15b3;
	f->device = 0x1021;
	f->subsys_device = 0x23;
	f->class_code = 0x020700;
	f->res[0] = (struct state_pci_res){ 0x204000000000ull, 32ull << 20, 0x14220c };
}

static char *encode(const struct state *s)
{
	char *out = NULL;
	size_t len = 0;

	cr_assert_eq(state_encode(s, &out, &len), 0);
	cr_assert_not_null(out);
	return out;
}

static int decode_str(const char *json, struct state *s)
{
	state_free(s);
	err[0] = '\0';
	return state_decode(json, strlen(json), s, err, sizeof(err));
}

/* The planned state's JSON, edited by fn, decoded into b. */
static void expect_reject(void (*fn)(cJSON *root), const char *what)
{
	char *json, *edited;
	cJSON *root;

	populate(a);
	json = encode(a);
	root = cJSON_Parse(json);
	cr_assert_not_null(root);
	fn(root);
	edited = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	free(json);
	cr_assert_eq(decode_str(edited, b), -EINVAL, "%s accepted", what);
	cr_assert_neq(err[0], '\0', "%s: no message", what);
	free(edited);
}

static void expect_same_fn(const struct state_pci_fn *x, const struct state_pci_fn *y)
{
	cr_expect_str_eq(x->bdf, y->bdf);
	cr_expect_str_eq(x->root_id, y->root_id, "%s", x->bdf);
	cr_expect_str_eq(x->parent_bdf, y->parent_bdf, "%s", x->bdf);
	cr_expect_str_eq(x->cpulist, y->cpulist, "%s", x->bdf);
	cr_expect(x->kind == y->kind && x->vendor == y->vendor && x->device == y->device &&
		  x->subsys_vendor == y->subsys_vendor && x->subsys_device == y->subsys_device &&
		  x->class_code == y->class_code && x->revision == y->revision &&
		  x->irq == y->irq && x->numa_node == y->numa_node, "%s identity", x->bdf);
	cr_expect(memcmp(&x->link, &y->link, sizeof(x->link)) == 0, "%s link", x->bdf);
	cr_expect(x->primary_bus == y->primary_bus && x->secondary_bus == y->secondary_bus &&
		  x->subordinate_bus == y->subordinate_bus && x->nres == y->nres,
		  "%s buses", x->bdf);
	for (int k = 0; k < STATE_PCI_NUM_RESOURCES; k++)
		cr_expect(x->res[k].start == y->res[k].start && x->res[k].size == y->res[k].size &&
			  x->res[k].flags == y->res[k].flags, "%s res %d", x->bdf, k);
}

Test(state_pci, pci_plan_round_trips)
{
	char *json;

	populate(a);
	json = encode(a);
	cr_assert_eq(decode_str(json, b), 0, "%s", err);
	cr_assert_eq(b->pci.ncpus, 112);
	cr_assert_eq(b->pci.num_roots, 2);
	cr_assert_str_eq(b->pci.roots[1], "pci0000:80");
	cr_assert_eq(b->pci.num_fns, 3);
	for (int i = 0; i < 3; i++)
		expect_same_fn(&a->pci.fns[i], &b->pci.fns[i]);
	cr_assert_eq(state_pci_find(&b->pci, "0000:18:00.0"), &b->pci.fns[1]);
	cr_assert_null(state_pci_find(&b->pci, "0000:19:00.0"));
	free(json);
}

static cJSON *pci(cJSON *root)
{
	return cJSON_GetObjectItemCaseSensitive(root, "pci");
}

static cJSON *pfn(cJSON *root, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pci(root), "fns"), i);
}

static void set_num(cJSON *o, const char *key, double v)
{
	cJSON_ReplaceItemInObjectCaseSensitive(o, key, cJSON_CreateNumber(v));
}

static void set_str(cJSON *o, const char *key, const char *v)
{
	cJSON_ReplaceItemInObjectCaseSensitive(o, key, cJSON_CreateString(v));
}

static void ed_pci_missing(cJSON *r) { cJSON_DeleteItemFromObjectCaseSensitive(r, "pci"); }
static void ed_pci_ncpus_big(cJSON *r) { set_num(pci(r), "ncpus", 8193); }
static void ed_pci_ncpus_zero(cJSON *r) { set_num(pci(r), "ncpus", 0); }
static void ed_pci_root_bad(cJSON *r)
{
	cJSON_ReplaceItemInArray(cJSON_GetObjectItemCaseSensitive(pci(r), "roots"), 0,
				 cJSON_CreateString("pci/../:00"));
}
static void ed_pci_root_twice(cJSON *r)
{
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(pci(r), "roots"),
			     cJSON_CreateString("pci0000:00"));
}
static void ed_pci_too_many(cJSON *r)
{
	cJSON *fns = cJSON_GetObjectItemCaseSensitive(pci(r), "fns");

	while (cJSON_GetArraySize(fns) <= STATE_PCI_MAX_FNS)
		cJSON_AddItemToArray(fns, cJSON_Duplicate(pfn(r, 2), true));
}
static void ed_pci_bdf_path(cJSON *r) { set_str(pfn(r, 1), "bdf", "../../etc/x"); }
static void ed_pci_bdf_twice(cJSON *r) { set_str(pfn(r, 2), "bdf", "0000:18:00.0"); }
static void ed_pci_unsorted(cJSON *r) { set_str(pfn(r, 1), "bdf", "0000:90:00.0"); }
static void ed_pci_root_unknown(cJSON *r) { set_str(pfn(r, 2), "root_id", "pci0000:40"); }
static void ed_pci_not_below_root(cJSON *r) { set_str(pfn(r, 2), "root_id", "pci0000:00"); set_str(pfn(r, 0), "root_id", "pci0000:80"); }
static void ed_pci_parent_missing(cJSON *r) { set_str(pfn(r, 1), "parent_bdf", "0000:00:02.0"); }
static void ed_pci_parent_not_port(cJSON *r) { set_str(pfn(r, 2), "parent_bdf", "0000:18:00.0"); }
static void ed_pci_parent_other_bus(cJSON *r) { set_num(pfn(r, 0), "secondary_bus", 0x19); }
static void ed_pci_port_with_parent(cJSON *r) { set_str(pfn(r, 0), "parent_bdf", "0000:00:01.0"); }
static void ed_pci_kind(cJSON *r) { set_num(pfn(r, 1), "kind", 3); }
static void ed_pci_irq(cJSON *r) { set_num(pfn(r, 1), "irq", -1); }
static void ed_pci_numa(cJSON *r) { set_num(pfn(r, 1), "numa_node", -2); }
static void ed_pci_revision(cJSON *r) { set_num(pfn(r, 1), "revision", 256); }
static void ed_pci_class(cJSON *r) { set_num(pfn(r, 1), "class_code", 0x1000000); }
static void ed_pci_gen(cJSON *r) { set_num(pfn(r, 1), "max_gen", 0); }
static void ed_pci_bus(cJSON *r) { set_num(pfn(r, 0), "subordinate_bus", 256); }
static void ed_pci_nres(cJSON *r) { set_num(pfn(r, 1), "nres", 18); }
static void ed_pci_cpulist_big(cJSON *r) { set_str(pfn(r, 1), "cpulist", "0-8192"); }
static void ed_pci_cpulist_junk(cJSON *r) { set_str(pfn(r, 1), "cpulist", "0-3,x"); }
static void ed_pci_res_slot(cJSON *r)
{
	set_num(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pfn(r, 1), "res"), 0),
		"slot", 13);
}
static void ed_pci_res_twice(cJSON *r)
{
	cJSON *res = cJSON_GetObjectItemCaseSensitive(pfn(r, 1), "res");

	cJSON_AddItemToArray(res, cJSON_Duplicate(cJSON_GetArrayItem(res, 0), true));
}
static void ed_pci_res_empty(cJSON *r)
{
	set_str(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pfn(r, 1), "res"), 0),
		"size", "0");
}
static void ed_pci_res_wraps(cJSON *r)
{
	set_str(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pfn(r, 1), "res"), 0),
		"start", "18446744073709551615");
}

Test(state_pci, rejects_bad_pci_plan)
{
	expect_reject(ed_pci_missing, "no pci");
	expect_reject(ed_pci_ncpus_big, "ncpus 8193");
	expect_reject(ed_pci_ncpus_zero, "ncpus 0 with functions");
	expect_reject(ed_pci_root_bad, "root id with a path");
	expect_reject(ed_pci_root_twice, "root twice");
	expect_reject(ed_pci_too_many, "641 functions");
	expect_reject(ed_pci_bdf_path, "path as bdf");
	expect_reject(ed_pci_bdf_twice, "bdf twice");
	expect_reject(ed_pci_unsorted, "functions out of order");
	expect_reject(ed_pci_root_unknown, "root not in roots");
	expect_reject(ed_pci_not_below_root, "function under another root's domain/bus");
	expect_reject(ed_pci_parent_missing, "parent not planned");
	expect_reject(ed_pci_parent_not_port, "parent an endpoint");
	expect_reject(ed_pci_parent_other_bus, "parent over another bus");
	expect_reject(ed_pci_port_with_parent, "a port with a parent");
	expect_reject(ed_pci_kind, "kind 3");
	expect_reject(ed_pci_irq, "irq -1");
	expect_reject(ed_pci_numa, "numa_node -2");
	expect_reject(ed_pci_revision, "revision 256");
	expect_reject(ed_pci_class, "class over 24 bits");
	expect_reject(ed_pci_gen, "link gen 0");
	expect_reject(ed_pci_bus, "bus 256");
	expect_reject(ed_pci_nres, "nres 18");
	expect_reject(ed_pci_cpulist_big, "cpu 8192");
	expect_reject(ed_pci_cpulist_junk, "cpulist junk");
	expect_reject(ed_pci_res_slot, "BAR slot past nres");
	expect_reject(ed_pci_res_twice, "BAR slot twice");
	expect_reject(ed_pci_res_empty, "empty BAR listed");
	expect_reject(ed_pci_res_wraps, "BAR past 2^64");
}

Test(state_pci, cpulist_parse_and_format)
{
	uint32_t bits[STATE_PCI_MAX_CPUS / 32] = { 0 };
	char out[64];
	int top;

	cr_assert_eq(state_cpulist_parse("3,0-1,2,8-9,8191", bits, &top), 0);
	cr_assert_eq(top, 8191);
	cr_assert_eq(state_cpulist_format(bits, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "0-3,8-9,8191");
	cr_assert_eq(state_cpulist_format(bits, out, 8), -ENAMETOOLONG);
	cr_assert_eq(state_cpulist_parse("", NULL, &top), -EINVAL);
	cr_assert_eq(state_cpulist_parse("1-", NULL, &top), -EINVAL);
	cr_assert_eq(state_cpulist_parse("-1", NULL, &top), -EINVAL);
	cr_assert_eq(state_cpulist_parse("5-4", NULL, &top), -EINVAL);
	cr_assert_eq(state_cpulist_parse("0,,1", NULL, &top), -EINVAL);
	cr_assert_eq(state_cpulist_parse("8192", NULL, &top), -EINVAL);
	cr_assert_eq(state_cpulist_parse(" 1", NULL, &top), -EINVAL);
}

