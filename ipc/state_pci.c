/* The PCI plan's part of the state document:
 *
 *   "pci": {"ncpus": 8, "roots": ["pci0000:00", ...],
 *           "fns": [{"bdf": "0000:1a:00.0", "root_id": ..., "parent_bdf": ...,
 *                    "kind": 0, ..., "res": [{"slot", "start", "size", "flags"}]}]}
 *
 * The state crosses the process boundary, so the decoder takes nothing on
 * trust: every count, name and range is checked, and so is the tree shape
 * the renderers build paths from (a parent is a root port of the same root
 * whose secondary bus is the child's; functions sorted and unique). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/state.h"
#include "ipc/state_fields.h"

static const struct field fn_fields[] = {
	FS(struct state_pci_fn, bdf),
	FS(struct state_pci_fn, root_id),
	FS(struct state_pci_fn, parent_bdf),
	FI(struct state_pci_fn, kind, F_INT),
	FI(struct state_pci_fn, vendor, F_U16),
	FI(struct state_pci_fn, device, F_U16),
	FI(struct state_pci_fn, subsys_vendor, F_U16),
	FI(struct state_pci_fn, subsys_device, F_U16),
	FI(struct state_pci_fn, class_code, F_U32),
	FI(struct state_pci_fn, revision, F_INT),
	FI(struct state_pci_fn, irq, F_INT),
	FI(struct state_pci_fn, numa_node, F_INT),
	FN(struct state_pci_fn, "max_gen", link.max_gen, F_INT),
	FN(struct state_pci_fn, "max_width", link.max_width, F_INT),
	FN(struct state_pci_fn, "cur_gen", link.cur_gen, F_INT),
	FN(struct state_pci_fn, "cur_width", link.cur_width, F_INT),
	FI(struct state_pci_fn, primary_bus, F_INT),
	FI(struct state_pci_fn, secondary_bus, F_INT),
	FI(struct state_pci_fn, subordinate_bus, F_INT),
	FI(struct state_pci_fn, nres, F_INT),
	FS(struct state_pci_fn, cpulist),
	FS(struct state_pci_fn, driver),
};

/* One BAR or window: its slot in the kernel's resource table. */
struct res_row {
	int slot;
	struct state_pci_res r;
};

static const struct field res_fields[] = {
	FI(struct res_row, slot, F_INT),
	FN(struct res_row, "start", r.start, F_U64),
	FN(struct res_row, "size", r.size, F_U64),
	FN(struct res_row, "flags", r.flags, F_U32),
};

/* Integer members and their ranges, checked after the type pass. */
static const struct {
	const char *key;
	size_t off;
	int lo, hi;
} fn_ranges[] = {
	{ "kind", offsetof(struct state_pci_fn, kind), 0, STATE_PCI_KINDS - 1 },
	{ "revision", offsetof(struct state_pci_fn, revision), 0, 0xff },
	{ "irq", offsetof(struct state_pci_fn, irq), 0, 0xffff },
	{ "numa_node", offsetof(struct state_pci_fn, numa_node), -1, 0xffff },
	{ "max_gen", offsetof(struct state_pci_fn, link.max_gen), 1, 16 },
	{ "max_width", offsetof(struct state_pci_fn, link.max_width), 1, 32 },
	{ "cur_gen", offsetof(struct state_pci_fn, link.cur_gen), 1, 16 },
	{ "cur_width", offsetof(struct state_pci_fn, link.cur_width), 1, 32 },
	{ "primary_bus", offsetof(struct state_pci_fn, primary_bus), 0, 0xff },
	{ "secondary_bus", offsetof(struct state_pci_fn, secondary_bus), 0, 0xff },
	{ "subordinate_bus", offsetof(struct state_pci_fn, subordinate_bus), 0, 0xff },
	{ "nres", offsetof(struct state_pci_fn, nres), 0, STATE_PCI_NUM_RESOURCES },
};

static void cpu_set_range(uint32_t *bits, long lo, long hi)
{
	for (long c = lo; c <= hi; c++)
		bits[c / 32] |= 1u << (c % 32);
}

int state_cpulist_parse(const char *s, uint32_t *bits, int *top)
{
	*top = -1;
	while (*s) {
		char *end;
		long lo, hi;

		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		lo = hi = strtol(s, &end, 10);
		if (*end == '-') {
			s = end + 1;
			if (!isdigit((unsigned char)*s))
				return -EINVAL;
			hi = strtol(s, &end, 10);
			if (hi < lo)
				return -EINVAL;
		}
		if (hi >= STATE_PCI_MAX_CPUS || (*end != ',' && *end != '\0'))
			return -EINVAL;
		if (bits)
			cpu_set_range(bits, lo, hi);
		if (hi > *top)
			*top = (int)hi;
		s = *end ? end + 1 : end;
	}
	return *top < 0 ? -EINVAL : 0;
}

static bool bit(const uint32_t *bits, int c)
{
	return bits[c / 32] >> (c % 32) & 1;
}

