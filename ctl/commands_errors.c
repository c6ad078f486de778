/* mokka-ctl's error-counter and fabric commands (ecc, sram-ecc,
 * nvlink-error, fabric-health): the counters and conditions the engine
 * reads (NVML.md §6), range-checked here with commands.c's helpers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

int ctl_cmd_ecc(struct ctl_call *call, struct yl_node **doc)
{
	const char *corr = ctl_opt(call, "correctable"), *unc = ctl_opt(call, "uncorrectable");
	const char *scope = ctl_opt(call, "scope"), *mode = ctl_opt(call, "mode");
	static const char *const bits[] = { "single_bit", "double_bit" };
	static const char *const where[] = { "device_memory", "total" };
	const char *paths[16];
	struct yl_node *vals[16];
	char buf[16][96];
	long long count[2];
	size_t n = 0;
	int r;

	if (!corr && !unc && !mode)
		return ctl_fail(call, -EINVAL, "ecc: give --correctable N, --uncorrectable N "
				"and/or --mode enabled|disabled");
	if (scope && strcmp(scope, "volatile") && strcmp(scope, "aggregate") &&
	    strcmp(scope, "both"))
		return ctl_fail(call, -EINVAL, "ecc --scope: want volatile, aggregate or both, "
				"got '%s'", scope);
	if (mode && strcmp(mode, "enabled") && strcmp(mode, "disabled"))
		return ctl_fail(call, -EINVAL, "ecc --mode: want enabled or disabled, got '%s'",
				mode);
	if ((corr && (r = ctl_integer(call, "ecc --correctable", corr, 0, 1e15, &count[0])) < 0) ||
	    (unc && (r = ctl_integer(call, "ecc --uncorrectable", unc, 0, 1e15, &count[1])) < 0))
		return r;
	for (int s = 0; s < 2; s++) {
		const char *sc = s ? "aggregate" : "volatile";

		if (scope && strcmp(scope, "both") && strcmp(scope, sc))
			continue;
		for (int b = 0; b < 2; b++) {
			if (!(b ? unc : corr))
				continue;
			/* DRAM counters and the totals nvidia-smi and NVML sum. */
			for (int w = 0; w < 2; w++) {
				snprintf(buf[n], sizeof(buf[n]), "ecc.errors.%s.%s.%s", sc, bits[b],
					 where[w]);
				paths[n] = buf[n];
				vals[n++] = ovr_plainf("%lld", count[b]);
			}
		}
	}
	if (mode) {
		paths[n] = "ecc.mode_current", vals[n++] = ovr_plain(mode);
		paths[n] = "ecc.mode_pending", vals[n++] = ovr_plain(mode);
	}
	return ctl_set_all(call, *doc, paths, vals, n);
}

int ctl_cmd_sram_ecc(struct ctl_call *call, struct yl_node **doc)
{
	const char *type = ctl_opt(call, "type"), *src = ctl_opt(call, "source");
	static const char *const types[][2] = {
		{ "correctable", "correctable" }, { "parity", "uncorrectable_parity" },
		{ "secded", "uncorrectable_secded" },
	};
	static const char *const sources[] = { "l2", "sm", "microcontroller", "pcie", "other" };
	const char *paths[4], *key = NULL;
	struct yl_node *vals[4];
	char buf[3][96];
	long long count;
	size_t n = 0;
	int r;

	if ((r = ctl_integer(call, "sram-ecc COUNT", call->argv[0], 0, 1e15, &count)) < 0)
		return r;
	for (size_t i = 0; i < 3 && !key; i++)
		if (!strcmp(type ? type : "correctable", types[i][0]))
			key = types[i][1];
	if (!key)
		return ctl_fail(call, -EINVAL, "sram-ecc --type: want correctable, parity or "
				"secded, got '%s'", type);
	if (src) {
		size_t i;
		for (i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
			if (!strcmp(src, sources[i]))
				break;
		if (i == sizeof(sources) / sizeof(sources[0]))
			return ctl_fail(call, -EINVAL, "sram-ecc --source: want l2, sm, "
					"microcontroller, pcie or other, got '%s'", src);
		if (key == types[0][1])
			return ctl_fail(call, -EINVAL, "sram-ecc --source counts uncorrectable "
					"errors: give --type parity or secded");
	}
	/* Both scopes, as the reference writes them. */
	for (int s = 0; s < 2; s++) {
		snprintf(buf[n], sizeof(buf[n]), "ecc.sram.%s.%s", s ? "aggregate" : "volatile", key);
		paths[n] = buf[n];
		vals[n++] = ovr_plainf("%lld", count);
	}
	if (src) {
		snprintf(buf[n], sizeof(buf[n]), "ecc.sram.uncorrectable_sources.%s", src);
		paths[n] = buf[n];
		vals[n++] = ovr_plainf("%lld", count);
	}
	if (ctl_flag(call, "threshold-exceeded"))
		paths[n] = "ecc.sram.threshold_exceeded", vals[n++] = ovr_plain("true");
	return ctl_set_all(call, *doc, paths, vals, n);
}

int ctl_cmd_nvlink_error(struct ctl_call *call, struct yl_node **doc)
{
	const char *links = ctl_opt(call, "links");
	struct yl_node *seq = NULL;
	double rate;
	int r;

	if ((r = ctl_number(call, "nvlink-error RATE", call->argv[0], 0, 1e12, false, &rate)) < 0)
		return r;
	if (links) {
		char *copy = strdup(links), *save = NULL;

		seq = yl_new(YL_SEQ);
		for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && r == 0;
		     t = strtok_r(NULL, ",", &save)) {
			long long l;
			struct yl_node *it;

			if ((r = ctl_integer(call, "nvlink-error --links", t, 0, 63, &l)) < 0)
				break;
			it = ovr_plainf("%lld", l);
			if (!seq || !it || yl_append(seq, it) < 0) {
				yl_free(it);
				r = ctl_fail(call, -ENOMEM, "out of memory");
			}
		}
		free(copy);
		if (r == 0 && (!seq || !seq->n))
			r = ctl_fail(call, -EINVAL, "nvlink-error --links: want a,b,... link numbers");
		if (r < 0) {
			yl_free(seq);
			return r;
		}
	}
	if (!seq)	/* every active link */
		return ctl_set_all(call, *doc, (const char *[]){ "nvlink_error.rate", "nvlink_error.links" },
			       (struct yl_node *[]){ ovr_plain(call->argv[0]), yl_new(YL_NULL) }, 2);
	return ctl_set_all(call, *doc, (const char *[]){ "nvlink_error.rate", "nvlink_error.links" },
		       (struct yl_node *[]){ ovr_plain(call->argv[0]), seq }, 2);
}

