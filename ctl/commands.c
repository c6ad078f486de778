/* mokka-ctl's commands: each one edits the scope its --gpu names (the
 * `all` block or devices."<index>") with the keys the mock NVML engine
 * reads (NVML.md §4-§6).  Values are range-checked here; key names and
 * types are checked again against DeviceConfig's schema before anything is
 * written (docfile.c ctl_validate).  The error-counter and fabric commands
 * are commands_errors.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctl/ctl.h"

int ctl_fail(struct ctl_call *call, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(call->err, call->errlen, fmt, ap);
	va_end(ap);
	return rc;
}

const char *ctl_opt(const struct ctl_call *call, const char *name)
{
	for (int i = 0; i < call->nopts; i++)
		if (!strcmp(call->opts[i].name, name))
			return call->opts[i].value ? call->opts[i].value : "";
	return NULL;
}

bool ctl_flag(const struct ctl_call *call, const char *name)
{
	return ctl_opt(call, name) != NULL;
}

/* ---- values ---- */

/* Plain decimal only, as the driver prints its numbers (an Xid is "79"):
 * an optional '-', digits, and for a number an optional ".digits".  strtod
 * alone would take " 79", "0x4F", "1e3", "inf". */
static bool decimal(const char *v, bool integer)
{
	size_t n = v[0] == '-', d = strspn(v + n, "0123456789");

	if (!d)
		return false;
	n += d;
	if (!integer && v[n] == '.' && (d = strspn(v + n + 1, "0123456789")))
		n += 1 + d;
	return !v[n];
}

int ctl_number(struct ctl_call *call, const char *what, const char *v, double lo, double hi,
	       bool integer, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = decimal(v, integer) ? strtod(v, &end) : 0;
	if (!decimal(v, integer) || errno || end == v || *end || !(d >= lo && d <= hi) ||
	    (integer && d != (double)(long long)d))
		return ctl_fail(call, -EINVAL, "%s: want %s %g..%g (plain decimal), got '%s'",
				what, integer ? "an integer" : "a number", lo, hi, v);
	*out = d;
	return 0;
}

int ctl_integer(struct ctl_call *call, const char *what, const char *v, double lo, double hi,
		long long *out)
{
	double d;
	int r = ctl_number(call, what, v, lo, hi, true, &d);

	*out = (long long)d;
	return r;
}

/* The scope the command edits (created). */
struct yl_node *ctl_scope(struct ctl_call *call, struct yl_node *doc)
{
	int idx = call->target.all ? -1 : (int)call->prof->gpu[call->target.gpu].index;

	return ovr_scope(doc, idx, true);
}

/* Set each path=value pair under the target scope. */
int ctl_set_all(struct ctl_call *call, struct yl_node *doc, const char *const *paths,
		   struct yl_node *const *vals, size_t n)
{
	struct yl_node *scope = ctl_scope(call, doc);
	int r = 0;

	for (size_t i = 0; i < n; i++) {
		if (!vals[i] && r == 0)
			r = -ENOMEM;
		if (r == 0)
			r = ovr_set(scope ? scope : doc, paths[i], vals[i]);
		else
			yl_free(vals[i]);
	}
	/* --gpu all means every GPU: per-GPU values of the same keys would
	 * still win in the engine's merge, so they go. */
	for (size_t i = 0; r == 0 && call->target.all && i < n; i++) {
		const struct yl_node *devs = yl_get(doc, "devices");
		for (size_t j = 0; devs && devs->kind == YL_MAP && j < devs->n; j++)
			ovr_remove(devs->kids[j], paths[i]);
	}
	if (!scope || r == -ENOMEM)
		return ctl_fail(call, -ENOMEM, "out of memory");
	return r < 0 ? ctl_fail(call, r, "cannot set %s", paths[0]) : 0;
}

struct yl_node *ctl_map_of(const char *const *keys, struct yl_node *const *vals, size_t n)
{
	struct yl_node *m = yl_new(YL_MAP);

