/* Key tables: one row per key of a YAML block, its type and, for a
 * mapping (or a list of mappings), the block's own table.  DeviceConfig's
 * table is here because the overrides document is made of DeviceConfig
 * subtrees; the profile compiler's tables (profile/compile_schema.c) are
 * written with the same rows and reach DeviceConfig through it.  Include
 * this only where tables are written or walked: the shorthands are short. */
#ifndef MOKKA_OVERRIDES_SCHEMA_H
#define MOKKA_OVERRIDES_SCHEMA_H

#include <stddef.h>

enum ovr_ftype { OVR_END, OVR_STR, OVR_INT, OVR_UINT, OVR_BOOL, OVR_FLOAT, OVR_MAP, OVR_SEQ,
		 OVR_ANY };

struct ovr_field {
	const char *key;
	enum ovr_ftype type;
	enum ovr_ftype elem;		/* OVR_SEQ: element type */
	const struct ovr_field *sub;	/* OVR_MAP / OVR_SEQ of OVR_MAP: the block;
					 * on the OVR_END row: the table it extends */
};

#define S(k)		{ k, OVR_STR, OVR_END, NULL }
#define I(k)		{ k, OVR_INT, OVR_END, NULL }
#define U(k)		{ k, OVR_UINT, OVR_END, NULL }
#define B(k)		{ k, OVR_BOOL, OVR_END, NULL }
#define FL(k)		{ k, OVR_FLOAT, OVR_END, NULL }
#define ANY(k)		{ k, OVR_ANY, OVR_END, NULL }
#define M(k, t)		{ k, OVR_MAP, OVR_END, t }
#define SEQ(k, e)	{ k, OVR_SEQ, e, NULL }
#define SEQM(k, t)	{ k, OVR_SEQ, OVR_MAP, t }
#define END		{ NULL, OVR_END, OVR_END, NULL }
#define EXTENDS(t)	{ NULL, OVR_END, OVR_END, t }

/* DeviceConfig: the profile's device_defaults, what a devices[] entry may
 * inline, and what the overrides document's all and devices."<i>" hold. */
extern const struct ovr_field ovr_device_config[];

/* The row for key in table t (or a table it extends); NULL when none. */
const struct ovr_field *ovr_field_find(const struct ovr_field *t, const char *key, size_t len);

#endif
