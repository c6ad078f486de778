/* The shared, durable device state store: what consumers change on a GPU
 * (nvidia-smi -pm/-c/-pl/-ac/-lgc/-e/-mig, MIG instances, ...) kept in a
 * directory every process loading the mock NVML reads and writes, so a
 * change by one process is seen by all others at their next call and
 * survives restarts of everything but a teardown (Revoke/Discard) or
 * `mokka-ctl reset`.
 *
 * Layout of the directory (R/driver/config/state by default, so the CDI
 * mount of R/driver/config carries it into containers):
 *   <GPU uuid>.state   one text document per GPU (ds_encode/ds_decode),
 *                      replaced whole by rename: readers never lock
 *   .lock              flock(LOCK_EX) by every writer (read-modify-write)
 *   .seq               8 bytes, a counter bumped after every write; readers
 *                      map it and re-read the documents when it moved
 *
 * glibc only (compiled into the shim as well as linked by workers).  Every
 * function returns 0 or -errno. */
#ifndef MOKKA_DEVSTATE_H
#define MOKKA_DEVSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DS_VERSION 1
#define DS_MAX_GI 15		/* GPU instance ids 0..14 (placement-derived) */
#define DS_MAX_CI 8		/* compute instance ids 0..7 per GPU instance */
#define DS_MAX_DOC 4096		/* a document never grows beyond this */

/* Fields a document sets (unset ones come from the profile). */
enum ds_field {
	DS_PM = 1 << 0, DS_CM = 1 << 1, DS_PL = 1 << 2, DS_AC = 1 << 3,
	DS_LGC = 1 << 4, DS_ECC = 1 << 5, DS_MIG = 1 << 6, DS_ACCT = 1 << 7,
	DS_BOOST = 1 << 8, DS_LMC = 1 << 9,
};

struct ds_ci {
	uint8_t id, profile, start, size;
	uint32_t serial;	/* creation number: keys the MIG- UUID */
};

struct ds_gi {
	uint8_t id, profile, start, size;	/* profile: NVML's profile index */
	uint32_t serial;
	unsigned nci;
	struct ds_ci ci[DS_MAX_CI];
};

struct ds_gpu {
	unsigned set;		/* enum ds_field bits */
	uint8_t pm, cm, ecc_cur, ecc_pend, mig_cur, mig_pend, acct, boost;
	uint32_t pl_mw;
	uint32_t ac_mem, ac_gr;	/* application clocks, MHz */
	uint32_t lgc_min, lgc_max;	/* locked graphics clocks, MHz */
	uint32_t lmc_min, lmc_max;	/* locked memory clocks, MHz */
	uint32_t next_serial;
	unsigned ngi;
	struct ds_gi gi[DS_MAX_GI];	/* sorted by id */
};

struct ds_store {
	int dirfd;		/* -1: closed */
	int lockfd;
	volatile uint64_t *seq;	/* mapped .seq, NULL if none */
	char dir[4096];
};

/* Strict decoder: the exact header, known keys each at most once, numbers
 * in range, GPU/compute instances well-formed (unique ids, compute
 * instances of existing GPU instances, in range), "end" last.  why says
 * which line and why on error (-EINVAL). */
int ds_decode(const char *buf, size_t len, struct ds_gpu *out, char *why, size_t whylen);
/* The document for g into buf; returns its length, or -ENOSPC. */
int ds_encode(const struct ds_gpu *g, char *buf, size_t size);

/* Open the store in dir; create (mkdir -p of the last component, the
 * .lock and .seq files) when asked. */
int ds_open(struct ds_store *st, const char *dir, bool create);
void ds_close(struct ds_store *st);
bool ds_is_open(const struct ds_store *st);
/* The write counter (0 when the store has none). */
uint64_t ds_seq(const struct ds_store *st);

/* A GPU's document: 0 with *out filled, or -ENOENT with *out zeroed (no
 * document: nothing set), or another -errno (a bad document is -EINVAL
 * and reads as empty). */
int ds_load(struct ds_store *st, const char *uuid, struct ds_gpu *out);
/* Writers: lock, load, change, save, unlock.  ds_save writes the document
 * atomically (temp + rename) and bumps the counter; a document with
 * nothing set is removed instead. */
int ds_lock(struct ds_store *st);
void ds_unlock(struct ds_store *st);
int ds_save(struct ds_store *st, const char *uuid, const struct ds_gpu *g);
/* Remove every GPU document (mokka-ctl reset); bumps the counter. */
int ds_clear(struct ds_store *st);

/* The MIG device UUID of compute instance ci of GPU instance gi on the GPU
 * parent_uuid, created as number serial: "MIG-xxxxxxxx-xxxx-5xxx-yxxx-
 * xxxxxxxxxxxx", the same in every process (the mock NVML, gpudriver's CDI
 * entries) and new for each creation. */
void ds_mig_uuid(const char *parent_uuid, unsigned gi, unsigned ci, uint32_t serial,
		 char *out, size_t size);
/* The nvidia-caps minors the driver gives MIG access (mig-minors):
 * config 1, monitor 2, then 9 per GPU instance (its own, then 8 compute
 * instances) for 15 GPU instances of each of 32 GPUs. */
#define DS_CAPS_GPUS 32
static inline unsigned ds_gi_minor(unsigned gpu, unsigned gi)
{
	return 3 + (gpu * DS_MAX_GI + gi) * (1 + DS_MAX_CI);
}
static inline unsigned ds_ci_minor(unsigned gpu, unsigned gi, unsigned ci)
{
	return ds_gi_minor(gpu, gi) + 1 + ci;
}

/* Helpers over one GPU's instances. */
struct ds_gi *ds_gi_find(struct ds_gpu *g, unsigned id);
int ds_gi_add(struct ds_gpu *g, const struct ds_gi *gi);	/* -EEXIST, -ENOSPC */
void ds_gi_remove(struct ds_gpu *g, unsigned id);
struct ds_ci *ds_ci_find(struct ds_gi *gi, unsigned id);
int ds_ci_add(struct ds_gi *gi, const struct ds_ci *ci);
void ds_ci_remove(struct ds_gi *gi, unsigned id);

#endif
