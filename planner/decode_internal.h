/* Shared by planner/decode*.c: the per-object context and typed getters.
 * Every getter names the field path in its error. */
#ifndef MOKKA_PLANNER_DECODE_INTERNAL_H
#define MOKKA_PLANNER_DECODE_INTERNAL_H

#include "planner/decode.h"
#include "planner/ytree.h"

struct dctx {
	struct pl_decoder *d;
	struct pl_world *w;
	const char *kind, *name;
	const struct pt *obj;
	char msg[768];
};

int dc_bad(struct dctx *c, const struct pt *at, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Each: 0 (absent optional leaves *out untouched; *present false), or -EINVAL. */
int dc_str(struct dctx *c, const struct pt *map, const char *key, const char *path,
	   bool required, const char **out);
int dc_int(struct dctx *c, const struct pt *map, const char *key, const char *path,
	   int64_t min, int64_t max, bool required, int64_t *out, bool *present);
int dc_kvs(struct dctx *c, const struct pt *map, const char *key, const char *path,
	   struct pl_kvs *out);
int dc_selector(struct dctx *c, const struct pt *map, const char *key, const char *path,
		struct pl_selector *out);
int dc_ilist(struct dctx *c, const struct pt *map, const char *key, const char *path,
	     int64_t max, struct pl_ilist *out);
int dc_runtime(struct dctx *c, const struct pt *map, const char *path, struct pl_runtime *out);
int dc_dns_name(struct dctx *c, const struct pt *at, const char *path, const char *s, size_t max);

int dc_profile(struct dctx *c, const struct pt *spec, struct pl_profile *p);
int dc_inventory(struct dctx *c, const struct pt *spec, struct pl_inventory *inv);
int dc_rack(struct dctx *c, const struct pt *obj, struct pl_rack *rk);
int dc_policy(struct dctx *c, const struct pt *spec, struct pl_policy *p);

#endif
