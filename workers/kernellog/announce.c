/* What the real driver prints for an Xid (SURFACES.md §6, §11.4): once per
 * GPU the identity lines that map its PCI address to its UUID (NVSentinel
 * builds its GPU entity from them), then
 *   NVRM: Xid (PCI:dddd:bb:dd): <code>, pid='<unknown>', name=<unknown>, <text>
 * (gpud's pattern needs the comma after the code), and for Xid 79 the
 * "fallen off the bus" follow-up.  Every line starts with "kernel: " so
 * journald keeps "NVRM:" in MESSAGE for a userspace write to /dev/kmsg. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/state.h"
#include "workers/kernellog/kernellog.h"

/* Short descriptions in the driver's style for the common Xids (decision
 * §11.4); the NVLink ones name a link so link-aware parsers find one. */
static const struct {
	unsigned code;
	const char *text;
} catalog[] = {
	{ 13, "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address" },
	{ 31, "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted "
	      "@ 0x7f00_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ" },
	{ 43, "Ch 00000008" },
	{ 45, "Ch 00000008" },
	{ 48, "DBE (Double Bit Error) ECC Error" },
	{ 61, "Internal micro-controller breakpoint/warning" },
	{ 62, "Internal micro-controller halt" },
	{ 63, "Row Remapper: New row marked for remapping, reset gpu to activate." },
	{ 64, "Row Remapper Error: failed to remap a row" },
	{ 74, "NVLink: fatal error detected on link 0(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)" },
	{ 79, "GPU has fallen off the bus." },
	{ 92, "High single-bit ECC error rate" },
	{ 94, "Contained: SM (0x1). RST: No, D-RST: No" },
	{ 95, "Uncontained: LTC TAG (0x2,0x0). RST: Yes, D-RST: No" },
	{ 119, "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected "
	       "function 76 (GSP_RM_CONTROL)" },
	{ 120, "GSP task exception" },
	{ 136, "GPU encountered a fatal internal error" },
	{ 140, "Unrecovered ECC error" },
	{ 143, "GPU initialization failure" },
	{ 144, "NVLink: NETIR error on Link 0 (0x0 0x0)" },
	{ 145, "NVLink: RLW error on Link 0 (0x0 0x0)" },
	{ 146, "NVLink: TLW error on Link 0 (0x0 0x0)" },
	{ 147, "NVLink: TREX error on Link 0 (0x0 0x0)" },
	{ 148, "NVLink: NVLPW_CTRL error on Link 0 (0x0 0x0)" },
	{ 149, "NVLink: NETIR error on Link 0 (0x0 0x0)" },
	{ 150, "NVLink: MSE error on Link 0 (0x0 0x0)" },
	{ 154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)" },
};

const char *klog_xid_text(uint64_t code)
{
	for (size_t i = 0; i < sizeof(catalog) / sizeof(catalog[0]); i++)
		if (catalog[i].code == code)
			return catalog[i].text;
	return "Error";
}

bool klog_valid_uuid(const char *s)
{
	size_t n = strlen(s);

	return n > 4 && n < sizeof(((struct klog_dev *)0)->uuid) && !strncmp(s, "GPU-", 4) &&
	       strspn(s + 4, "0123456789abcdefABCDEF-") == n - 4;
}

