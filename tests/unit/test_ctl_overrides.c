/* The overrides document module mokka-ctl and mokka-kernellog share
 * (overrides/overrides*.c): parse, the check at each level, where the
 * document lives, scopes, paths, the effective view,
 * the Xid and its sequence number, the emitter's round trip through the
 * engine's reader; and, through the engine itself, that the same Xid
 * injected twice (two sequence numbers) is two NVML events. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "overrides/overrides.h"
#include "tests/unit/nvml_engine_fixture.h"

static struct yl_node *parse_ok(const char *text)
{
	char err[256] = "";
	struct yl_node *doc = ovr_parse(text, strlen(text), err, sizeof(err));

	cr_assert_not_null(doc, "parse: %s", err);
	return doc;
}

static char *emit_ok(const struct yl_node *doc)
{
	char *text = NULL;
	size_t len = 0;

	cr_assert_eq(ovr_emit(doc, &text, &len), 0);
	cr_assert_eq(strlen(text), len);
	return text;
}

/* emit, parse back: the same tree, and plain scalars stay plain. */
static void same_kinds(const struct yl_node *a, const struct yl_node *b)
{
	if (yl_is_null(a))
		return;
	if (a->kind == YL_SCALAR)
		cr_assert(a->quoted || !b->quoted, "plain '%s' came back quoted", a->str);
	for (size_t i = 0; i < a->n; i++)
		same_kinds(a->kids[i], b->kids[i]);
}

static void round_trip(const struct yl_node *doc)
{
	char *text = emit_ok(doc);
	struct yl_node *back = parse_ok(text);

	cr_assert(yl_equal(doc, back), "round trip changed the document:\n%s", text);
	same_kinds(doc, back);
	yl_free(back);
	free(text);
}

TestSuite(ctl_overrides);

Test(ctl_overrides, empty_is_a_fresh_document)
{
	struct yl_node *doc = parse_ok("# nothing yet\n");
	char *text = emit_ok(doc);

	cr_assert_str_eq(text, "version: 1\n");
	free(text);
	yl_free(doc);
	doc = parse_ok("");
	cr_assert_eq(ovr_check_shape(doc, (char[64]){ 0 }, 64), 0);
	yl_free(doc);
}

Test(ctl_overrides, emitter_round_trips)
{
	struct yl_node *doc = parse_ok(
		"version: 1\n"
		"all: {thermal: {temperature_gpu_c: 91}, fan: {speed_percent: \"40\"}}\n"
		"devices:\n"
		"  \"2\":\n"
		"    failure: {mode: lost, xid: {code: 79, seq: 17}}\n"
		"    nvlink_error: {rate: 1.5, links: [0, 3]}\n"
		"    processes: [{pid: 1, name: \"a b\"}, {pid: 2, name: 'x: y'}]\n"
		"    fabric: {cluster_uuid: \"00000000-0000-0000-0000-000000000001\"}\n"
		"    dynamic_metrics: {utilization: null}\n"
		"    odd: \"tab\\there, quote \\\" backslash \\\\ nel \\N ls \\L bom \\ufeff\"\n"
		"    \"key with space\": {\"#hash\": -3, neg: -0.5, empty: \"\", map: {}}\n"
		"    bools: [true, \"true\", yes, ~]\n");

	round_trip(doc);
	yl_free(doc);
}

Test(ctl_overrides, emitter_quotes_index_keys)
{
	struct yl_node *doc = parse_ok("devices: {3: {pstate: P2}}\n");
	char *text = emit_ok(doc);

	cr_assert_str_eq(text, "devices:\n  \"3\":\n    pstate: P2\n");
	free(text);
	yl_free(doc);
}

