/* mokka-plan's YAML writer: block style as kubectl prints it (sequences
 * under a key not indented, a mapping in a sequence starting on the "- "
 * line), no line folding, and strings quoted whenever a plain scalar would
 * read back as another type, so the output is byte-stable and round-trips
 * through libyaml (which reads it back in the tests and in mokka-plan).
 * Written directly rather than through libyaml's emitter: the full
 * envelope is tens of millions of scalars and the emitter's per-event
 * analysis dominated the plan's time. */
#ifndef MOKKA_PLANNER_EM_H
#define MOKKA_PLANNER_EM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define EM_DEPTH 32

struct em_frame {
	char kind;			/* 'm' mapping, 's' sequence */
	bool pending_nl;		/* opened after "key:", nothing written yet */
	bool inline_first;		/* a mapping opened on a "- " line */
	int col, n;
};

struct em {
	FILE *f;
	char buf[1 << 15];		/* written out when full and by em_close */
	size_t len;
	struct em_frame st[EM_DEPTH];
	int depth;
	int err;			/* first failure: -EIO / -EOVERFLOW */
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
