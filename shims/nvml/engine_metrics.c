/* Mock NVML engine: dynamic_metrics (NVML.md §4).  Values move once per
 * second of engine uptime and are a pure function of (seed, device,
 * metric, second), so a process sees a reproducible series.  No libm:
 * the library must need nothing beyond libc. */
#include <string.h>
#include <strings.h>

#include "engine_internal.h"

enum metric { M_TEMP, M_POWER, M_UTIL_GPU, M_UTIL_MEM };

static const struct {
	const char *path;	/* the static value it masks */
	const char *block;	/* dynamic_metrics.<block> */
	enum metric m;
} metrics[] = {
	{ "thermal.temperature_gpu_c", "temperature", M_TEMP },
	{ "power.current_draw_mw", "power", M_POWER },
	{ "utilization.gpu", "utilization", M_UTIL_GPU },
	{ "utilization.memory", "utilization", M_UTIL_MEM },
};

static double num(const struct yl_node *blk, const char *key, double def)
{
	double v;

	return yl_double(yl_get(blk, key), &v) ? v : def;
}

static double clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static double round_half(double v)
{
	return (double)(long long)(v + (v < 0 ? -0.5 : 0.5));
}

/* Uniform [0, 1) from the inputs, stateless. */
static double noise(uint64_t seed, unsigned dev, enum metric m, uint64_t second)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev << 48 ^
		     (uint64_t)m << 40 ^ second;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) / 9007199254740992.0;
}

/* Where t is within its period, [0, 1) (t >= 0, period > 0). */
static double phase(double t, double period)
{
	return (t - period * (double)(long long)(t / period)) / period;
}

/* 0 -> 1 -> 0 over one period. */
static double triangle(double t, double period)
{
	double p = phase(t, period);

	return p < 0.5 ? 2 * p : 2 * (1 - p);
}

static double utilization(const struct yl_node *blk, bool gpu, double t, double u)
{
	const char *pattern = yl_text(yl_get(blk, "pattern"));
	double lo = num(blk, gpu ? "gpu_min" : "memory_min", 0);
	double hi = num(blk, gpu ? "gpu_max" : "memory_max", 100);
	double period = num(blk, "burst_period_sec", 10);

	lo = clamp(lo, 0, 100);
	hi = clamp(hi, 0, 100);
	if (hi < lo) {
		double x = hi;

		hi = lo, lo = x;
	}
	if (pattern && !strcasecmp(pattern, "idle"))
		return lo;
	if (pattern && !strcasecmp(pattern, "busy"))
		return hi;
	if (pattern && !strcasecmp(pattern, "burst"))	/* high for the first half */
		return phase(t, period > 0 ? period : 10) < 0.5 ? hi : lo;
	return lo + u * (hi - lo);	/* steady (default): random within range */
}

bool eng_dynamic_value(struct mdev *d, const char *path, double *out)
{
	const struct yl_node *dm = yl_get(d->eff, "dynamic_metrics"), *blk;
	uint64_t seed = 0;
	double t, u, v, base;
	size_t i;

	if (!dm || dm->kind != YL_MAP)
		return false;
	for (i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++)
		if (!strcmp(metrics[i].path, path))
			break;
	if (i == sizeof(metrics) / sizeof(metrics[0]))
		return false;
	blk = yl_get(dm, metrics[i].block);
	if (!blk || blk->kind != YL_MAP)
		return false;	/* e.g. "utilization: null" hands back the static value */
	yl_u64(yl_get(dm, "seed"), &seed);
	t = eng_now() - eng.t0;
	u = noise(seed, d->prof_index, metrics[i].m, (uint64_t)t);
	switch (metrics[i].m) {
	case M_TEMP: {
		double period = num(blk, "ramp_period_sec", 60);

		base = num(blk, "base_c", num(yl_get(d->eff, "thermal"), "temperature_gpu_c", 40));
		v = base + num(blk, "ramp_c", 0) * triangle(t, period > 0 ? period : 60) +
		    num(blk, "variance_c", 0) * (2 * u - 1);
		v = clamp(v, 0, 150);
		break;
	}
	case M_POWER:
		base = num(blk, "base_mw", num(yl_get(d->eff, "power"), "current_draw_mw", 0));
		v = clamp(base + num(blk, "variance_mw", 0) * (2 * u - 1), 0, 1e9);
		break;
	default:
		v = utilization(blk, metrics[i].m == M_UTIL_GPU, t, u);
		break;
	}
	*out = round_half(v);
	return true;
}