	for (size_t i = 0; i < n; i++) {
		if (!m || !vals[i] || yl_map_set(m, keys[i], vals[i]) < 0) {
			yl_free(m);
			for (size_t j = i; j < n; j++)
				yl_free(vals[j]);
			return NULL;
		}
	}
	return m;
}

/* A new injection: unique and increasing across edits, restarts and
 * truncations of the document (mokka-kernellog keys announcements by it),
 * and above every seq the journal holds. */
static uint64_t next_seq(const struct ctl_call *call, const struct yl_node *doc)
{
	uint64_t m = ovr_max_seq(doc) + 1;

	if (call->seq_floor + 1 > m)
		m = call->seq_floor + 1;
	return call->now_us > m ? call->now_us : m;
}

/* failure.xid for the document; the same injection goes to the journal
 * (main.c writes it with the document, under the lock). */
static struct yl_node *xid_node(struct ctl_call *call, const struct yl_node *doc,
				long long code)
{
	const char *keys[] = { "code", "seq" };
	uint64_t seq = next_seq(call, doc);
	struct yl_node *vals[] = {
		ovr_plainf("%lld", code),
		ovr_plainf("%llu", (unsigned long long)seq),
	};

	call->inject = (struct ovr_xid_event){
		.seq = seq, .code = (uint64_t)code,
		.index = call->target.all ? -1 : (int)call->prof->gpu[call->target.gpu].index,
	};
	return ctl_map_of(keys, vals, 2);
}

/* ---- commands ---- */

static const char *const fail_modes[] = { "healthy", "lost", "fallen_off_bus",
					  "ecc_uncorrectable" };

static int cmd_fail(struct ctl_call *call, struct yl_node **doc)
{
	const char *mode = ctl_opt(call, "mode"), *after = ctl_opt(call, "after-calls");
	const char *xid = ctl_opt(call, "xid"), *prob = ctl_opt(call, "probability");
	const char *keys[4];
	struct yl_node *vals[4], *scope;
	long long code = 0, calls = 0;
	double p = 0;
	size_t n = 0, m;
	int r;

	for (m = 0; mode && m < sizeof(fail_modes) / sizeof(fail_modes[0]); m++)
		if (!strcmp(mode, fail_modes[m]))
			break;
	if (!mode || m == sizeof(fail_modes) / sizeof(fail_modes[0]))
		return ctl_fail(call, -EINVAL, "fail: --mode wants healthy, lost, fallen_off_bus "
				"or ecc_uncorrectable, got '%s'", mode ? mode : "(none)");
	if ((after && (r = ctl_integer(call, "fail --after-calls", after, 1, 1e15, &calls)) < 0) ||
	    (xid && (r = ctl_integer(call, "fail --xid", xid, 1, 65535, &code)) < 0) ||
	    (prob && (r = ctl_number(call, "fail --probability", prob, 0, 1, false, &p)) < 0))
		return r;
	if (!(scope = ctl_scope(call, *doc)))
		return ctl_fail(call, -ENOMEM, "out of memory");
	if (m == 0) {
		if (after || xid || prob)
			return ctl_fail(call, -EINVAL, "fail --mode healthy takes no other option");
		ovr_remove(scope, "failure");
		/* One GPU healthy while `all` still fails every GPU: null
		 * replaces the inherited block in the engine's merge. */
		if (!call->target.all && yl_get(yl_get(*doc, "all"), "failure"))
			return ovr_set(scope, "failure", yl_new(YL_NULL)) < 0
				? ctl_fail(call, -ENOMEM, "out of memory") : 0;
		if (call->target.all) {
			const struct yl_node *devs = yl_get(*doc, "devices");
			for (size_t i = 0; devs && devs->kind == YL_MAP && i < devs->n; i++)
				ovr_remove(devs->kids[i], "failure");
		}
		return 0;
	}
	keys[n] = "mode", vals[n++] = ovr_plain(mode);
	if (after)
		keys[n] = "after_calls", vals[n++] = ovr_plainf("%lld", calls);
	if (prob)
		keys[n] = "probability", vals[n++] = ovr_plain(prob);
	if (xid)
		keys[n] = "xid", vals[n++] = xid_node(call, *doc, code);
	/* Any other mode replaces the whole block (a fresh injector). */
	return ctl_set_all(call, *doc, (const char *[]){ "failure" },
		       (struct yl_node *[]){ ctl_map_of(keys, vals, n) }, 1);
}

