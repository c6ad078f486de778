/* Stand-alone driver for libFuzzer-style targets (LLVMFuzzerTestOneInput),
 * so every fuzz target also runs in `make check` (under ASan/UBSan in CI)
 * with gcc: it feeds each seed in tests/fuzz/corpus/<target>/, then a
 * bounded number of deterministic mutations of them.  Prints TAP.
 * Environment: FUZZ_ITERATIONS (default 20000). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SEEDS 256
#define FUZZ_MAX_INPUT 65536

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

int main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	const char *src = getenv("MOKKA_SRCDIR");
	const char *it = getenv("FUZZ_ITERATIONS");
	long iterations = it ? atol(it) : 20000;
	uint8_t *seeds[MAX_SEEDS];
	size_t seed_len[MAX_SEEDS];
	int nseeds = 0;
	char dir[4096];

	if (strncmp(name, "lt-", 3) == 0)
		name += 3;
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", src ? src : ".", name);
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) && nseeds < MAX_SEEDS) {
			char p[8192];
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			FILE *f = fopen(p, "rb");
			if (!f)
				continue;
			seeds[nseeds] = malloc(FUZZ_MAX_INPUT);
			seed_len[nseeds] = fread(seeds[nseeds], 1, FUZZ_MAX_INPUT, f);
			fclose(f);
			nseeds++;
		}
		closedir(d);
	}
	if (nseeds == 0) {
		seeds[0] = calloc(1, FUZZ_MAX_INPUT);
		seed_len[0] = 0;
		nseeds = 1;
	}
	printf("1..1\n");
	for (int i = 0; i < nseeds; i++)
		LLVMFuzzerTestOneInput(seeds[i], seed_len[i]);
	uint8_t *buf = malloc(FUZZ_MAX_INPUT);
	for (long i = 0; i < iterations; i++) {
		int s = (int)(rng() % (uint64_t)nseeds);
		memcpy(buf, seeds[s], seed_len[s]);
		size_t len = mutate(buf, seed_len[s], FUZZ_MAX_INPUT);
		/* exact-size heap copy so ASan sees overreads */
		uint8_t *in = malloc(len ? len : 1);
		memcpy(in, buf, len);
		LLVMFuzzerTestOneInput(in, len);
		free(in);
	}
	printf("ok 1 - %s: %d seeds, %ld mutated inputs\n", name, nseeds, iterations);
	free(buf);
	for (int i = 0; i < nseeds; i++)
		free(seeds[i]);
	return 0;
}
