/* imex simulator: the IMEX capability surface (SURFACES.md §3, §11.2-3),
 * staged only when IMEX is on (IMEX_MOCK_CHANNELS / --imex-channels, or
 * the profile):
 *
 *   channels.c  R/driver/dev/nvidia-caps-imex-channels/channel<i>, char
 *               devices with the channel major, minor i, 0666
 *   simulator.c R/imex/proc-devices: the same /proc/devices text gpudriver
 *               stages at R/driver/proc/devices (gpudriver renders both:
 *               with IMEX on its list carries the channels' major, and the
 *               nvidia-caps major is IMEX's); the fabric-imex-mgmt
 *               capability file and its nvidia-caps node are gpudriver's
 *   archive.c   with --imex-archive (a redist .tar.xz or an image
 *               directory): nvidia-imex (as nvidia-imex.real), nvidia-imex-
 *               ctl, config.cfg and the notices, each verified by sha256
 *               against a checksum list before anything is written, then
 *               the --nogpu exec shim (shim.c) as nvidia-imex, last
 *   tar.c       a ustar/pax/GNU tar reader over the decompressed archive
 *   sha256.c    SHA-256 (FIPS 180-4)
 *   fetch.c     the IMEXDownload gate: the pinned archive fetched into the
 *               node cache in the background (http.c, http_parse.c: a
 *               small HTTP/1.1 GET client), then staged as above
 *
 * IMEX is on by the flag or by a multi-node NVLink profile (GB200/GB300
 * NVL, profile/compile_imex.c).  Without an archive the node stays ready
 * and stages no IMEX userspace. */
#ifndef MOKKA_WORKERS_IMEX_IMEX_H
#define MOKKA_WORKERS_IMEX_IMEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/state.h"
#include "workers/simulator.h"

#define IMEX_CHANNEL_DIR "/driver/dev/nvidia-caps-imex-channels"	/* under R */
#define IMEX_PROC_DEVICES "/imex/proc-devices"				/* under R */
#define IMEX_BIN "/driver/usr/bin"					/* under R */
#define IMEX_CONFIG_DIR "/driver/etc/nvidia-imex"			/* under R */
#define IMEX_DOC_DIR "/driver/usr/share/doc/nvidia-imex"		/* under R */
#define IMEX_MAX_MEMBER (64u << 20)	/* a member larger than this is refused */
#define IMEX_MAX_ARCHIVE (256u << 20)	/* decompressed */

int imex_stage_channels(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);
int imex_stage_proc_devices(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);
int imex_stage_archive(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);
/* fetch.c (IMEXDownload): 1 with the verified cached archive's host path
 * in archive; 0 when it is not cached (a background fetch is running). */
int imex_fetch_cached(struct sim_ctx *ctx, const struct state *s, char *archive, size_t len);

/* SHA-256. */
struct sha256 {
	uint32_t h[8];
	uint64_t len;
	unsigned char buf[64];
	size_t n;
};
void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
void sha256_final(struct sha256 *c, unsigned char out[32]);
void sha256_hex(const void *data, size_t len, char out[65]);

/* Tar: every member of a ustar/GNU/pax archive in buf, with the long
 * names of GNU 'L' and pax "path" records applied.  fn returns 0 to go on
 * or -errno to stop (returned).  A malformed archive is -EINVAL with why
 * in err; members larger than IMEX_MAX_MEMBER are refused. */
struct tar_member {
	char name[1024];
	char type;		/* '0' regular, '5' directory, '2' symlink, ... */
	const unsigned char *data;
	size_t size;
};
int tar_walk(const unsigned char *buf, size_t len,
	     int (*fn)(const struct tar_member *m, void *arg), void *arg,
	     char *err, size_t errlen);

/* A member or file path inside the archive: relative, no "..", no empty
 * components; "./" prefixes dropped into norm.  false when unsafe. */
bool imex_safe_path(const char *name, char *norm, size_t size);

/* A sha256sum-format list: "<64 hex>  <name>" or "<64 hex> *<name>" per
 * line.  Returns the digest for name (matched as given or by basename),
 * or NULL. */
struct imex_sums {
	int n;
	struct {
		char hex[65];
		char name[256];
	} e[64];
};
int imex_sums_parse(const char *text, struct imex_sums *s, char *err, size_t errlen);
const char *imex_sums_find(const struct imex_sums *s, const char *name);

#endif