int state_cpulist_format(const uint32_t *bits, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int c = 0; c < STATE_PCI_MAX_CPUS; c++) {
		int lo = c;

		if (!bit(bits, c))
			continue;
		while (c + 1 < STATE_PCI_MAX_CPUS && bit(bits, c + 1))
			c++;
		off += (size_t)(lo == c ? snprintf(buf + off, len - off, "%s%d", off ? "," : "", lo)
				: snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", lo, c));
		if (off >= len)
			return -ENAMETOOLONG;
	}
	return 0;
}

const struct state_pci_fn *state_pci_find(const struct state_pci *p, const char *bdf)
{
	for (int i = 0; i < p->num_fns && i < STATE_PCI_MAX_FNS; i++)
		if (strcmp(p->fns[i].bdf, bdf) == 0)
			return &p->fns[i];
	return NULL;
}

static int put_fn(cJSON *arr, const struct state_pci_fn *f)
{
	cJSON *o = cJSON_CreateObject(), *res, *r;

	if (!o)
		return -ENOMEM;
	cJSON_AddItemToArray(arr, o);
	if (state_put_fields(o, f, fn_fields, NFIELDS(fn_fields)) < 0 ||
	    !(res = cJSON_AddArrayToObject(o, "res")))
		return -ENOMEM;
	for (int i = 0; i < f->nres && i < STATE_PCI_NUM_RESOURCES; i++) {
		struct res_row row = { i, f->res[i] };

		if (!f->res[i].size)
			continue;
		if (!(r = cJSON_CreateObject()))
			return -ENOMEM;
		cJSON_AddItemToArray(res, r);
		if (state_put_fields(r, &row, res_fields, NFIELDS(res_fields)) < 0)
			return -ENOMEM;
	}
	return 0;
}

int state_pci_encode(cJSON *root, const struct state_pci *p)
{
	cJSON *o = cJSON_AddObjectToObject(root, "pci"), *roots, *fns, *v;

	if (!o || !cJSON_AddNumberToObject(o, "ncpus", p->ncpus) ||
	    !(roots = cJSON_AddArrayToObject(o, "roots")) ||
	    !(fns = cJSON_AddArrayToObject(o, "fns")))
		return -ENOMEM;
	for (int i = 0; i < p->num_roots; i++) {
		if (!(v = cJSON_CreateString(p->roots[i])))
			return -ENOMEM;
		cJSON_AddItemToArray(roots, v);
	}
	for (int i = 0; i < p->num_fns; i++)
		if (put_fn(fns, &p->fns[i]) < 0)
			return -ENOMEM;
	return 0;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int get_res(const cJSON *arr, struct state_pci_fn *f, int i, char *err, size_t errlen)
{
	const cJSON *it;

	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > f->nres)
		return fail(err, errlen, "state: pci.fns[%d].res: not an array of at most %d",
			    i, f->nres);
	cJSON_ArrayForEach(it, arr) {
		struct res_row row;

		memset(&row, 0, sizeof(row));	/* padding too: plans compare bytewise */
		if (state_get_fields(it, &row, res_fields, NFIELDS(res_fields), "pci.fns[].res[]",
				     err, errlen) < 0)
			return -EINVAL;
		if (row.slot < 0 || row.slot >= f->nres || f->res[row.slot].size)
			return fail(err, errlen, "state: pci.fns[%d].res: slot %d out of range "
				    "or twice", i, row.slot);
		if (!row.r.size || row.r.start + row.r.size < row.r.start)
			return fail(err, errlen, "state: pci.fns[%d].res[%d]: empty or past 2^64",
				    i, row.slot);
		f->res[row.slot] = row.r;
	}
	return 0;
}

static bool root_known(const struct state_pci *p, const char *id)
{
	for (int i = 0; i < p->num_roots; i++)
		if (strcmp(p->roots[i], id) == 0)
			return true;
	return false;
}

static unsigned fn_key(const char *bdf)
{
	unsigned dom, bus, dev, fn;

	sscanf(bdf, "%x:%x:%x.%x", &dom, &bus, &dev, &fn);
	return dom << 16 | bus << 8 | dev << 3 | fn;
}

