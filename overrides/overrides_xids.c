/* The Xid journal (overrides.h): one line per accepted injection, oldest
 * first, "SEQ TARGET CODE" with TARGET a GPU index or "all".  mokka-ctl
 * appends under the overrides lock (seq strictly increasing in file order);
 * mokka-kernellog announces each line once.  The document keeps only the
 * latest Xid per GPU; the journal keeps every one, so injections that land
 * between two of kernellog's reads are not folded into one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overrides/overrides.h"

int ovr_xids_path(char *buf, size_t size, const char *doc_path)
{
	const char *slash = strrchr(doc_path, '/');
	int dir = slash ? (int)(slash - doc_path + 1) : 0, n;

	n = snprintf(buf, size, "%.*s" OVR_XIDS_NAME, dir, doc_path);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* A decimal u64 of 1..20 digits, nothing else (no sign, no space). */
static bool dec_u64(const char *s, uint64_t *out)
{
	size_t n = strlen(s);
	uint64_t v = 0;

	if (!n || n > 20 || strspn(s, "0123456789") != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool parse_line(const char *line, size_t len, struct ovr_xid_event *e)
{
	char buf[96], seq[32], tgt[32], code[32], extra;
	uint64_t idx;

	if (!len || len >= sizeof(buf) || line[0] == '#')
		return false;
	memcpy(buf, line, len);
	buf[len] = '\0';
	if (sscanf(buf, "%31s %31s %31s %c", seq, tgt, code, &extra) != 3 ||
	    !dec_u64(seq, &e->seq) || !e->seq || !dec_u64(code, &e->code) || !e->code ||
	    e->code > OVR_XID_MAX)
		return false;
	if (!strcmp(tgt, "all")) {
		e->index = -1;
		return true;
	}
	if (!dec_u64(tgt, &idx) || idx > OVR_MAX_INDEX)
		return false;
	e->index = (int)idx;
	return true;
}

int ovr_xids_parse(const char *text, size_t len, struct ovr_xid_event **out, size_t *n)
{
	struct ovr_xid_event *ev = NULL;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	/* Only whole lines: a line without its newline is still being written. */
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct ovr_xid_event e;

		if (!nl)
			break;
		if (parse_line(p, (size_t)(nl - p), &e)) {
			if (*n == cap) {
				size_t c = cap ? cap * 2 : 64;
				struct ovr_xid_event *m = realloc(ev, c * sizeof(*ev));
				if (!m) {
					free(ev);
					return -ENOMEM;
				}
				ev = m;
				cap = c;
			}
			ev[(*n)++] = e;
		}
		p = nl + 1;
	}
	*out = ev;
	return 0;
}

int ovr_xids_render(const struct ovr_xid_event *ev, size_t n, char **out, size_t *len)
{
	FILE *f = open_memstream(out, len);

	if (!f)
		return -ENOMEM;
	fputs("# mokka-ctl: every Xid injected (seq target code), oldest first; "
	      "mokka-kernellog announces each once\n", f);
	for (size_t i = 0; i < n; i++) {
		if (ev[i].index < 0)
			fprintf(f, "%llu all %llu\n", (unsigned long long)ev[i].seq,
				(unsigned long long)ev[i].code);
		else
			fprintf(f, "%llu %d %llu\n", (unsigned long long)ev[i].seq, ev[i].index,
				(unsigned long long)ev[i].code);
	}
	if (fclose(f) != 0) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

int ovr_xids_append(const char *old, size_t old_len, const struct ovr_xid_event *add,
		    char **out, size_t *len)
{
	struct ovr_xid_event *ev;
	size_t n, skip;
	int r = ovr_xids_parse(old ? old : "", old ? old_len : 0, &ev, &n);

	if (r < 0)
		return r;
	{
		struct ovr_xid_event *m = realloc(ev, (n + 1) * sizeof(*ev));
		if (!m) {
			free(ev);
			return -ENOMEM;
		}
		ev = m;
	}
	ev[n++] = *add;
	/* The newest OVR_XIDS_KEEP: kernellog reads every second, so only a
	 * daemon down for that many injections misses one. */
	skip = n > OVR_XIDS_KEEP ? n - OVR_XIDS_KEEP : 0;
	r = ovr_xids_render(ev + skip, n - skip, out, len);
	free(ev);
	return r;
}