Test(ctl_overrides, shape)
{
	static const char *const bad[] = {
		"version: 2\n", "[1, 2]\n", "extra: 1\n", "all: 3\n", "devices: [1]\n",
		"devices: {x: {}}\n", "devices: {\"12345\": {}}\n", "devices: {\"1\": 5}\n",
	};
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct yl_node *doc = parse_ok(bad[i]);

		err[0] = '\0';
		cr_assert_lt(ovr_check_shape(doc, err, sizeof(err)), 0, "accepted: %s", bad[i]);
		cr_assert(strchr(err, ':'), "no position in '%s'", err);
		yl_free(doc);
	}
	struct yl_node *ok = parse_ok("version: 1\nall: null\ndevices: {\"0\": null, \"07\": {}}\n");
	cr_assert_eq(ovr_check_shape(ok, err, sizeof(err)), 0, "%s", err);
	yl_free(ok);
}

/* err after a refused document: "LINE:COL: KEY: why". */
static void refused(const char *text, const struct ovr_rules *r, const char *want)
{
	struct yl_node *doc = parse_ok(text);
	char err[256] = "";

	cr_assert_lt(ovr_validate(doc, r, err, sizeof(err)), 0, "accepted: %s", text);
	cr_assert_str_eq(err, want, "for: %s", text);
	yl_free(doc);
}

static void accepted(const char *text, const struct ovr_rules *r)
{
	struct yl_node *doc = parse_ok(text);
	char err[256] = "";

	cr_assert_eq(ovr_validate(doc, r, err, sizeof(err)), 0, "%s: %s", text, err);
	yl_free(doc);
}

Test(ctl_overrides, levels)
{
	static const unsigned gpus[] = { 0, 2 };
	const struct ovr_rules keys = { .level = OVR_KEYS };
	const struct ovr_rules schema = { .level = OVR_SCHEMA };
	const struct ovr_rules ctl = { .level = OVR_SCHEMA, .runtime = true, .gpus = gpus,
				       .ngpus = 2, .gpus_from = "c.yaml" };

	/* The engine's reading: DeviceConfig's keys at the top of a scope.
	 * Positions are the value's (yaml_lite keeps no key positions). */
	refused("all: {thermal_typo: {a: 1}}\n", &keys, "1:21: all.thermal_typo: unknown key");
	accepted("all: {thermal: {typo: x}}\n", &keys);
	/* mokka-ctl's: every key and type, as the profile compiler types them. */
	refused("all: {thermal: {typo: x}}\n", &schema, "1:23: all.thermal.typo: unknown key");
	refused("devices: {\"1\": {thermal: {temperature_gpu_c: hot}}}\n", &schema,
		"1:46: devices.1.thermal.temperature_gpu_c: expected an integer, got 'hot'");
	refused("all: {thermal: {temperature_gpu_c: \"5\"}}\n", &schema,
		"1:36: all.thermal.temperature_gpu_c: expected an integer, got '5'");
	refused("all: {power: {current_draw_mw: -5}}\n", &schema,
		"1:32: all.power.current_draw_mw: '-5' is out of range for a non-negative integer");
	refused("all: {thermal: 5}\n", &schema, "1:16: all.thermal: expected a mapping, got 5");
	refused("all: {nvlink_error: {links: [1, x]}}\n", &schema,
		"1:33: all.nvlink_error.links[1]: expected an integer, got 'x'");
	refused("all: {features: {fp8_support: maybe}}\n", &schema,
		"1:31: all.features.fp8_support: expected true or false, got 'maybe'");
	accepted("all: {features: {fp8_support: on}, thermal: {temperature_gpu_c: 0x1f},"
		 " nvlink_error: {rate: 1.5e3, links: null}, processes: [{pid: 1}]}\n", &schema);
	/* ...for the profile's GPUs, and not the keys the engine keeps at boot. */
	refused("devices: {\"1\": {}}\n", &ctl,
		"1:16: devices.1: no GPU with that index in c.yaml (indices 0,2)");
	refused("devices: {\"02\": {pci: {bus_id: x}}}\n", &ctl,
		"1:32: devices.2.pci.bus_id: not changeable at run time (the engine keeps the "
		"boot value; change the profile)");
	accepted("devices: {\"02\": {pci: {bus_id: x}}}\n", &schema);
}