static int cmd_xid(struct ctl_call *call, struct yl_node **doc)
{
	long long code;
	int r;

	if ((r = ctl_integer(call, "xid CODE", call->argv[0], 1, 65535, &code)) < 0)
		return r;
	return ctl_set_all(call, *doc, (const char *[]){ "failure.xid" },
		       (struct yl_node *[]){ xid_node(call, *doc, code) }, 1);
}

static int cmd_temp(struct ctl_call *call, struct yl_node **doc)
{
	long long c;
	int r;

	if ((r = ctl_integer(call, "temp C", call->argv[0], -40, 150, &c)) < 0)
		return r;
	/* The static value and a flat dynamic series (no ramp, no noise). */
	return ctl_set_all(call, *doc, (const char *[]){
			       "thermal.temperature_gpu_c", "dynamic_metrics.temperature" },
		       (struct yl_node *[]){
			       ovr_plainf("%lld", c),
			       ctl_map_of((const char *[]){ "base_c", "ramp_c", "variance_c" },
				      (struct yl_node *[]){ ovr_plainf("%lld", c), ovr_plain("0"),
							     ovr_plain("0") }, 3) }, 2);
}

static int cmd_power(struct ctl_call *call, struct yl_node **doc)
{
	double w;
	int r;

	if ((r = ctl_number(call, "power W", call->argv[0], 0, 10000, false, &w)) < 0)
		return r;
	long long mw = (long long)(w * 1000 + 0.5);
	return ctl_set_all(call, *doc, (const char *[]){
			       "power.current_draw_mw", "dynamic_metrics.power" },
		       (struct yl_node *[]){
			       ovr_plainf("%lld", mw),
			       ctl_map_of((const char *[]){ "base_mw", "variance_mw" },
				      (struct yl_node *[]){ ovr_plainf("%lld", mw),
							     ovr_plain("0") }, 2) }, 2);
}

static int cmd_fan(struct ctl_call *call, struct yl_node **doc)
{
	struct yl_node *eff = NULL;
	uint64_t count = call->prof->fan_count;
	long long pct;
	int r;

	if ((r = ctl_integer(call, "fan PERCENT", call->argv[0], 0, 100, &pct)) < 0)
		return r;
	/* A fan speed needs a fan: raise fan.count to at least 1. */
	if (!call->target.all)
		eff = ovr_effective(*doc, call->prof->gpu[call->target.gpu].index);
	else
		eff = ovr_effective(*doc, (unsigned)-1);
	yl_u64(yl_path(eff, "fan.count"), &count);
	yl_free(eff);
	return ctl_set_all(call, *doc, (const char *[]){ "fan.speed_percent", "fan.count" },
		       (struct yl_node *[]){ ovr_plainf("%lld", pct),
					      ovr_plainf("%llu", (unsigned long long)
							 (count ? count : 1)) }, 2);
}

static int cmd_util(struct ctl_call *call, struct yl_node **doc)
{
	long long gpu, mem;
	int r;

	if ((r = ctl_integer(call, "util PERCENT", call->argv[0], 0, 100, &gpu)) < 0 ||
	    (r = ctl_integer(call, "util MEMORY-PERCENT", call->argc > 1 ? call->argv[1]
			 : call->argv[0], 0, 100, &mem)) < 0)
		return r;
	/* null: the dynamic utilization series gives way to the static values. */
	return ctl_set_all(call, *doc, (const char *[]){
			       "utilization.gpu", "utilization.memory",
			       "dynamic_metrics.utilization" },
		       (struct yl_node *[]){ ovr_plainf("%lld", gpu), ovr_plainf("%lld", mem),
					      yl_new(YL_NULL) }, 3);
}