static const char *const fabric_conditions[] = {
	"degraded_bandwidth", "route_recovery", "route_unhealthy", "access_timeout_recovery",
};
static const char *const fabric_config_codes[] = {
	"none", "incorrect_sysguid", "incorrect_chassis_sn", "no_partition",
	"insufficient_nvlinks", "incompatible_gpu_fw", "invalid_location", "gpu_state_invalid",
};

int ctl_cmd_fabric_health(struct ctl_call *call, struct yl_node **doc)
{
	const char *keys[5], *cfg = "none";
	struct yl_node *vals[5], *scope;
	bool on[4] = { false };
	bool healthy = call->argc == 1 && !strcmp(call->argv[0], "healthy");

	for (int a = 0; a < call->argc && !healthy; a++) {
		const char *arg = call->argv[a];
		size_t i;

		if (!strncmp(arg, "incorrect_configuration=", 24)) {
			for (i = 0; i < sizeof(fabric_config_codes) / sizeof(fabric_config_codes[0]); i++)
				if (!strcmp(arg + 24, fabric_config_codes[i]))
					break;
			if (i == sizeof(fabric_config_codes) / sizeof(fabric_config_codes[0]))
				return ctl_fail(call, -EINVAL, "fabric-health: unknown "
						"incorrect_configuration '%s' (want incorrect_sysguid, "
						"incorrect_chassis_sn, no_partition, insufficient_nvlinks, "
						"incompatible_gpu_fw, invalid_location, gpu_state_invalid)",
						arg + 24);
			cfg = fabric_config_codes[i];
			continue;
		}
		for (i = 0; i < 4; i++)
			if (!strcmp(arg, fabric_conditions[i]))
				break;
		if (i == 4)
			return ctl_fail(call, -EINVAL, "fabric-health: unknown condition '%s' (want "
					"healthy, degraded_bandwidth, route_recovery, route_unhealthy, "
					"access_timeout_recovery, incorrect_configuration=CODE)", arg);
		on[i] = true;
	}
	for (int i = 0; i < 4; i++)
		keys[i] = fabric_conditions[i], vals[i] = ovr_plain(on[i] ? "true" : "false");
	keys[4] = "incorrect_configuration", vals[4] = ovr_plain(cfg);
	if (!(scope = ctl_scope(call, *doc)))
		return ctl_fail(call, -ENOMEM, "out of memory");
	/* Authoritative: a pinned summary or raw mask would hide the conditions. */
	ovr_remove(scope, "fabric.health_summary");
	ovr_remove(scope, "fabric.health_mask");
	return ctl_set_all(call, *doc, (const char *[]){ "fabric.health" },
		       (struct yl_node *[]){ ctl_map_of(keys, vals, 5) }, 1);
}
