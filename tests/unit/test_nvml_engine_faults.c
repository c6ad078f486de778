/* The mock NVML engine at run time: the failure injector and Xids
 * (NVML.md §6), dynamic metrics, and readers racing override reloads. */
#include <criterion/criterion.h>
#include <pthread.h>

#include "tests/unit/nvml_engine_fixture.h"

TestSuite(nvml_engine_faults, .init = setup, .fini = teardown);

/* ---- faults ------------------------------------------------------------ */

Test(nvml_engine_faults, lost_trips_at_after_calls)
{
	unsigned long long xid = 0;

	put("config.yaml", base_profile);
	put("overrides.yaml", "devices:\n  \"0\":\n    failure: {mode: lost, after_calls: 3, "
			      "xid: {code: 79}}\n");
	init_ok();
	struct mdev *d = engine_device(0), *healthy = engine_device(1);

	for (int i = 0; i < 10; i++)
		cr_assert_eq(mdev_lost(d), ENG_SUCCESS, "identity checks do not tick");
	cr_assert_not(mdev_take_xid(d, &xid), "no Xid before the trip");
	cr_assert_eq(mdev_guard(d), ENG_SUCCESS);
	cr_assert_eq(mdev_guard(d), ENG_SUCCESS);
	cr_assert_eq(mdev_guard(d), ENG_ERROR_GPU_IS_LOST, "the 3rd guarded call trips");
	cr_assert_eq(mdev_lost(d), ENG_ERROR_GPU_IS_LOST);
	cr_assert_eq(mdev_guard(d), ENG_ERROR_GPU_IS_LOST, "sticky");
	cr_assert(mdev_take_xid(d, &xid));
	cr_assert_eq(xid, 79);
	cr_assert_not(mdev_take_xid(d, &xid), "delivered once");
	cr_assert_eq(mdev_ecc_bump(d), 0);
	cr_assert_eq(mdev_guard(healthy), ENG_SUCCESS);
	cr_assert_eq(mdev_lost(healthy), ENG_SUCCESS);
}

Test(nvml_engine_faults, ecc_uncorrectable_bumps)
{
	unsigned long long xid = 0;

	put("config.yaml", base_profile);
	put("overrides.yaml", "all: {failure: {mode: ecc_uncorrectable, xid: {code: 48}}}\n");
	init_ok();
	struct mdev *d = engine_device(2);

	cr_assert_eq(mdev_ecc_bump(d), 0);
	cr_assert_eq(mdev_guard(d), ENG_SUCCESS, "ECC keeps calls succeeding");
	uint64_t a = mdev_ecc_bump(d);
	cr_assert_eq(mdev_guard(d), ENG_SUCCESS);
	uint64_t b = mdev_ecc_bump(d);
	cr_assert_gt(a, 0);
	cr_assert_gt(b, a, "strictly increases");
	cr_assert_eq(mdev_lost(d), ENG_SUCCESS);
	cr_assert(mdev_take_xid(d, &xid) && xid == 48);
	cr_assert_not(mdev_take_xid(d, &xid));
}

Test(nvml_engine_faults, injector_survives_unchanged_reload)
{
	unsigned long long xid = 0;
	const char *fail79 = "all: {failure: {mode: fallen_off_bus, after_calls: 2, xid: {code: 79}}}\n";

	put("config.yaml", base_profile);
	put("overrides.yaml", fail79);
	init_ok();
	struct mdev *d = engine_device(0);

	cr_assert_eq(mdev_guard(d), ENG_SUCCESS);
	cr_assert_eq(mdev_guard(d), ENG_ERROR_GPU_IS_LOST);
	cr_assert(mdev_take_xid(d, &xid) && xid == 79);
	/* an unrelated change: the injector (and the delivered Xid) stay */
	put("overrides.yaml", "all: {thermal: {temperature_gpu_c: 44}, failure: {xid: {code: 79},"
			      " after_calls: 2, mode: fallen_off_bus}}\n");
	usleep(1100 * 1000);
	cr_assert_eq(u64(d, "thermal.temperature_gpu_c"), 44);
	cr_assert_eq(mdev_lost(d), ENG_ERROR_GPU_IS_LOST);
	cr_assert_not(mdev_take_xid(d, &xid));
	/* healthy again: the block is gone */
	put("overrides.yaml", "all: {thermal: {temperature_gpu_c: 44}}\n");
	usleep(1100 * 1000);
	cr_assert_eq(mdev_lost(d), ENG_SUCCESS);
	cr_assert_eq(mdev_guard(d), ENG_SUCCESS);
	/* re-added: a new injection, counted from zero, delivered again */
	put("overrides.yaml", fail79);
	usleep(1100 * 1000);
	cr_assert_eq(mdev_guard(d), ENG_SUCCESS);
	cr_assert_not(mdev_take_xid(d, &xid));
	cr_assert_eq(mdev_guard(d), ENG_ERROR_GPU_IS_LOST);
	cr_assert(mdev_take_xid(d, &xid) && xid == 79);
}