static int cmd_clocks(struct ctl_call *call, struct yl_node **doc)
{
	long long mhz;
	int r;

	if ((r = ctl_integer(call, "clocks MHZ", call->argv[0], 0, 10000, &mhz)) < 0)
		return r;
	return ctl_set_all(call, *doc, (const char *[]){ "clocks.sm_current", "clocks.graphics_current" },
		       (struct yl_node *[]){ ovr_plainf("%lld", mhz), ovr_plainf("%lld", mhz) }, 2);
}

/* Throttle (clocks event) reasons: the profile keys and their short names. */
static const struct {
	const char *key, *alias;
} throttle_reasons[] = {
	{ "gpu_idle", "idle" },
	{ "applications_clocks_setting", "app_clocks" },
	{ "sw_power_cap", "power" },
	{ "hw_slowdown", "hw_slowdown" },
	{ "hw_thermal_slowdown", "thermal" },
	{ "hw_power_brake_slowdown", "power_brake" },
	{ "sync_boost", "sync_boost" },
	{ "sw_thermal_slowdown", "sw_thermal" },
	{ "display_clocks_setting", "display_clocks" },
};
#define NREASONS (sizeof(throttle_reasons) / sizeof(throttle_reasons[0]))

static int cmd_throttle(struct ctl_call *call, struct yl_node **doc)
{
	bool on[NREASONS] = { false };
	const char *paths[NREASONS];
	struct yl_node *vals[NREASONS];
	char pathbuf[NREASONS][64];
	bool none = call->argc == 1 && !strcmp(call->argv[0], "none");

	for (int a = 0; a < call->argc && !none; a++) {
		size_t i;
		for (i = 0; i < NREASONS; i++)
			if (!strcmp(call->argv[a], throttle_reasons[i].key) ||
			    !strcmp(call->argv[a], throttle_reasons[i].alias))
				break;
		if (i == NREASONS)
			return ctl_fail(call, -EINVAL, "throttle: unknown reason '%s' (want none, "
					"idle, app_clocks, power, hw_slowdown, thermal, power_brake, "
					"sync_boost, sw_thermal, display_clocks or a "
					"clocks_throttle_reasons key)", call->argv[a]);
		on[i] = true;
	}
	/* Authoritative: the listed reasons on, every other one off. */
	for (size_t i = 0; i < NREASONS; i++) {
		snprintf(pathbuf[i], sizeof(pathbuf[i]), "clocks_throttle_reasons.%s",
			 throttle_reasons[i].key);
		paths[i] = pathbuf[i];
		vals[i] = ovr_plain(on[i] ? "true" : "false");
	}
	return ctl_set_all(call, *doc, paths, vals, NREASONS);
}

static int cmd_pstate(struct ctl_call *call, struct yl_node **doc)
{
	const char *v = call->argv[0];
	long long p;
	int r;

	if ((r = ctl_integer(call, "pstate N", v + (v[0] == 'P' || v[0] == 'p'), 0, 15, &p)) < 0)
		return r;
	return ctl_set_all(call, *doc, (const char *[]){ "performance_state" },
		       (struct yl_node *[]){ ovr_plainf("P%lld", p) }, 1);
}

static bool valid_path(const char *p)
{
	size_t n = strlen(p);

	return n && n < 128 && p[0] != '.' && p[n - 1] != '.' && !strstr(p, "..") &&
	       strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_.") == n;
}

