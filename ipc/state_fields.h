/* The field tables state.c and state_pci.c encode and decode with: one
 * row per member, so a field is added in one place.  Private to ipc/. */
#ifndef MOKKA_IPC_STATE_FIELDS_H
#define MOKKA_IPC_STATE_FIELDS_H

#include <stddef.h>
#include <cjson/cJSON.h>

enum ftype { F_INT, F_U64, F_U16, F_U32, F_LONG, F_BOOL, F_STR };

struct field {
	const char *key;
	enum ftype type;
	size_t off;
	size_t size;		/* for strings */
};

#define FI(st, k, t) { #k, t, offsetof(st, k), 0 }
#define FS(st, k) { #k, F_STR, offsetof(st, k), sizeof(((st *)0)->k) }
#define FN(st, name, k, t) { name, t, offsetof(st, k), 0 }
#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

/* Add base's fields to obj (U64 as decimal strings).  0 or -ENOMEM. */
int state_put_fields(cJSON *obj, const void *base, const struct field *f, size_t n);
/* Read every field of obj into base, each present and of its type and
 * range (strings shorter than their buffer).  0, or -EINVAL with
 * "state: <where>.<key>: why" in err. */
int state_get_fields(const cJSON *obj, void *base, const struct field *f, size_t n,
		     const char *where, char *err, size_t errlen);

#endif