/* The fields alone: names, ranges, cpulist. */
static int check_fn(const struct state_pci *p, const struct state_pci_fn *f, int i,
		    char *err, size_t errlen)
{
	int top;

	for (size_t k = 0; k < NFIELDS(fn_ranges); k++) {
		int v = *(const int *)((const char *)f + fn_ranges[k].off);
		if (v < fn_ranges[k].lo || v > fn_ranges[k].hi)
			return fail(err, errlen, "state: pci.fns[%d].%s: %d not in %d..%d", i,
				    fn_ranges[k].key, v, fn_ranges[k].lo, fn_ranges[k].hi);
	}
	if (!state_valid_bdf(f->bdf) || !state_valid_root_id(f->root_id) ||
	    (f->parent_bdf[0] && !state_valid_bdf(f->parent_bdf)))
		return fail(err, errlen, "state: pci.fns[%d]: bdf, root_id or parent_bdf "
			    "malformed", i);
	if (!root_known(p, f->root_id))
		return fail(err, errlen, "state: pci.fns[%d]: root %s not in pci.roots", i,
			    f->root_id);
	if (f->class_code > 0xffffff)
		return fail(err, errlen, "state: pci.fns[%d].class_code: over 24 bits", i);
	if (f->cpulist[0] && state_cpulist_parse(f->cpulist, NULL, &top) < 0)
		return fail(err, errlen, "state: pci.fns[%d].cpulist: not a cpulist below %d", i,
			    STATE_PCI_MAX_CPUS);
	/* The driver becomes a sysfs directory name: an accelerator's only. */
	if ((f->kind == STATE_PCI_ACCEL) != (f->driver[0] != '\0') ||
	    strspn(f->driver, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(f->driver))
		return fail(err, errlen, "state: pci.fns[%d].driver: \"%s\" (a name of "
			    "[a-z0-9_-], set for accelerators only)", i, f->driver);
	return 0;
}

/* The tree: sorted and unique, under its root, parents are its ports. */
static int check_tree(const struct state_pci *p, char *err, size_t errlen)
{
	for (int i = 0; i < p->num_fns; i++) {
		const struct state_pci_fn *f = &p->fns[i], *up;
		unsigned key = fn_key(f->bdf), bus = key >> 8 & 0xff, rdom = 0, rbus = 0;

		sscanf(f->root_id, "pci%x:%x", &rdom, &rbus);
		if (i && key <= fn_key(p->fns[i - 1].bdf))
			return fail(err, errlen, "state: pci.fns[%d]: %s out of order or twice",
				    i, f->bdf);
		if (key >> 16 != rdom || bus < rbus)
			return fail(err, errlen, "state: pci.fns[%d]: %s not below %s", i, f->bdf,
				    f->root_id);
		if (f->kind == STATE_PCI_PORT && (f->parent_bdf[0] || bus != rbus))
			return fail(err, errlen, "state: pci.fns[%d]: root port %s not on its root's "
				    "bus", i, f->bdf);
		if (!f->parent_bdf[0])
			continue;
		up = state_pci_find(p, f->parent_bdf);
		if (!up || up->kind != STATE_PCI_PORT || strcmp(up->root_id, f->root_id) != 0 ||
		    up->secondary_bus != (int)bus)
			return fail(err, errlen, "state: pci.fns[%d]: parent %s is not a port of %s "
				    "over bus %02x", i, f->parent_bdf, f->root_id, bus);
	}
	return 0;
}

static int get_roots(const cJSON *arr, struct state_pci *p, char *err, size_t errlen)
{
	const cJSON *it;

	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > STATE_PCI_MAX_ROOTS)
		return fail(err, errlen, "state: pci.roots: not an array of at most %d",
			    STATE_PCI_MAX_ROOTS);
	cJSON_ArrayForEach(it, arr) {
		if (!cJSON_IsString(it) || !state_valid_root_id(it->valuestring) ||
		    root_known(p, it->valuestring))
			return fail(err, errlen, "state: pci.roots[%d]: not pcidddd:bb, or twice",
				    p->num_roots);
		strcpy(p->roots[p->num_roots++], it->valuestring);
	}
	return 0;
}

int state_pci_decode(const cJSON *root, struct state_pci *p, char *err, size_t errlen)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "pci"), *v, *arr, *it;

	memset(p, 0, sizeof(*p));
	if (!cJSON_IsObject(o))
		return fail(err, errlen, "state: pci: missing or not an object");
	/* 0 only in a state never planned (no functions, checked below). */
	v = cJSON_GetObjectItemCaseSensitive(o, "ncpus");
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > STATE_PCI_MAX_CPUS)
		return fail(err, errlen, "state: pci.ncpus: not 0..%d", STATE_PCI_MAX_CPUS);
	p->ncpus = v->valueint;
	if (get_roots(cJSON_GetObjectItemCaseSensitive(o, "roots"), p, err, errlen) < 0)
		return -EINVAL;
	arr = cJSON_GetObjectItemCaseSensitive(o, "fns");
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > STATE_PCI_MAX_FNS)
		return fail(err, errlen, "state: pci.fns: not an array of at most %d",
			    STATE_PCI_MAX_FNS);
	cJSON_ArrayForEach(it, arr) {
		struct state_pci_fn *f = &p->fns[p->num_fns];

		if (state_get_fields(it, f, fn_fields, NFIELDS(fn_fields), "pci.fns[]",
				     err, errlen) < 0 ||
		    check_fn(p, f, p->num_fns, err, errlen) < 0 ||
		    get_res(cJSON_GetObjectItemCaseSensitive(it, "res"), f, p->num_fns,
			    err, errlen) < 0)
			return -EINVAL;
		p->num_fns++;
	}
	if (p->num_fns && !p->ncpus)
		return fail(err, errlen, "state: pci.ncpus: 0 with functions planned");
	return check_tree(p, err, errlen);
}
