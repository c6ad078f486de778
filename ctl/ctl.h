/* mokka-ctl: runtime control of a running simulated node (ARCHITECTURE.md
 * §9, NVML.md §5).  It edits the overrides document beside the engine
 * config under flock on a sibling lock file, validating the result against
 * the profile before replacing the document by rename.  The document
 * itself (path, parse, check, merge, emit) is the overrides module's:
 *
 *   main.c      argument parsing, the edit transaction (the Xid journal
 *               line first, then the document)
 *   commands.c  the command table: what each command writes
 *   commands_errors.c  ecc, sram-ecc, nvlink-error, fabric-health
 *   docfile.c   lock (0600, bounded wait), read, validate the candidate,
 *               atomic replace
 *   profile.c   the engine config's GPUs (index, UUID, PCI address) and
 *               --gpu resolution */
#ifndef MOKKA_CTL_CTL_H
#define MOKKA_CTL_CTL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "overrides/overrides.h"

#define CTL_MAX_GPUS 64
#define CTL_MAX_ARGS 32
#define CTL_MAX_OPTS 8

struct ctl_gpu {
	unsigned index;
	char uuid[128];
	char bus_id[16];
};

struct ctl_profile {
	char path[PATH_MAX];
	int n;
	struct ctl_gpu gpu[CTL_MAX_GPUS];
	unsigned fan_count;		/* device_defaults.fan.count */
};

/* The GPUs a command addresses: every GPU (the `all` block) or one. */
struct ctl_target {
	bool all;
	int gpu;			/* index into profile.gpu when !all */
};

struct ctl_opt {
	const char *name;		/* without "--" */
	const char *value;		/* NULL for a flag */
};

struct ctl_call {
	const struct ctl_profile *prof;
	struct ctl_target target;
	int argc;			/* positional arguments after the command */
	char *const *argv;
	int nopts;
	struct ctl_opt opts[CTL_MAX_OPTS];
	uint64_t now_us;		/* for injection sequence numbers */
	uint64_t seq_floor;		/* the journal's newest seq: a new one is above */
	struct ovr_xid_event inject;	/* the call's injection (seq 0 = none) */
	char *err;			/* message for the user on failure */
	size_t errlen;
	const char *root;		/* host root the layout lies beneath, or NULL */
};

/* One command: edit doc (locked, parsed) for call->target, or with
 * readonly print; 0 or -errno with call->err set. */
struct ctl_command {
	const char *name;
	const char *usage;		/* arguments, for --help */
	const char *help;		/* one line */
	int min_args, max_args;		/* positional arguments (-1 = any) */
	const char *const *opts;	/* accepted options: "mode=", "flag" */
	bool readonly;			/* status: no write, shared lock */
	bool no_parse;			/* reset --gpu all: the old document may be broken */
	int (*run)(struct ctl_call *call, struct yl_node **doc);
};

extern const struct ctl_command ctl_commands[];
extern const size_t ctl_ncommands;

/* commands.c: what the commands share.  A value in lo..hi (an integer when
 * integer is set), 0 or -EINVAL with call->err set. */
int ctl_number(struct ctl_call *call, const char *what, const char *v, double lo, double hi,
	       bool integer, double *out);
int ctl_integer(struct ctl_call *call, const char *what, const char *v, double lo, double hi,
		long long *out);
/* The scope the call edits (created; NULL on ENOMEM). */
struct yl_node *ctl_scope(struct ctl_call *call, struct yl_node *doc);
/* Set each paths[i] to vals[i] (owned) under the call's scope; with --gpu
 * all, per-GPU values of the same keys go. */
int ctl_set_all(struct ctl_call *call, struct yl_node *doc, const char *const *paths,
		struct yl_node *const *vals, size_t n);
/* A mapping of keys[i]: vals[i] (owned; NULL on ENOMEM, vals freed). */
struct yl_node *ctl_map_of(const char *const *keys, struct yl_node *const *vals, size_t n);
/* commands_errors.c */
int ctl_cmd_ecc(struct ctl_call *call, struct yl_node **doc);
int ctl_cmd_sram_ecc(struct ctl_call *call, struct yl_node **doc);
int ctl_cmd_nvlink_error(struct ctl_call *call, struct yl_node **doc);
int ctl_cmd_fabric_health(struct ctl_call *call, struct yl_node **doc);

const char *ctl_opt(const struct ctl_call *call, const char *name);	/* NULL = absent */
bool ctl_flag(const struct ctl_call *call, const char *name);
int ctl_fail(struct ctl_call *call, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* profile.c */
int ctl_profile_load(struct ctl_profile *p, const char *config, char *err, size_t errlen);
/* "all", an index, a UUID or a PCI address (any case). */
int ctl_target_parse(const struct ctl_profile *p, const char *spec, struct ctl_target *t,
		     char *err, size_t errlen);
/* docfile.c */
/* The candidate text read back as the engine will read it (one parse,
 * yaml_lite) and held to ovr_validate's OVR_SCHEMA rules for p's GPUs,
 * runtime keys refused; then it must be the edited document.  Errors
 * are "DOC_NAME:LINE:COL: KEY: why", positions in the text. */
int ctl_validate(const struct ctl_profile *p, const char *doc_name, const struct yl_node *doc,
		 const char *text, size_t len, char *err, size_t errlen);
struct ctl_docfile {
	char path[PATH_MAX];
	char lock[PATH_MAX + 16];
	char xids[PATH_MAX + 16];	/* the Xid journal beside it */
	int lock_fd;
	/* The host root path is under (NULL: a path the operator named):
	 * their directory is resolved beneath it, never through a link, and
	 * every file in it is opened, made and replaced through dir_fd. */
	const char *root;
	int dir_fd;
};
/* The lock (OVR_LOCK_NAME, made 0600; refused when anyone else could open
 * it), waited for at most CTL_LOCK_WAIT_MS, then -ETIMEDOUT naming the
 * lock and its holder. */
#define CTL_LOCK_WAIT_MS 5000
int ctl_doc_lock(struct ctl_docfile *f, const char *path, bool exclusive, char *err, size_t errlen);
void ctl_doc_unlock(struct ctl_docfile *f);
/* The current bytes (NULL/0 when the file is missing). */
int ctl_doc_read(const struct ctl_docfile *f, char **buf, size_t *len, char *err, size_t errlen);
/* Replace the document by rename (temp file beside it, 0644, fsync). */
int ctl_doc_replace(const struct ctl_docfile *f, const char *text, size_t len, char *err,
		    size_t errlen);
/* Replace path (f->path or f->xids) the same way; a link there is refused. */
int ctl_file_replace(const struct ctl_docfile *f, const char *path, const char *text, size_t len,
		     char *err, size_t errlen);
/* The Xid journal's bytes (NULL/0 when missing). */
int ctl_xids_read(const struct ctl_docfile *f, char **buf, size_t *len, char *err,
		  size_t errlen);

/* reset: clear the device state store's documents of the call's target
 * (ctl/state.c); 0 or -errno with call->err set. */
int ctl_state_reset(struct ctl_call *call);
/* gpu-reset: pending ECC/MIG modes applied (ctl/state.c). */
int ctl_cmd_gpu_reset(struct ctl_call *call, struct yl_node **doc);

#endif
