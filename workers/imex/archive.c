/* IMEX userspace from a redist archive (SURFACES.md §3): the .tar.xz (or
 * .tar) NVIDIA publishes, or an image directory holding the same files.
 * Only allowlisted names are taken; a member with an absolute or ".."
 * path, an allowlisted name that is not a regular file, or a member over
 * 64 MiB refuses the whole archive.  Every file is verified by sha256
 * against a checksum list (sha256sum format: --imex-checksums, else
 * <archive>.sha256 or <dir>/SHA256SUMS) before anything is written; a list
 * entry for the archive file itself vouches for all its members.  Then the
 * real daemon, ctl, config and notices are published, and the --nogpu exec
 * shim last, as nvidia-imex (the activation point). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio/fileio.h"
#include "ipc/log.h"
#include "workers/imex/imex.h"

static const struct wanted {
	const char *base;	/* name in the archive (any directory) */
	const char *dest;	/* under R */
	mode_t mode;
	bool required;
} wanted[] = {
	{ "nvidia-imex", IMEX_BIN "/nvidia-imex.real", 0755, true },
	{ "nvidia-imex-ctl", IMEX_BIN "/nvidia-imex-ctl", 0755, true },
	{ "config.cfg", IMEX_CONFIG_DIR "/config.cfg", 0644, false },
	{ "LICENSE", IMEX_DOC_DIR "/LICENSE", 0644, false },
	{ "third-party-notices.txt", IMEX_DOC_DIR "/third-party-notices.txt",
	  0644, false },
};
#define NWANTED (sizeof(wanted) / sizeof(wanted[0]))
#define SHIM_DEST IMEX_BIN "/nvidia-imex"
#define SHIM_BINARY "nvidia-imex-shim"
#define MAX_DEPTH 8

struct found {
	char path[1024];		/* inside the archive, normalized */
	const unsigned char *data;
	size_t len;
	unsigned char *owned;		/* read from a directory */
};

struct collect {
	struct found f[NWANTED];
	char err[512];
};

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static int wanted_index(const char *path)
{
	for (size_t i = 0; i < NWANTED; i++)
		if (!strcmp(base(path), wanted[i].base))
			return (int)i;
	return -1;
}

/* One archive entry: refuse unsafe ones, keep the allowlisted ones. */
static int take(struct collect *c, const char *name, bool regular, const unsigned char *data,
		size_t len, unsigned char *owned)
{
	char norm[1024];
	int w;

	if (!imex_safe_path(name, norm, sizeof(norm))) {
		snprintf(c->err, sizeof(c->err), "unsafe path '%.200s' in the archive", name);
		return -EPERM;
	}
	if ((w = wanted_index(norm)) < 0 || norm[strlen(norm) - 1] == '/') {
		free(owned);
		return 0;
	}
	if (!regular) {
		snprintf(c->err, sizeof(c->err), "%s is not a regular file", norm);
		return -EPERM;
	}
	if (c->f[w].path[0]) {
		snprintf(c->err, sizeof(c->err), "%s twice (%s and %s)", wanted[w].base,
			 c->f[w].path, norm);
		return -EEXIST;
	}
	snprintf(c->f[w].path, sizeof(c->f[w].path), "%s", norm);
	c->f[w].data = data;
	c->f[w].len = len;
	c->f[w].owned = owned;
	return 0;
}

static int take_member(const struct tar_member *m, void *arg)
{
	/* '0' regular, '5' directory (skipped by take): anything else that is
	 * allowlisted (links, devices) is refused there. */
	if (m->type == '5')
		return 0;
	return take(arg, m->name, m->type == '0' || m->type == '7', m->data, m->size, NULL);
}

/* A member, checksum list or archive, never through a symlink. */
static int read_file(const char *path, size_t max, unsigned char **out, size_t *len)
{
	char *b;
	int r = fileio_read_flags(path, O_NOFOLLOW, max, &b, len, NULL, 0);

	*out = (unsigned char *)b;
	return r;
}

