/* The runtime overrides document (NVML.md §5): where it lives, parse,
 * validate, merge and emit, in one module that mokka-ctl, mokka-kernellog,
 * the supervisor and the mock NVML engine share.  It reads with yaml_lite/
 * and needs nothing but libc, so the glibc-only engine compiles it in; what
 * mokka-ctl writes is exactly what the engine and mokka-kernellog read:
 *
 *   version: 1
 *   all: {<DeviceConfig subtree>}
 *   devices: {"<index>": {<DeviceConfig subtree>}}
 *
 * Effective per-device overrides = `all` deep-merged with `devices[i]`
 * (maps merge, scalars/lists/null replace).  An injected Xid is
 * failure.xid.code; failure.xid.seq is the injection's sequence number, so
 * the same code injected twice is two events (mokka-ctl makes it unique and
 * increasing; a document without it is one event per distinct code). */
#ifndef MOKKA_OVERRIDES_H
#define MOKKA_OVERRIDES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yaml_lite/yaml_lite.h"

#define OVR_MAX_INDEX 9999	/* the engine's device keys have at most 4 digits */

/* Parse len bytes.  Empty (or only comments) gives a fresh document
 * {version: 1}.  NULL on error with "LINE:COL: why" in err. */
struct yl_node *ovr_parse(const char *buf, size_t len, char *err, size_t errlen);

/* Where it lives: OVR_DOC_NAME beside the engine config, which is
 * <mock root>/driver/config on the host; every writer flocks the sibling
 * lock file OVR_LOCK_NAME.  The lock is mode 0600 (root's alone: a lock
 * another user can open is a lock another user can hold forever), under a
 * name of its own: the reference's overrides.yaml.lock was 0644, and a
 * descriptor opened on it then still flocks it after any chmod.  Beside
 * them the Xid journal (below).  0, or -ENAMETOOLONG. */
#define OVR_DOC_NAME "overrides.yaml"
#define OVR_LOCK_NAME ".overrides.lock"
#define OVR_LOCK_MODE 0600
#define OVR_XIDS_NAME ".overrides.xids"
int ovr_path(char *buf, size_t size, const char *host_root, const char *mock_root);
int ovr_path_beside(char *buf, size_t size, const char *config_dir);
int ovr_lock_path(char *buf, size_t size, const char *doc_path);
int ovr_xids_path(char *buf, size_t size, const char *doc_path);
/* The files beside the document, with their modes, for whoever stages the
 * directory (so teardown removes them): {NULL} ends the table. */
struct ovr_file {
	const char *name;
	unsigned mode;
};
extern const struct ovr_file ovr_files[];

/* The Xid journal: every injection mokka-ctl accepted, one line each,
 * "SEQ TARGET CODE" (TARGET an index or "all"), seq strictly increasing;
 * mokka-kernellog announces each line exactly once, whatever else the
 * document says meanwhile.  The newest OVR_XIDS_KEEP lines are kept. */
#define OVR_XIDS_KEEP 1024
#define OVR_XID_MAX 65535
struct ovr_xid_event {
	uint64_t seq, code;
	int index;		/* -1 = all */
};
/* Whole lines only (a trailing line without its newline is skipped), bad
 * lines skipped; *out malloc'd (NULL when n is 0).  0 or -ENOMEM. */
int ovr_xids_parse(const char *text, size_t len, struct ovr_xid_event **out, size_t *n);
int ovr_xids_render(const struct ovr_xid_event *ev, size_t n, char **out, size_t *len);
/* old (may be NULL) + add, trimmed to the newest OVR_XIDS_KEEP. */
int ovr_xids_append(const char *old, size_t old_len, const struct ovr_xid_event *add,
		    char **out, size_t *len);

/* What a document is held to.  Every level checks the shape: a mapping of
 * version (1), all (mapping or null) and devices (mapping of decimal index
 * keys to mappings or null). */
enum ovr_level {
	OVR_SHAPE,	/* the shape only (a document to edit or to read Xids from) */
	OVR_KEYS,	/* + the scopes' keys are DeviceConfig's (the engine's reading) */
	OVR_SCHEMA,	/* + every key and value type of DeviceConfig (mokka-ctl's writing) */
};
struct ovr_rules {
	enum ovr_level level;
	bool runtime;		/* refuse the keys the engine keeps at boot (ovr_frozen) */
	const unsigned *gpus;	/* the device indices that exist (NULL: any) */
	size_t ngpus;
	const char *gpus_from;	/* where those come from, for the message */
};
/* 0, or -EINVAL with "LINE:COL: KEY: why" in err (the position of the
 * offending node in the text doc was parsed from). */
int ovr_validate(const struct yl_node *doc, const struct ovr_rules *rules, char *err,
		 size_t errlen);
/* ovr_validate at OVR_SHAPE. */
int ovr_check_shape(const struct yl_node *doc, char *err, size_t errlen);
/* Dotted paths the engine restores to their boot values after every
 * merge (NULL-terminated). */
extern const char *const ovr_frozen[];

/* Device index of a devices key ("2" -> 2); false when not an index. */
bool ovr_device_key(const char *key, unsigned *index);

/* The mapping at doc.all or doc.devices."<index>" (index < 0 = all),
 * created (with devices) when create is set.  NULL when absent or on
 * ENOMEM. */
struct yl_node *ovr_scope(struct yl_node *doc, int index, bool create);

/* Set a dotted path ("thermal.temperature_gpu_c") under a scope mapping to
 * val (owned), creating intermediate mappings (replacing non-mappings).
 * Remove deletes the key (missing is fine) and prunes emptied parents. */
int ovr_set(struct yl_node *scope, const char *path, struct yl_node *val);
void ovr_remove(struct yl_node *scope, const char *path);

/* Scalars built for the document: plain (a number, a bool) or quoted. */
struct yl_node *ovr_plain(const char *text);
struct yl_node *ovr_plainf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The merge: src's keys into dst, maps recursively; scalars, lists and
 * null replace.  Apply merges doc's all, then each devices key naming
 * index, into dst.  0 or -ENOMEM (dst then partly merged). */
int ovr_merge(struct yl_node *dst, const struct yl_node *src);
int ovr_apply(struct yl_node *dst, const struct yl_node *doc, unsigned index);

/* Effective overrides for one device: ovr_apply on an empty mapping
 * (NULL on ENOMEM). */
struct yl_node *ovr_effective(const struct yl_node *doc, unsigned index);

/* The injected Xid of one device: code (0 = none) and seq (0 = unset). */
void ovr_xid(const struct yl_node *doc, unsigned index, uint64_t *code, uint64_t *seq);

/* The largest failure.xid.seq anywhere in the document (0 = none). */
uint64_t ovr_max_seq(const struct yl_node *doc);

/* Block-style YAML that yl_parse reads back equal (yl_equal, and plain
 * scalars stay plain where they can).  0 or -ENOMEM; *out malloc'd. */
int ovr_emit(const struct yl_node *doc, char **out, size_t *len);

#endif