Test(ctl_overrides, where_it_lives)
{
	char p[64];

	cr_assert_eq(ovr_path(p, sizeof(p), "/h", "/var/lib/m"), 0);
	cr_assert_str_eq(p, "/h/var/lib/m/driver/config/" OVR_DOC_NAME);
	cr_assert_eq(ovr_path_beside(p, sizeof(p), "/etc/nvml-mock"), 0);
	cr_assert_str_eq(p, "/etc/nvml-mock/" OVR_DOC_NAME);
	cr_assert_eq(ovr_lock_path(p, sizeof(p), "/x/" OVR_DOC_NAME), 0);
	cr_assert_str_eq(p, "/x/" OVR_LOCK_NAME);
	cr_assert_eq(ovr_path(p, 8, "", "/long/enough"), -ENAMETOOLONG);
}

Test(ctl_overrides, scopes_set_and_remove)
{
	struct yl_node *doc = parse_ok("devices: {\"02\": {thermal: 5}}\n"), *s;
	char *text;

	/* "02" names GPU 2, as for the engine; a scalar in the way is replaced. */
	s = ovr_scope(doc, 2, true);
	cr_assert_not_null(s);
	cr_assert_eq(ovr_set(s, "thermal.temperature_gpu_c", ovr_plain("91")), 0);
	cr_assert_eq(ovr_set(ovr_scope(doc, -1, true), "power.current_draw_mw",
			     ovr_plain("300000")), 0);
	cr_assert_eq(ovr_set(s, "a..b", ovr_plain("1")), -EINVAL);
	cr_assert_eq(ovr_set(s, "", ovr_plain("1")), -EINVAL);
	text = emit_ok(doc);
	cr_assert_str_eq(text, "devices:\n  \"02\":\n    thermal:\n      temperature_gpu_c: 91\n"
			       "all:\n  power:\n    current_draw_mw: 300000\n");
	free(text);
	/* removing the last key prunes the emptied parents */
	ovr_remove(s, "thermal.temperature_gpu_c");
	cr_assert_null(yl_get(s, "thermal"));
	ovr_remove(s, "no.such.path");
	cr_assert_null(ovr_scope(doc, 5, false));
	yl_free(doc);
}

Test(ctl_overrides, effective_view_and_xid)
{
	struct yl_node *doc = parse_ok(
		"all: {failure: {mode: lost, xid: {code: 79, seq: 5}}, thermal: {temperature_gpu_c: 1}}\n"
		"devices:\n"
		"  \"1\": {failure: {xid: {code: 48}}}\n"
		"  \"2\": {failure: null}\n"
		"  \"3\": {failure: {xid: {code: 13, seq: 9}}, thermal: {temperature_memory_c: 2}}\n");
	uint64_t code, seq;
	struct yl_node *eff;

	ovr_xid(doc, 0, &code, &seq);
	cr_assert(code == 79 && seq == 5);
	ovr_xid(doc, 1, &code, &seq);
	cr_assert(code == 48 && seq == 5, "maps merge key by key");
	ovr_xid(doc, 2, &code, &seq);
	cr_assert(code == 0 && seq == 0, "null replaces the inherited block");
	ovr_xid(doc, 3, &code, &seq);
	cr_assert(code == 13 && seq == 9);
	cr_assert_eq(ovr_max_seq(doc), 9);
	eff = ovr_effective(doc, 3);
	cr_assert_str_eq(yl_text(yl_path(eff, "thermal.temperature_gpu_c")), "1");
	cr_assert_str_eq(yl_text(yl_path(eff, "thermal.temperature_memory_c")), "2");
	cr_assert_str_eq(yl_text(yl_path(eff, "failure.mode")), "lost");
	yl_free(eff);
	yl_free(doc);
}

/* ---- through the engine: one event per injection ---- */

/* The Xid journal: one line per injection, whole lines only, bad lines
 * skipped, the newest OVR_XIDS_KEEP kept. */
