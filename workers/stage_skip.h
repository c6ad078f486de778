/* Incremental reconcile: a Stage whose inputs did not change since the
 * generation it last published, and whose published output nobody
 * touched since, renders nothing and swaps nothing (ARCHITECTURE.md §3).
 *
 * The inputs are the state sections the simulator reads (the state
 * document's top-level members, less the ones it lists as never read)
 * plus what its inputs callback adds: files it copies in, host files it
 * reads.  The output check is one lstat per path of its stage manifest:
 * a file removed, replaced or rewritten by someone else is repaired by
 * the next pass, as before. */
#ifndef MOKKA_WORKERS_STAGE_SKIP_H
#define MOKKA_WORKERS_STAGE_SKIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct manifest;

/* A running 64-bit FNV-1a digest (change detection, not security: the
 * worst a collision does is skip a pass nobody asked for). */
struct skip_key {
	uint64_t h;
};

void skip_key_init(struct skip_key *k);
void skip_key_bytes(struct skip_key *k, const void *p, size_t n);
void skip_key_str(struct skip_key *k, const char *s);
/* A file's identity (type, inode, size, mtime, ctime) or its absence. */
void skip_key_stat(struct skip_key *k, const char *path);
/* A small file's content (up to max bytes; /proc files have no mtime). */
void skip_key_file(struct skip_key *k, const char *path, size_t max);
/* Every entry of a directory by name and content (up to max bytes each,
 * sorted by name): a store whose files are rewritten in place, or whose
 * times move without a change, is judged by what it holds. */
void skip_key_dir(struct skip_key *k, const char *dir, size_t max);

/* The state document json (len bytes) without "generation" and without
 * the top-level members ignore lists (NULL-terminated, may be NULL).
 * -EINVAL when json is not an object. */
int skip_state_key(const char *json, size_t len, const char *const *ignore, uint64_t *out);

/* The published output's identity: per path of m (host paths under root),
 * its type and, for files and links, inode, size and mtime (a directory's
 * mtime moves with other simulators' entries in a shared surface). */
int skip_output_key(const char *root, const struct manifest *m, uint64_t *out);

#endif