bool klog_valid_serial(const char *s)
{
	size_t n = strlen(s);

	return n < sizeof(((struct klog_dev *)0)->serial) &&
	       strspn(s, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_.") == n;
}

int klog_devices_parse(const char *text, struct klog_dev *out, int max,
		       void (*warn)(const char *msg))
{
	int n = 0;

	for (const char *line = text; line && *line && n < max;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[512], bdf[32], uuid[128], serial[128], msg[600], tail;
		unsigned idx;

		if (len < sizeof(buf) && len && line[0] != '#') {
			memcpy(buf, line, len);
			buf[len] = '\0';
			if (sscanf(buf, "%u %31s %127s %127s %c", &idx, bdf, uuid, serial, &tail) == 4 &&
			    state_valid_bdf(bdf) && klog_valid_uuid(uuid) &&
			    (!strcmp(serial, "-") || klog_valid_serial(serial))) {
				struct klog_dev *d = &out[n++];

				d->index = idx;
				snprintf(d->bdf, sizeof(d->bdf), "%s", bdf);
				snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
				snprintf(d->serial, sizeof(d->serial), "%s",
					 strcmp(serial, "-") ? serial : "");
			} else if (warn) {
				snprintf(msg, sizeof(msg), "device map: skipping malformed line '%.400s'",
					 buf);
				warn(msg);
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return n;
}

int klog_render(const struct klog_dev *d, uint64_t code, bool identity,
		char lines[KLOG_MAX_LINES][KLOG_LINE_MAX])
{
	char pci[16];
	int n = 0;

	/* "PCI:dddd:bb:dd": lowercase, without the function. */
	snprintf(pci, sizeof(pci), "%.10s", d->bdf);
	if (identity) {
		snprintf(lines[n++], KLOG_LINE_MAX, "<4>kernel: NVRM: GPU at PCI:%s: %s\n", pci,
			 d->uuid);
		if (d->serial[0])
			snprintf(lines[n++], KLOG_LINE_MAX,
				 "<4>kernel: NVRM: GPU Board Serial Number: %s\n", d->serial);
	}
	snprintf(lines[n++], KLOG_LINE_MAX,
		 "<3>kernel: NVRM: Xid (PCI:%s): %llu, pid='<unknown>', name=<unknown>, %s\n",
		 pci, (unsigned long long)code, klog_xid_text(code));
	if (code == 79)
		snprintf(lines[n++], KLOG_LINE_MAX,
			 "<3>kernel: NVRM: GPU %s: GPU has fallen off the bus.\n", d->bdf);
	return n;
}

/* ---- announced state ---- */

static bool parse_entry(const char *line, struct klog_entry *e)
{
	unsigned long long code, seq, jseq;
	unsigned ident;
	char bdf[32], extra;
	int n = sscanf(line, "%u %31s %llu %llu %llu %u %c", &e->index, bdf, &code, &seq, &jseq,
		       &ident, &extra);

	/* The older four fields: a document Xid (code 0 = nothing). */
	if (n == 4 && code)
		jseq = ident = 0;
	else if (n != 6 || ident > 1)
		return false;
	if (!state_valid_bdf(bdf))
		return false;
	snprintf(e->bdf, sizeof(e->bdf), "%s", bdf);
	e->code = code;
	e->seq = seq;
	e->jseq = jseq;
	e->identified = ident;
	return true;
}

void klog_announced_parse(const char *text, struct klog_announced *a)
{
	a->n = 0;
	a->journal = 0;
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[256], *end;

		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			if (!strncmp(buf, "journal ", 8) && isdigit((unsigned char)buf[8])) {
				unsigned long long w = strtoull(buf + 8, &end, 10);
				if (!*end)
					a->journal = w;
			} else if (a->n < KLOG_MAX_DEVICES && parse_entry(buf, &a->e[a->n]) &&
				   !klog_announced_find(a, a->e[a->n].index)) {
				a->n++;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
}

char *klog_announced_render(const struct klog_announced *a)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	fputs("# mokka-kernellog: what was announced (journal: every journal line up to that seq;\n"
	      "# per GPU: index bdf code seq of the document, journal seq, identity printed)\n", f);
	fprintf(f, "journal %llu\n", (unsigned long long)a->journal);
	for (int i = 0; i < a->n; i++)
		fprintf(f, "%u %s %llu %llu %llu %d\n", a->e[i].index, a->e[i].bdf,
			(unsigned long long)a->e[i].code, (unsigned long long)a->e[i].seq,
			(unsigned long long)a->e[i].jseq, a->e[i].identified ? 1 : 0);
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

struct klog_entry *klog_announced_find(struct klog_announced *a, unsigned index)
{
	for (int i = 0; i < a->n; i++)
		if (a->e[i].index == index)
			return &a->e[i];
	return NULL;
}

struct klog_entry *klog_announced_get(struct klog_announced *a, unsigned index, const char *bdf)
{
	struct klog_entry *e = klog_announced_find(a, index);

	if (e || a->n == KLOG_MAX_DEVICES)
		return e;
	e = &a->e[a->n++];
	*e = (struct klog_entry){ .index = index };
	snprintf(e->bdf, sizeof(e->bdf), "%s", bdf);
	return e;
}

void klog_announced_drop(struct klog_announced *a, unsigned index)
{
	struct klog_entry *e = klog_announced_find(a, index);

	if (e) {
		*e = a->e[a->n - 1];
		a->n--;
	}
}