Test(ctl_overrides, xid_journal)
{
	struct ovr_xid_event *ev, add = { .seq = 100, .code = 79, .index = -1 };
	char *text, p[256];
	size_t n, len;

	cr_assert_eq(ovr_xids_parse("# c\n10 2 79\n11 all 48\n0 1 1\n12 1 0\n13 1 65536\n"
				    "14 10000 5\n15 -1 5\n16 1 0x4F\n17 3 13 x\n18 4 31",
				    strlen("# c\n10 2 79\n11 all 48\n0 1 1\n12 1 0\n13 1 65536\n"
					   "14 10000 5\n15 -1 5\n16 1 0x4F\n17 3 13 x\n18 4 31"),
				    &ev, &n), 0);
	cr_assert_eq(n, 2, "only the two good, whole lines");
	cr_assert_eq(ev[0].seq, 10);
	cr_assert_eq(ev[0].index, 2);
	cr_assert_eq(ev[1].index, -1);
	cr_assert_eq(ev[1].code, 48);
	free(ev);
	cr_assert_eq(ovr_xids_append(NULL, 0, &add, &text, &len), 0);
	cr_assert(strstr(text, "\n100 all 79\n"), "%s", text);
	free(text);
	/* past OVR_XIDS_KEEP the oldest go */
	text = NULL;
	len = 0;
	for (unsigned i = 1; i <= OVR_XIDS_KEEP + 3; i++) {
		char *next;
		size_t nlen;
		struct ovr_xid_event e = { .seq = i, .code = 13, .index = (int)(i % 8) };

		cr_assert_eq(ovr_xids_append(text, len, &e, &next, &nlen), 0);
		free(text);
		text = next;
		len = nlen;
	}
	cr_assert_eq(ovr_xids_parse(text, len, &ev, &n), 0);
	cr_assert_eq(n, OVR_XIDS_KEEP);
	cr_assert_eq(ev[0].seq, 4);
	cr_assert_eq(ev[n - 1].seq, OVR_XIDS_KEEP + 3);
	free(ev);
	free(text);
	cr_assert_eq(ovr_xids_path(p, sizeof(p), "/x/" OVR_DOC_NAME), 0);
	cr_assert_str_eq(p, "/x/" OVR_XIDS_NAME);
	cr_assert_eq(ovr_lock_path(p, sizeof(p), OVR_DOC_NAME), 0);
	cr_assert_str_eq(p, OVR_LOCK_NAME);
}

TestSuite(ctl_overrides_engine, .init = setup, .fini = teardown);

static void write_xid(int gpu, uint64_t code, uint64_t seq)
{
	struct yl_node *doc = parse_ok(""), *x = yl_new(YL_MAP);
	char *text;

	cr_assert_eq(yl_map_set(x, "code", ovr_plainf("%llu", (unsigned long long)code)), 0);
	cr_assert_eq(yl_map_set(x, "seq", ovr_plainf("%llu", (unsigned long long)seq)), 0);
	cr_assert_eq(ovr_set(ovr_scope(doc, gpu, true), "failure.xid", x), 0);
	text = emit_ok(doc);
	put("overrides.yaml", text);
	free(text);
	yl_free(doc);
}

Test(ctl_overrides_engine, same_xid_twice_is_two_events)
{
	unsigned long long xid = 0;

	put("config.yaml", base_profile);
	put("overrides.yaml", "");
	init_ok();
	struct mdev *d = engine_device(0);

	write_xid(0, 79, 100);
	usleep(1100 * 1000);
	cr_assert_eq(mdev_guard(d), ENG_SUCCESS, "an Xid alone breaks nothing");
	cr_assert(mdev_take_xid(d, &xid) && xid == 79);
	cr_assert_not(mdev_take_xid(d, &xid), "once per injection");
	/* An unrelated reload keeps the injection delivered. */
	usleep(1100 * 1000);
	mdev_guard(d);
	cr_assert_not(mdev_take_xid(d, &xid));
	/* The same code, a new injection. */
	write_xid(0, 79, 101);
	usleep(1100 * 1000);
	mdev_guard(d);
	cr_assert(mdev_take_xid(d, &xid) && xid == 79, "the second injection is a new event");
	cr_assert_not(mdev_take_xid(d, &xid));
	cr_assert_not(mdev_take_xid(engine_device(1), &xid), "other GPUs see nothing");
}
