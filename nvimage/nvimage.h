/* nvimage: the mock NVML's compiled profile.  mokka-worker-gpudriver
 * compiles config.yaml once into R/driver/config/nvml.image; the
 * glibc-only library reads that instead of parsing YAML in every process.
 * The image holds yaml_lite trees ready to use: tree 0 is the profile as
 * yaml_lite reads config.yaml, tree 1+i the boot-merged base of
 * devices[i] (device_defaults under the entry, nvi_device_base), so the
 * library neither parses nor merges.  It names the bytes it was compiled
 * from (size and nvi_hash), and the library takes it only when they are
 * config.yaml's bytes now: a hand-edited config.yaml, an older root or a
 * bad image fall back to parsing.
 *
 * Format (host byte order, little-endian in practice; a foreign order
 * fails the version check): a 64-byte header, ntrees tree records
 * {first node, node count, decoded size}, nnodes 16-byte node records,
 * strtab_size bytes of strings.  Nodes are in preorder, tree after tree; a node's
 * kids follow it.  A string is a u32 length, its bytes and a NUL, at an
 * offset into the string table (shared: keys repeat across devices).
 * The decoder is strict (the file is untrusted bytes): nvi_open checks
 * the sizes, the checksum, the tree table and every string; nvi_tree
 * checks each node's offsets, kind, flags, kid count and depth as it
 * builds the tree (one pass), and the size the tree declared, exactly.
 * A mapping that repeats a key is not refused: yl_get takes the first, as
 * in any tree, and the compiler never writes one (yaml_lite refuses them). */
#ifndef MOKKA_NVIMAGE_H
#define MOKKA_NVIMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "yaml_lite/yaml_lite.h"

#define NVI_NAME "nvml.image"
#define NVI_MAGIC "MOKKANVI"
/* Bumped whenever the layout or the merge rules (nvimage_merge.c) change:
 * a library never uses trees merged by other rules than its own. */
#define NVI_VERSION 1u
#define NVI_MAX_SIZE (64u << 20)
#define NVI_MAX_TREES 4097u	/* the profile and 4096 devices[] entries */
#define NVI_MAX_TREE_BYTES (256u << 20)	/* one decoded tree */
#define NVI_NONE UINT32_MAX	/* no key / no text */
#define NVI_QUOTED 1u		/* yl_node.quoted (scalars only) */

struct nvi_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;	/* sizeof(struct nvi_header) */
	uint64_t total_size;	/* the whole file */
	uint64_t checksum;	/* nvi_hash of bytes [header_size, total_size) */
	uint64_t source_size;	/* the config.yaml bytes it was compiled from */
	uint64_t source_hash;	/* their nvi_hash */
	uint32_t ntrees;
	uint32_t nnodes;
	uint32_t strtab_size;
	uint32_t reserved;	/* 0 */
};

struct nvi_tree_rec {
	uint32_t first, count;	/* its nodes */
	uint32_t bytes;		/* its yl_clone-layout size (nvi_node_bytes summed) */
	uint32_t zero;
};

struct nvi_rec {
	uint8_t kind;		/* enum yl_kind */
	uint8_t flags;		/* NVI_QUOTED */
	uint16_t zero;
	uint32_t nkids;
	uint32_t key;		/* string offset or NVI_NONE */
	uint32_t str;		/* string offset or NVI_NONE */
};

/* A validated image over the caller's bytes (not copied: they must
 * outlive it). */
struct nvi {
	const struct nvi_header *hdr;
	const struct nvi_tree_rec *trees;
	const struct nvi_rec *nodes;
	const char *strtab;
	unsigned char *starts;	/* bitmap: where a checked string starts */
	size_t max_str;		/* the longest string's length */
};

/* A 64-bit hash of len bytes (checksum and source identity; not crypto). */
uint64_t nvi_hash(const void *data, size_t len);

/* Validates buf's header, checksum, tree table and strings (buf must be
 * 8-byte aligned, as malloc's are).  0, or -EINVAL / -ENOMEM with why. */
int nvi_open(struct nvi *img, const void *buf, size_t len, char *why, size_t whylen);
void nvi_close(struct nvi *img);
size_t nvi_tree_count(const struct nvi *img);
/* Tree k, checked node by node, as one yl_clone-style block (yl_free
 * frees it).  0, or -EINVAL (why says where) / -ENOMEM. */
int nvi_tree(const struct nvi *img, size_t k, struct yl_node **out, char *why, size_t whylen);
/* What yl_clone allocates for a node with these kids, key and text
 * lengths (-1: none). */
size_t nvi_node_bytes(uint32_t nkids, long keylen, long strlen);
/* Whether img was compiled from these bytes. */
int nvi_matches(const struct nvi *img, const void *src, size_t len);

/* The encoder (mokka-worker-gpudriver, tests): trees[k] (NULL: a null
 * node) into a malloc'd image naming src as its source.  0 or -errno. */
int nvi_encode(const struct yl_node *const *trees, size_t ntrees, const void *src,
	       size_t srclen, char **out, size_t *outlen);
/* Parses src as yaml_lite does and encodes the profile with every
 * devices[] entry's base.  0, -EINVAL (why says what) or -ENOMEM. */
int nvi_compile(const char *src, size_t srclen, char **out, size_t *outlen, char *why,
		size_t whylen);

/* The boot merge (NVML.md §4): devices[pos] of profile over its
 * device_defaults.  *out is NULL when the entry is no mapping.  0 or
 * -ENOMEM. */
int nvi_device_base(const struct yl_node *profile, size_t pos, struct yl_node **out);

#endif
