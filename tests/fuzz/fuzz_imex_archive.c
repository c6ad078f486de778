/* Fuzz the IMEX archive readers (workers/imex/tar.c): the tar walk must
 * hand out members whose data lies inside the input and whose size is
 * within the limit, whatever the headers say; the checksum-list parser and
 * the path check must hold their contracts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "workers/imex/imex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct bounds {
	const uint8_t *lo, *hi;
};

/* A path climbs out when one of its components is exactly "..": a
 * component that only ends in ".." ("x.14784..") is an ordinary name. */
static int has_dotdot(const char *p)
{
	for (;;) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return 1;
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

static int check(const struct tar_member *m, void *arg)
{
	const struct bounds *b = arg;
	char norm[1024], hex[65];

	if (m->size > IMEX_MAX_MEMBER || m->data < b->lo || m->data > b->hi ||
	    m->size > (size_t)(b->hi - m->data) || strlen(m->name) >= sizeof(m->name))
		abort();
	if (imex_safe_path(m->name, norm, sizeof(norm)) &&
	    (norm[0] == '/' || has_dotdot(norm)))
		abort();
	sha256_hex(m->data, m->size < 4096 ? m->size : 4096, hex);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bounds b = { data, data + size };
	struct imex_sums *s = malloc(sizeof(*s));
	char err[256], *text = malloc(size + 1);

	tar_walk(data, size, check, &b, err, sizeof(err));
	if (text && s) {
		memcpy(text, data, size);
		text[size] = '\0';
		if (imex_sums_parse(text, s, err, sizeof(err)) == 0) {
			if (s->n < 0 || s->n > 64)
				abort();
			for (int i = 0; i < s->n; i++) {
				const char *h = imex_sums_find(s, s->e[i].name);
				if (!h || strlen(h) != 64 || strspn(h, "0123456789abcdef") != 64)
					abort();
			}
		}
	}
	free(text);
	free(s);
	return 0;
}
