/* Benchmark driver for tests/bench/mig.sh: through dlopen, as consumers
 * load the mock, on GPU 0 (MIG on) and GPU 1 (MIG off), medians over
 * batches: create+destroy of a GPU instance with its compute instance, the
 * same create call on the GPU without MIG (refused), a setter's write
 * (SetPersistenceMode) for the store's floor, and getters (GetMemoryInfo_v2,
 * GetUtilizationRates) with MIG on (two instances) and off.  Prints
 * "name usec-per-call" lines. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*fn_t)();
static void *lib;

static fn_t sym(const char *n)
{
	fn_t f = (fn_t)dlsym(lib, n);

	if (!f) {
		fprintf(stderr, "mig_bench: %s missing\n", n);
		exit(1);
	}
	return f;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define BATCHES 15
static void *dev0, *dev1, *gi, *ci;
static fn_t create_gi, destroy_gi, create_ci, destroy_ci, mem_v2, util, set_pm;

static void pair(void *d)
{
	if (create_gi(d, 19u, &gi) == 0) {
		create_ci(gi, 0u, &ci);
		destroy_ci(ci);
		destroy_gi(gi);
	}
}

static void getter_mem(void *d)
{
	struct { unsigned v; unsigned long long t, r, f, u; } m = { 0x02000028 };

	mem_v2(d, &m);
}

static void getter_util(void *d)
{
	unsigned u[2];

	util(d, u);
}

static void setter(void *d)
{
	set_pm(d, 1u);
}

static void run(const char *name, void (*f)(void *), void *d, int per)
{
	double t[BATCHES];

	for (int b = 0; b < BATCHES; b++) {
		double a = now();

		for (int i = 0; i < per; i++)
			f(d);
		t[b] = (now() - a) / per;
	}
	qsort(t, BATCHES, sizeof(t[0]), cmp);
	printf("%s %.3f\n", name, t[BATCHES / 2]);
}

int main(int argc, char **argv)
{
	unsigned st;
	void *g2, *c2;

	if (argc < 2 || !(lib = dlopen(argv[1], RTLD_NOW))) {
		fprintf(stderr, "usage: mig_bench LIB (%s)\n", dlerror());
		return 1;
	}
	create_gi = sym("nvmlDeviceCreateGpuInstance");
	destroy_gi = sym("nvmlGpuInstanceDestroy");
	create_ci = sym("nvmlGpuInstanceCreateComputeInstance");
	destroy_ci = sym("nvmlComputeInstanceDestroy");
	mem_v2 = sym("nvmlDeviceGetMemoryInfo_v2");
	util = sym("nvmlDeviceGetUtilizationRates");
	set_pm = sym("nvmlDeviceSetPersistenceMode");
	if (sym("nvmlInitWithFlags")(0u) || sym("nvmlDeviceGetHandleByIndex_v2")(0u, &dev0) ||
	    sym("nvmlDeviceGetHandleByIndex_v2")(1u, &dev1) ||
	    sym("nvmlDeviceSetMigMode")(dev0, 1u, &st)) {
		fprintf(stderr, "mig_bench: init, handles or MIG mode failed\n");
		return 1;
	}
	run("pair_create_destroy_mig_on", pair, dev0, 20);
	run("create_call_mig_off", pair, dev1, 2000);
	run("setter_write", setter, dev0, 20);
	run("getter_memory_mig_off", getter_mem, dev1, 20000);
	run("getter_util_mig_off", getter_util, dev1, 20000);
	/* two instances stay while the MIG-on getters run */
	create_gi(dev0, 19u, &gi), create_ci(gi, 0u, &ci);
	create_gi(dev0, 9u, &g2), create_ci(g2, 2u, &c2);
	run("getter_memory_mig_on", getter_mem, dev0, 20000);
	run("getter_util_mig_on", getter_util, dev0, 20000);
	return 0;
}