static int cmd_set(struct ctl_call *call, struct yl_node **doc)
{
	for (int a = 0; a < call->argc; a++) {
		char *arg = call->argv[a], *eq = strchr(arg, '='), path[128], why[200];
		struct yl_error ye;
		struct yl_node *v;

		if (!eq || (size_t)(eq - arg) >= sizeof(path))
			return ctl_fail(call, -EINVAL, "set: want key.path=value, got '%s'", arg);
		memcpy(path, arg, (size_t)(eq - arg));
		path[eq - arg] = '\0';
		if (!valid_path(path))
			return ctl_fail(call, -EINVAL, "set: '%s' is not a key path (lowercase "
					"keys joined by dots, e.g. thermal.temperature_gpu_c)", path);
		/* The value is YAML: 42, true, "text", [0, 1], {a: 1}, null. */
		if (!(v = yl_parse(eq + 1, strlen(eq + 1), &ye))) {
			yl_error_format(&ye, why, sizeof(why));
			return ctl_fail(call, -EINVAL, "set %s: value '%s' is not YAML: %s", path,
					eq + 1, why);
		}
		if (yl_is_null(v) && !*(eq + 1)) {
			yl_free(v);
			return ctl_fail(call, -EINVAL, "set %s: empty value (use unset to remove a "
					"key, or null)", path);
		}
		int r = ctl_set_all(call, *doc, (const char *[]){ path }, (struct yl_node *[]){ v }, 1);
		if (r < 0)
			return r;
	}
	return 0;
}

static int cmd_unset(struct ctl_call *call, struct yl_node **doc)
{
	struct yl_node *scope = ctl_scope(call, *doc);

	if (!scope)
		return ctl_fail(call, -ENOMEM, "out of memory");
	for (int a = 0; a < call->argc; a++) {
		if (!valid_path(call->argv[a]))
			return ctl_fail(call, -EINVAL, "unset: '%s' is not a key path",
					call->argv[a]);
		ovr_remove(scope, call->argv[a]);
	}
	return 0;
}

static int print_gpu(const struct ctl_call *call, const struct yl_node *doc, int i)
{
	const struct ctl_gpu *g = &call->prof->gpu[i];
	struct yl_node *eff = ovr_effective(doc, g->index);
	char *text = NULL;
	size_t len = 0;

	printf("GPU %u: %s %s\n", g->index, g->uuid, g->bus_id);
	if (!eff)
		return -ENOMEM;
	if (!eff->n) {
		printf("  (no overrides)\n");
	} else if (ovr_emit(eff, &text, &len) == 0) {
		for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
			nl = strchr(line, '\n');
			printf("  %.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
		}
	}
	free(text);
	yl_free(eff);
	return 0;
}

static int cmd_status(struct ctl_call *call, struct yl_node **doc)
{
	int r = 0;

	for (int i = 0; i < call->prof->n && r == 0; i++)
		if (call->target.all || i == call->target.gpu)
			r = print_gpu(call, *doc, i);
	return r < 0 ? ctl_fail(call, r, "out of memory") : 0;
}

static int cmd_reset(struct ctl_call *call, struct yl_node **doc)
{
	struct yl_node *devs;
	int r;

	if ((r = ctl_state_reset(call)) < 0)
		return r;
	if (call->target.all) {
		/* A fresh document, whatever the old one held. */
		yl_free(*doc);
		if (!(*doc = ovr_parse("", 0, call->err, call->errlen)))
			return -ENOMEM;
		return 0;
	}
	devs = yl_get(*doc, "devices");
	for (size_t i = devs && devs->kind == YL_MAP ? devs->n : 0; i-- > 0;) {
		unsigned idx;
		/* "2" and "02" name the same GPU for the engine. */
		if (ovr_device_key(devs->kids[i]->key, &idx) &&
		    idx == call->prof->gpu[call->target.gpu].index)
			yl_map_remove(devs, devs->kids[i]->key);
	}
	if (devs && devs->kind == YL_MAP && !devs->n)
		yl_map_remove(*doc, "devices");
	return 0;
}

