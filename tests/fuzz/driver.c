/* Stand-alone driver for libFuzzer-style targets (LLVMFuzzerTestOneInput),
 * so every fuzz target also runs in `make check` (under ASan/UBSan in CI)
 * with gcc.  It replays, in this order:
 *   - every regression input in tests/fuzz/regress/<target>/ (crashes that
 *     `make fuzz` found: each is one TAP line);
 *   - every seed in tests/fuzz/corpus/<target>/;
 *   - FUZZ_ITERATIONS (default 20000) deterministic mutations of the seeds.
 * Every input ends exactly at an inaccessible page, so a read past its end
 * faults in any build, not only under ASan.  Prints TAP.
 * Built with MOKKA_LIBFUZZER (`make fuzz`), this file is empty: libFuzzer
 * brings its own main. */
#ifndef MOKKA_LIBFUZZER
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT 65536

struct input {
	char *name;
	uint8_t *data;
	size_t len;
};

struct inputs {
	struct input *v;
	int n, cap;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static size_t mutate(uint8_t *buf, size_t len, size_t cap)
{
	int rounds = 1 + (int)(rng() % 4);

	for (int i = 0; i < rounds; i++) {
		switch (rng() % 5) {
		case 0:	/* flip a byte */
			if (len)
				buf[rng() % len] ^= (uint8_t)(1u << (rng() % 8));
			break;
		case 1:	/* random byte */
			if (len)
				buf[rng() % len] = (uint8_t)rng();
			break;
		case 2:	/* truncate */
			if (len)
				len = rng() % len;
			break;
		case 3:	/* duplicate a chunk */
			if (len && len < cap / 2) {
				size_t off = rng() % len, n = 1 + rng() % (len - off);
				if (len + n <= cap) {
					memmove(buf + off + n, buf + off, len - off);
					len += n;
				}
			}
			break;
		default: /* interesting bytes */
			if (len) {
				static const uint8_t magic[] = { 0, 0xff, '\n', ':', '"', '{', '-', ' ', '\t', '[' };
				buf[rng() % len] = magic[rng() % sizeof(magic)];
			}
			break;
		}
	}
	return len;
}

/* Run one input placed so that its last byte is the last accessible one. */
static void run_guarded(const uint8_t *data, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t span = (len + pg - 1) / pg * pg + pg;
	uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || mprotect(m + span - pg, pg, PROT_NONE) < 0) {
		perror("fuzz driver: mmap");
		exit(1);
	}
	uint8_t *in = m + span - pg - len;

	memcpy(in, data, len);
	LLVMFuzzerTestOneInput(in, len);
	munmap(m, span);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct input *)a)->name, ((const struct input *)b)->name);
}

/* Every file in dir (sorted by name, so runs repeat exactly). */
static void load_dir(const char *dir, struct inputs *in)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int first = in->n;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char p[8192];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (!(f = fopen(p, "rb")))
			continue;
		if (in->n == in->cap) {
			in->cap = in->cap ? in->cap * 2 : 64;
			if (!(in->v = realloc(in->v, (size_t)in->cap * sizeof(*in->v))))
				abort();
		}
		struct input *x = &in->v[in->n++];

		x->name = strdup(e->d_name);
		x->data = malloc(FUZZ_MAX_INPUT);
		if (!x->name || !x->data)
			abort();
		x->len = fread(x->data, 1, FUZZ_MAX_INPUT, f);
		fclose(f);
	}
	closedir(d);
	qsort(in->v + first, (size_t)(in->n - first), sizeof(*in->v), by_name);
}

static void free_inputs(struct inputs *in)
{
	for (int i = 0; i < in->n; i++) {
		free(in->v[i].name);
		free(in->v[i].data);
	}
	free(in->v);
}

int main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	const char *src = getenv("MOKKA_SRCDIR");
	const char *it = getenv("FUZZ_ITERATIONS");
	long iterations = it ? atol(it) : 20000;
	struct inputs regress = { 0 }, seeds = { 0 };
	char dir[4096];

	if (strncmp(name, "lt-", 3) == 0)
		name += 3;
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/regress/%s", src ? src : ".", name);
	load_dir(dir, &regress);
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", src ? src : ".", name);
	load_dir(dir, &seeds);
	printf("1..%d\n", regress.n + 1);
	for (int i = 0; i < regress.n; i++) {
		printf("# replaying %s\n", regress.v[i].name);
		fflush(stdout);
		run_guarded(regress.v[i].data, regress.v[i].len);
		printf("ok %d - %s: regression input %s\n", i + 1, name, regress.v[i].name);
		fflush(stdout);
	}
	for (int i = 0; i < seeds.n; i++)
		run_guarded(seeds.v[i].data, seeds.v[i].len);
	uint8_t *buf = malloc(FUZZ_MAX_INPUT);

	for (long i = 0; i < iterations && seeds.n; i++) {
		int s = (int)(rng() % (uint64_t)seeds.n);

		memcpy(buf, seeds.v[s].data, seeds.v[s].len);
		run_guarded(buf, mutate(buf, seeds.v[s].len, FUZZ_MAX_INPUT));
	}
	if (!seeds.n)
		run_guarded(buf, 0);
	printf("ok %d - %s: %d seeds, %ld mutated inputs\n", regress.n + 1, name, seeds.n,
	       iterations);
	free(buf);
	free_inputs(&regress);
	free_inputs(&seeds);
	return 0;
}
#else
typedef int mokka_libfuzzer_brings_main;
#endif
