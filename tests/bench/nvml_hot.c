/* Hot-getter cost of a libnvidia-ml: dlopen the library given on the
 * command line, init, take GPU 0's handle, then time CALLS calls (default
 * 100000) of each of GetTemperature, GetPowerUsage, GetMemoryInfo_v2,
 * GetClockInfo and GetUtilizationRates, in batches of 1000; print the
 * median batch's ns/call per getter (and the min), one line each:
 *   <name> median_ns=<x> min_ns=<y> calls=<n> rc=<first non-zero rc or 0>
 *
 * Build: cc -O2 -o nvml_hot nvml_hot.c -ldl */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*init_fn)(unsigned);
typedef int (*handle_fn)(unsigned, void **);
typedef int (*temp_fn)(void *, int, unsigned *);
typedef int (*power_fn)(void *, unsigned *);
typedef int (*mem_fn)(void *, void *);
typedef int (*clock_fn)(void *, int, unsigned *);
typedef int (*util_fn)(void *, void *);

struct mem_v2 {
	unsigned version;
	unsigned long long total, reserved, free, used;
};

#define BATCH 1000

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);

	if (!p) {
		fprintf(stderr, "nvml_hot: %s: missing\n", name);
		exit(2);
	}
	return p;
}

int main(int argc, char **argv)
{
	long calls = argc > 2 ? atol(argv[2]) : 100000;
	long nb = calls / BATCH;
	double *t;
	void *lib, *dev;
	int g;

	if (argc < 2) {
		fprintf(stderr, "usage: nvml_hot LIBRARY [CALLS]\n");
		return 2;
	}
	if (nb < 1)
		nb = 1;
	t = calloc(nb, sizeof(*t));
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib || !t) {
		fprintf(stderr, "nvml_hot: %s\n", dlerror());
		return 2;
	}
	if (((init_fn)sym(lib, "nvmlInitWithFlags"))(0) != 0 ||
	    ((handle_fn)sym(lib, "nvmlDeviceGetHandleByIndex_v2"))(0, &dev) != 0) {
		fprintf(stderr, "nvml_hot: init or handle 0 failed\n");
		return 2;
	}
	temp_fn temp = (temp_fn)sym(lib, "nvmlDeviceGetTemperature");
	power_fn power = (power_fn)sym(lib, "nvmlDeviceGetPowerUsage");
	mem_fn mem = (mem_fn)sym(lib, "nvmlDeviceGetMemoryInfo_v2");
	clock_fn clk = (clock_fn)sym(lib, "nvmlDeviceGetClockInfo");
	util_fn util = (util_fn)sym(lib, "nvmlDeviceGetUtilizationRates");
	static const char *names[] = { "nvmlDeviceGetTemperature", "nvmlDeviceGetPowerUsage",
		"nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetClockInfo",
		"nvmlDeviceGetUtilizationRates" };

	for (g = 0; g < 5; g++) {
		int rc = 0, r = 0;
		long b, i;

		for (b = 0; b < nb; b++) {
			double t0 = now_ns();

			for (i = 0; i < BATCH; i++) {
				unsigned v;
				struct mem_v2 m = { .version = (2u << 24) | sizeof(m) };
				unsigned u[2];

				switch (g) {
				case 0: r = temp(dev, 0, &v); break;
				case 1: r = power(dev, &v); break;
				case 2: r = mem(dev, &m); break;
				case 3: r = clk(dev, 0, &v); break;
				default: r = util(dev, u); break;
				}
				if (r && !rc)
					rc = r;
			}
			t[b] = (now_ns() - t0) / BATCH;
		}
		qsort(t, nb, sizeof(*t), cmp);
		printf("%s median_ns=%.1f min_ns=%.1f calls=%ld rc=%d\n", names[g],
		       t[nb / 2], t[0], nb * BATCH, rc);
	}
	return 0;
}