Test(nvml_engine_faults, probability_and_first_call)
{
	put("config.yaml", base_profile);
	put("overrides.yaml", "devices:\n"
			      "  \"0\": {failure: {mode: lost}}\n"
			      "  \"1\": {failure: {mode: lost, probability: 1.0, seed: 3}}\n"
			      "  \"2\": {failure: {mode: lost, probability: 0.000000001, seed: 3}}\n");
	init_ok();
	cr_assert_eq(mdev_guard(engine_device(0)), ENG_ERROR_GPU_IS_LOST, "first guarded call");
	cr_assert_eq(mdev_guard(engine_device(1)), ENG_ERROR_GPU_IS_LOST);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(mdev_guard(engine_device(2)), ENG_SUCCESS);
}

/* ---- dynamic metrics --------------------------------------------------- */

Test(nvml_engine_faults, dynamic_metrics_mask_static_values)
{
	put("config.yaml", base_profile);
	put("overrides.yaml",
	    "devices:\n"
	    "  \"0\":\n"
	    "    dynamic_metrics:\n"
	    "      seed: 42\n"
	    "      temperature: {base_c: 55, variance_c: 0, ramp_c: 0}\n"
	    "      power: {base_mw: 123000, variance_mw: 0}\n"
	    "      utilization: {pattern: idle, gpu_min: 7, memory_min: 2}\n"
	    "  \"1\":\n"
	    "    dynamic_metrics:\n"
	    "      temperature: {base_c: 40, variance_c: 5, ramp_c: 10, ramp_period_sec: 2}\n"
	    "      utilization: {pattern: steady, gpu_min: 10, gpu_max: 20}\n"
	    "  \"2\":\n"
	    "    dynamic_metrics: {seed: 1, utilization: null}\n");
	init_ok();
	struct mdev *d0 = engine_device(0), *d1 = engine_device(1), *d2 = engine_device(2);
	uint32_t v32;
	double dv;

	cr_assert_eq(u64(d0, "thermal.temperature_gpu_c"), 55);
	cr_assert(mdev_u32(d0, "power.current_draw_mw", &v32) && v32 == 123000);
	cr_assert(mdev_double(d0, "utilization.gpu", &dv) && dv == 7);
	cr_assert_eq(u64(d0, "utilization.memory"), 2);
	cr_assert_eq(u64(d0, "thermal.shutdown_threshold_c"), 95, "other keys are untouched");
	for (int i = 0; i < 3; i++) {
		uint64_t t = u64(d1, "thermal.temperature_gpu_c");
		uint64_t g = u64(d1, "utilization.gpu");

		cr_assert(t >= 35 && t <= 55, "temperature %llu", (unsigned long long)t);
		cr_assert(g >= 10 && g <= 20, "utilization %llu", (unsigned long long)g);
		cr_assert_eq(u64(d1, "power.current_draw_mw"), 70000, "no power block: static");
		usleep(300 * 1000);
	}
	cr_assert_eq(u64(d2, "utilization.gpu"), 3, "utilization: null gives the static value");
}

/* ---- threads ------------------------------------------------------------ */

static volatile int stop;

/* Counts bad reads (Criterion asserts belong to the main thread). */
static void *reader(void *arg)
{
	struct mdev *d = arg;
	unsigned long n = 0, bad = 0;

	while (!stop) {
		const char *s;
		uint64_t v;

		bad += !mdev_str(d, "name", &s) || strcmp(s, "Special GPU");
		bad += !mdev_u64(d, "thermal.temperature_gpu_c", &v) || v < 30;
		if (mdev_str(d, "performance_state", &s))
			bad += s[0] != 'P';
		bad += mdev_guard(d) != ENG_SUCCESS;
		n++;
	}
	return (void *)(bad ? 0 : n);
}

Test(nvml_engine_faults, readers_during_reloads)
{
	pthread_t t[4];
	char doc[128];

	put("config.yaml", base_profile);
	init_ok();
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, reader, engine_device(0));
	for (int i = 0; i < 3; i++) {
		snprintf(doc, sizeof(doc), "all: {thermal: {temperature_gpu_c: %d}, "
			 "performance_state: P%d}\n", 40 + i, i);
		put("overrides.yaml", doc);
		usleep(550 * 1000);
	}
	stop = 1;
	for (int i = 0; i < 4; i++) {
		void *n;

		pthread_join(t[i], &n);
		cr_assert_gt((unsigned long)n, 0, "reader %d saw a bad value (or none)", i);
	}
	usleep(1100 * 1000);
	cr_assert_eq(u64(engine_device(0), "thermal.temperature_gpu_c"), 42);
}