static const char *const o_fail[] = { "mode=", "after-calls=", "xid=", "probability=", NULL };
static const char *const o_ecc[] = { "correctable=", "uncorrectable=", "scope=", "mode=", NULL };
static const char *const o_sram[] = { "type=", "source=", "threshold-exceeded", NULL };
static const char *const o_nvlink[] = { "links=", NULL };
static const char *const o_none[] = { NULL };

/* exec (ctl/exec.c): argv is "--" and the command line. */
int ctl_cmd_exec(struct ctl_call *call, struct yl_node **doc);
static const char *const o_exec[] = { "gpus=", NULL };

const struct ctl_command ctl_commands[] = {
	{ "fail", "--mode healthy|lost|fallen_off_bus|ecc_uncorrectable [--after-calls N] "
		  "[--xid CODE] [--probability P]",
	  "fail the GPU (healthy clears the failure)", 0, 0, o_fail, false, false, cmd_fail },
	{ "xid", "CODE", "inject Xid CODE (an NVML event and a kernel log line, once)",
	  1, 1, o_none, false, false, cmd_xid },
	{ "temp", "C", "GPU temperature in degrees C", 1, 1, o_none, false, false, cmd_temp },
	{ "power", "W", "power draw in watts", 1, 1, o_none, false, false, cmd_power },
	{ "fan", "PERCENT", "fan speed (fan.count raised to at least 1)", 1, 1, o_none, false,
	  false, cmd_fan },
	{ "util", "PERCENT [MEMORY-PERCENT]", "GPU and memory utilization", 1, 2, o_none, false,
	  false, cmd_util },
	{ "clocks", "MHZ", "SM and graphics clocks", 1, 1, o_none, false, false, cmd_clocks },
	{ "throttle", "REASON...|none", "the active clocks event (throttle) reasons", 1, -1,
	  o_none, false, false, cmd_throttle },
	{ "pstate", "0..15", "performance state", 1, 1, o_none, false, false, cmd_pstate },
	{ "ecc", "[--correctable N] [--uncorrectable N] [--scope volatile|aggregate|both] "
		 "[--mode enabled|disabled]", "DRAM ECC error counters and mode", 0, 0, o_ecc,
	  false, false, ctl_cmd_ecc },
	{ "sram-ecc", "COUNT [--type correctable|parity|secded] [--source l2|sm|microcontroller|"
		      "pcie|other] [--threshold-exceeded]", "SRAM ECC error counters", 1, 1, o_sram,
	  false, false, ctl_cmd_sram_ecc },
	{ "nvlink-error", "RATE [--links a,b,...]", "NVLink error counters rising at RATE/s",
	  1, 1, o_nvlink, false, false, ctl_cmd_nvlink_error },
	{ "fabric-health", "CONDITION...|healthy", "fabric health conditions (authoritative)",
	  1, -1, o_none, false, false, ctl_cmd_fabric_health },
	{ "set", "KEY.PATH=VALUE...", "set profile keys (YAML values)", 1, -1, o_none, false,
	  false, cmd_set },
	{ "unset", "KEY.PATH...", "remove overridden keys", 1, -1, o_none, false, false, cmd_unset },
	{ "status", "", "show the overrides in force per GPU", 0, 0, o_none, true, false,
	  cmd_status },
	{ "reset", "", "remove the overrides and the NVML-set device state (of one GPU, or all)", 0, 0, o_none, false, true,
	  cmd_reset },
	{ "gpu-reset", "", "what nvidia-smi -r does: pending ECC and MIG modes become current, "
		       "set clocks go (refused while MIG instances exist)", 0, 0, o_none, true,
	  false, ctl_cmd_gpu_reset },
	{ "exec", "[--gpus LIST] -- CMD [ARGS]", "run CMD seeing the node at the real paths "
		  "(private mount namespace; ctl/exec.c)", 2, -1, o_exec, true, false, ctl_cmd_exec },
};
const size_t ctl_ncommands = sizeof(ctl_commands) / sizeof(ctl_commands[0]);
