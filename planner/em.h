/* A thin layer over libyaml's emitter: block style, no line folding, and
 * strings quoted whenever a plain scalar would read back as another type,
 * so the output is byte-stable and round-trips. */
#ifndef MOKKA_PLANNER_EM_H
#define MOKKA_PLANNER_EM_H

#include <stdint.h>
#include <stdio.h>
#include <yaml.h>

struct em {
	yaml_emitter_t e;
	int err;			/* first failure: -EIO / -ENOMEM */
};

int em_open(struct em *m, FILE *f);
int em_close(struct em *m);		/* 0 or the first error */
void em_doc(struct em *m);
void em_doc_end(struct em *m);
void em_map(struct em *m);
void em_seq(struct em *m);
void em_end_map(struct em *m);
void em_end_seq(struct em *m);
void em_str(struct em *m, const char *s);
void em_int(struct em *m, int64_t v);
void em_kstr(struct em *m, const char *key, const char *val);	/* NULL val: skipped */
void em_kint(struct em *m, const char *key, int64_t v);
void em_kbool(struct em *m, const char *key, int v);
void em_kmap(struct em *m, const char *key);
void em_kseq(struct em *m, const char *key);

#endif