/* xz -dc: the archive's tar stream, at most IMEX_MAX_ARCHIVE bytes. */
static int decompress(const char *path, unsigned char **out, size_t *len, char *err,
		      size_t errlen)
{
	size_t cap = 1 << 20, n = 0;
	unsigned char *b = malloc(cap);
	int pfd[2], status, r = 0;
	pid_t pid;

	if (!b || pipe2(pfd, O_CLOEXEC) < 0) {
		free(b);
		snprintf(err, errlen, "%s: %s", path, strerror(b ? errno : ENOMEM));
		return -ENOMEM;
	}
	if ((pid = fork()) == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		execlp("xz", "xz", "-dc", "--", path, (char *)NULL);
		fprintf(stderr, "exec xz: %s (install xz-utils)\n", strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	while (pid > 0) {
		ssize_t got;

		if (n == cap) {
			unsigned char *nb = cap < IMEX_MAX_ARCHIVE ? realloc(b, cap * 2) : NULL;
			if (!nb) {
				r = -EFBIG;
				break;
			}
			b = nb;
			cap *= 2;
		}
		got = read(pfd[0], b + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(pfd[0]);
	if (pid < 0)
		r = -errno;
	else if (r < 0)
		kill(pid, SIGKILL);
	if (pid > 0 && (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
			WEXITSTATUS(status)) && r == 0)
		r = -EINVAL;
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", path, r == -EFBIG ? "larger than 256 MiB unpacked"
			 : "xz -dc failed (not an xz archive, or xz missing)");
		free(b);
		return r;
	}
	*out = b;
	*len = n;
	return 0;
}

static int walk_dir(struct collect *c, const char *root, const char *rel, int depth)
{
	char path[PATH_MAX], sub[1024];
	struct dirent *e;
	DIR *d;
	int r = 0;

	snprintf(path, sizeof(path), "%s%s%s", root, *rel ? "/" : "", rel);
	if (depth > MAX_DEPTH || !(d = opendir(path)))
		return depth > MAX_DEPTH ? 0 : -errno;
	while (r == 0 && (e = readdir(d))) {
		struct stat st;
		unsigned char *data;
		size_t len;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		snprintf(path, sizeof(path), "%s/%s", root, sub);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			r = walk_dir(c, root, sub, depth + 1);
		} else if (wanted_index(sub) >= 0) {
			if (!S_ISREG(st.st_mode)) {
				r = take(c, sub, false, NULL, 0, NULL);
			} else if ((r = read_file(path, IMEX_MAX_MEMBER, &data, &len)) < 0) {
				snprintf(c->err, sizeof(c->err), "%s: %s", path, strerror(-r));
			} else {
				r = take(c, sub, true, data, len, data);
			}
		}
	}
	closedir(d);
	return r;
}

static void release(struct collect *c)
{
	for (size_t i = 0; i < NWANTED; i++)
		free(c->f[i].owned);
}

/* The checksum list: the flag's, else beside the archive. */
static int load_sums(const struct state *s, bool is_dir, struct imex_sums *sums, char *err,
		     size_t errlen)
{
	char path[PATH_MAX], why[128];
	unsigned char *text;
	size_t len;
	int r;

	if (s->imex.checksums[0])
		snprintf(path, sizeof(path), "%s", s->imex.checksums);
	else
		snprintf(path, sizeof(path), is_dir ? "%s/SHA256SUMS" : "%s.sha256", s->imex.archive);
	if ((r = read_file(path, 1 << 20, &text, &len)) < 0) {
		snprintf(err, errlen, "checksum list %s: %s (give --imex-checksums)", path,
			 strerror(-r));
		return r;
	}
	r = imex_sums_parse((const char *)text, sums, why, sizeof(why));
	free(text);
	if (r < 0)
		snprintf(err, errlen, "checksum list %s: %s", path, why);
	return r;
}

static int verify(struct collect *c, const struct imex_sums *sums, bool archive_vouched)
{
	char got[65];

	for (size_t i = 0; i < NWANTED; i++) {
		const char *want;

		if (!c->f[i].path[0]) {
			if (wanted[i].required) {
				snprintf(c->err, sizeof(c->err), "no %s in the archive", wanted[i].base);
				return -ENOENT;
			}
			continue;
		}
		if (archive_vouched)
			continue;
		if (!(want = imex_sums_find(sums, c->f[i].path))) {
			snprintf(c->err, sizeof(c->err), "%s: no checksum in the list", c->f[i].path);
			return -EPERM;
		}
		sha256_hex(c->f[i].data, c->f[i].len, got);
		if (strcmp(got, want)) {
			snprintf(c->err, sizeof(c->err), "%s: sha256 %s, the list says %s",
				 c->f[i].path, got, want);
			return -EPERM;
		}
	}
	return 0;
}

/* archive: a delivered archive (--imex-archive) with its checksum list,
 * or the IMEXDownload cache with pin (its one entry, the archive). */
static int stage_from(struct sim_ctx *ctx, const struct state *s, const char *archive,
		      const struct imex_sums *pin, struct sim_errors *errs)
{
	struct collect c;
	struct imex_sums sums;
	struct stat st;
	unsigned char *buf = NULL;
	size_t len = 0;
	bool vouched = false;
	char path[512], shim[PATH_MAX];
	int r;

	memset(&c, 0, sizeof(c));
	if (stat(archive, &st) < 0) {
		r = -errno;
		sim_error(errs, "archive", "%s: %s", archive, strerror(-r));
		return r;
	}
	if (pin)
		sums = *pin;
	else if ((r = load_sums(s, S_ISDIR(st.st_mode), &sums, c.err, sizeof(c.err))) < 0)
		goto out;
	if (S_ISDIR(st.st_mode)) {
		r = walk_dir(&c, archive, "", 0);
		if (r < 0 && !c.err[0])
			snprintf(c.err, sizeof(c.err), "%s: %s", archive, strerror(-r));
	} else {
		const char *n = archive, *want;
		size_t l = strlen(n);
		bool xz = l > 3 && !strcmp(n + l - 3, ".xz");
		unsigned char *raw = NULL;
		size_t rawlen = 0;
		char got[65];

		/* The archive file itself listed: its digest vouches for all. */
		if ((r = read_file(n, IMEX_MAX_ARCHIVE, &raw, &rawlen)) < 0) {
			snprintf(c.err, sizeof(c.err), "%s: %s", n, strerror(-r));
			goto out;
		}
		if ((want = imex_sums_find(&sums, base(n)))) {
			sha256_hex(raw, rawlen, got);
			if (strcmp(got, want)) {
				snprintf(c.err, sizeof(c.err), "%s: sha256 %s, the list says %s", n, got,
					 want);
				free(raw);
				r = -EPERM;
				goto out;
			}
			vouched = true;
		}
		if (xz) {
			free(raw);
			r = decompress(n, &buf, &len, c.err, sizeof(c.err));
		} else {
			buf = raw, len = rawlen;
		}
		if (r == 0)
			r = tar_walk(buf, len, take_member, &c, c.err, sizeof(c.err));
	}
	if (r == 0)
		r = verify(&c, &sums, vouched);
	if (r < 0)
		goto out;
	/* Verified: publish, the shim last. */
	for (size_t i = 0; i < NWANTED && r == 0; i++) {
		if (!c.f[i].path[0])
			continue;
		snprintf(path, sizeof(path), "%s%s", s->mock_root, wanted[i].dest);
		if ((r = host_write(&ctx->host, path, c.f[i].data, c.f[i].len, wanted[i].mode)) < 0)
			snprintf(c.err, sizeof(c.err), "%s: write: %s", path, strerror(-r));
	}
	if (r == 0) {
		snprintf(shim, sizeof(shim), "%s/" SHIM_BINARY, ctx->bindir);
		snprintf(path, sizeof(path), "%s" SHIM_DEST, s->mock_root);
		if ((r = host_copy_in(&ctx->host, shim, path, 0755)) < 0)
			snprintf(c.err, sizeof(c.err), "%s -> %s: %s", shim, path, strerror(-r));
	}
	if (r == 0)
		log_info("IMEX userspace staged from %s%s", archive,
			 vouched ? " (archive digest verified)" : " (file digests verified)");
out:
	if (r < 0)
		sim_error(errs, "archive", "%s: %s", archive, c.err[0] ? c.err : strerror(-r));
	release(&c);
	free(buf);
	return r;
}

int imex_stage_archive(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct imex_sums pin = { .n = 1 };
	char cached[4200];

	if (s->imex.archive[0])
		return stage_from(ctx, s, s->imex.archive, NULL, errs);
	if (!s->imex.download || imex_fetch_cached(ctx, s, cached, sizeof(cached)) <= 0)
		return 0;	/* no IMEX userspace; the node stays ready */
	snprintf(pin.e[0].hex, sizeof(pin.e[0].hex), "%s", s->imex.download_sha256);
	snprintf(pin.e[0].name, sizeof(pin.e[0].name), "archive.tar.xz");
	return stage_from(ctx, s, cached, &pin, errs);
}
