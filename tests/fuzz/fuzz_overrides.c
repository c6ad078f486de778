/* Fuzz the overrides document editor (overrides/overrides*.c) and kernellog's
 * text parsers: any input that parses must survive every level of the
 * check (a document passing one level passes the levels below it), the
 * effective view, edits like mokka-ctl's, and emit -> parse with the same
 * tree; the device map and announced-state readers must only ever return
 * entries that pass their checks.  Aborts when a contract breaks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "overrides/overrides.h"
#include "ipc/state.h"
#include "workers/kernellog/kernellog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const struct yl_node *doc)
{
	char *text = NULL, err[256];
	size_t len = 0;
	struct yl_node *back;

	if (ovr_emit(doc, &text, &len) < 0)
		abort();
	back = ovr_parse(text, len, err, sizeof(err));
	/* the emitter must write what the engine's reader takes back */
	if (!back || !yl_equal(doc, back))
		abort();
	yl_free(back);
	free(text);
}

static void check_levels(const struct yl_node *doc)
{
	static const unsigned gpus[] = { 0, 1, 3 };
	const struct ovr_rules rules[] = {
		{ .level = OVR_SHAPE }, { .level = OVR_KEYS },
		{ .level = OVR_SCHEMA }, { .level = OVR_SCHEMA, .runtime = true },
		{ .level = OVR_SCHEMA, .runtime = true, .gpus = gpus, .ngpus = 3,
		  .gpus_from = "fuzz" },
	};
	char err[256];
	bool failed = false;

	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		err[0] = '\0';
		bool bad = ovr_validate(doc, &rules[i], err, sizeof(err)) < 0;
		/* every refusal says where; stricter rules never accept more */
		if ((bad && !strchr(err, ':')) || (failed && !bad))
			abort();
		failed = bad;
	}
}

static void kernellog_parsers(const char *text)
{
	struct klog_dev d[KLOG_MAX_DEVICES];
	struct klog_announced a;
	char lines[KLOG_MAX_LINES][KLOG_LINE_MAX], *out;
	int n = klog_devices_parse(text, d, KLOG_MAX_DEVICES, NULL);

	for (int i = 0; i < n; i++) {
		if (!state_valid_bdf(d[i].bdf) || !klog_valid_uuid(d[i].uuid) ||
		    !klog_valid_serial(d[i].serial))
			abort();
		int m = klog_render(&d[i], d[i].index, true, lines);
		for (int l = 0; l < m; l++)	/* one record per line, nothing injected */
			if (strchr(lines[l], '\n') != lines[l] + strlen(lines[l]) - 1)
				abort();
	}
	klog_announced_parse(text, &a);
	if (a.n < 0 || a.n > KLOG_MAX_DEVICES)
		abort();
	for (int i = 0; i < a.n; i++)
		if (!state_valid_bdf(a.e[i].bdf))
			abort();
	if ((out = klog_announced_render(&a))) {
		struct klog_announced b;
		klog_announced_parse(out, &b);
		if (b.n != a.n || b.journal != a.journal)
			abort();
		for (int i = 0; i < a.n; i++)	/* fields: the structs have padding */
			if (a.e[i].index != b.e[i].index || strcmp(a.e[i].bdf, b.e[i].bdf) ||
			    a.e[i].code != b.e[i].code || a.e[i].seq != b.e[i].seq ||
			    a.e[i].jseq != b.e[i].jseq || a.e[i].identified != b.e[i].identified)
				abort();
		free(out);
	}
}

/* The Xid journal: only valid events come out, and they render and read
 * back the same. */
static void xid_journal(const char *text, size_t len)
{
	struct ovr_xid_event *ev, *back;
	size_t n, m, olen;
	char *out;

	if (ovr_xids_parse(text, len, &ev, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (!ev[i].seq || !ev[i].code || ev[i].code > OVR_XID_MAX || ev[i].index < -1 ||
		    ev[i].index > OVR_MAX_INDEX)
			abort();
	if (ovr_xids_render(ev, n, &out, &olen) == 0) {
		if (ovr_xids_parse(out, olen, &back, &m) < 0 || m != n)
			abort();
		for (size_t i = 0; i < n; i++)
			if (ev[i].seq != back[i].seq || ev[i].code != back[i].code ||
			    ev[i].index != back[i].index)
				abort();
		free(back);
		free(out);
	}
	free(ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256], *text = malloc(size + 1);
	struct yl_node *doc;
	uint64_t code, seq;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	kernellog_parsers(text);
	xid_journal(text, size);
	free(text);

	doc = ovr_parse((const char *)data, size, err, sizeof(err));
	if (!doc)
		return 0;
	check_round_trip(doc);
	check_levels(doc);
	if (ovr_check_shape(doc, err, sizeof(err)) < 0 || doc->kind != YL_MAP) {
		yl_free(doc);
		return 0;
	}
	for (unsigned i = 0; i < 4; i++) {
		struct yl_node *eff = ovr_effective(doc, i);
		if (!eff)
			abort();
		check_round_trip(eff);
		yl_free(eff);
		ovr_xid(doc, i, &code, &seq);
	}
	/* mokka-ctl's edits: an injection, a value, a removal, per scope. */
	for (int scope = -1; scope < 2; scope++) {
		struct yl_node *s = ovr_scope(doc, scope, true), *x = yl_new(YL_MAP);

		if (!s || !x)
			abort();
		yl_map_set(x, "code", ovr_plain("79"));
		yl_map_set(x, "seq", ovr_plainf("%llu", (unsigned long long)ovr_max_seq(doc) + 1));
		if (ovr_set(s, "failure.xid", x) < 0 ||
		    ovr_set(s, "thermal.temperature_gpu_c", ovr_plain("91")) < 0)
			abort();
		if (!yl_text(yl_path(s, "failure.xid.code")) ||
		    strcmp(yl_text(yl_path(s, "failure.xid.code")), "79"))
			abort();
		ovr_remove(s, "fabric.health");
		check_round_trip(doc);
	}
	if (ovr_check_shape(doc, err, sizeof(err)) < 0)
		abort();
	yl_free(doc);
	return 0;
}
