/* nvidia-smi in the driver root: a real binary (state->nvidia_smi_src, from
 * --nvidia-smi, $MOKKA_NVIDIA_SMI or the usual places) given the run path
 * $ORIGIN/../lib64 with patchelf, so it dlopens the mock libnvidia-ml.so.1
 * beside it without LD_LIBRARY_PATH (NVML.md §2.1).  Patched in a private
 * temporary copy, then written atomically (unchanged bytes: no rewrite).
 * Without a source nothing is staged and the simulator is not ready: a
 * fake nvidia-smi would hide the gap from every consumer. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio/fileio.h"
#include "ipc/log.h"
#include "workers/gpudriver/gpudriver.h"

#define RUNPATH "$ORIGIN/../lib64"

extern char **environ;

bool gd_nvidia_smi_source(const struct state *s, char *reason, size_t len)
{
	struct stat st;

	if (!s->nvidia_smi_src[0]) {
		snprintf(reason, len, "no nvidia-smi source: none given (--nvidia-smi, "
			 "$MOKKA_NVIDIA_SMI) and none at %s/nvidia-smi or /usr/bin/nvidia-smi",
			 MOKKA_PKGDATADIR);
		return false;
	}
	if (stat(s->nvidia_smi_src, &st) < 0) {
		snprintf(reason, len, "no nvidia-smi source: %s: %s", s->nvidia_smi_src,
			 strerror(errno));
		return false;
	}
	if (!S_ISREG(st.st_mode) || access(s->nvidia_smi_src, R_OK) < 0) {
		snprintf(reason, len, "no nvidia-smi source: %s: not a readable file",
			 s->nvidia_smi_src);
		return false;
	}
	return true;
}

static int copy_file(const char *src, const char *dst)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC), out, r = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, buf, (size_t)n) != n) {
			r = n < 0 ? -errno : -EIO;
			break;
		}
	}
	if (close(out) < 0 && !r)
		r = -errno;
	close(in);
	return r;
}

/* patchelf --set-rpath writes DT_RUNPATH (not the legacy DT_RPATH). */
static int run_patchelf(const char *file, char *why, size_t len)
{
	char *argv[] = { "patchelf", "--set-rpath", RUNPATH, (char *)file, NULL };
	pid_t pid;
	int st, r;

	r = posix_spawnp(&pid, "patchelf", NULL, NULL, argv, environ);
	if (r != 0) {
		snprintf(why, len, "run patchelf: %s%s", strerror(r),
			 r == ENOENT ? " (install the patchelf package)" : "");
		return -r;
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			snprintf(why, len, "wait for patchelf: %s", strerror(errno));
			return -errno;
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		snprintf(why, len, "patchelf --set-rpath '%s' failed (%s %d; not an ELF binary?)",
			 RUNPATH, WIFEXITED(st) ? "exit" : "signal",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		return -EIO;
	}
	return 0;
}

/* The patched binary of the last Stage, by its source's identity: a
 * pass whose source did not change writes the same bytes again (host_write
 * skips them when identical) without a copy and a patchelf run, the bulk
 * of a one-GPU profile edit's cost (issue 16). */
static struct {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	char *data;
	size_t len;
} memo;

static bool memo_fresh(const struct stat *st)
{
	return memo.data && memo.dev == st->st_dev && memo.ino == st->st_ino &&
	       memo.size == st->st_size && memo.mtime.tv_sec == st->st_mtim.tv_sec &&
	       memo.mtime.tv_nsec == st->st_mtim.tv_nsec && memo.ctime.tv_sec == st->st_ctim.tv_sec &&
	       memo.ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static void memo_keep(const struct stat *st, const char *patched)
{
	free(memo.data);
	memo.data = NULL;
	if (fileio_read(patched, HOST_COPY_MAX, &memo.data, &memo.len, NULL, 0) < 0)
		return;
	memo.dev = st->st_dev;
	memo.ino = st->st_ino;
	memo.size = st->st_size;
	memo.mtime = st->st_mtim;
	memo.ctime = st->st_ctim;
}

int gd_stage_nvidia_smi(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c,
			struct sim_errors *errs)
{
	struct stat src;
	bool have_src;
	const char *tmpbase = getenv("TMPDIR");
	char reason[512], dir[4096], tmp[4200], path[512], why[512] = "";
	int r;

	if (!gd_nvidia_smi_source(s, reason, sizeof(reason))) {
		log_warn("gpudriver: %s; not staging %s%s", reason, s->mock_root, GD_SMI);
		return 0;
	}
	if ((r = host_mock_path(s->mock_root, path, sizeof(path), GD_SMI)) < 0)
		return r;
	/* Its identity before the copy: a source replaced meanwhile is
	 * copied again next pass. */
	have_src = stat(s->nvidia_smi_src, &src) == 0;
	if (have_src && memo_fresh(&src)) {
		if ((r = host_write(&ctx->host, path, memo.data, memo.len, 0755)) < 0)
			sim_error(errs, path, "from %s: write: %s", s->nvidia_smi_src, strerror(-r));
		return r;
	}
	snprintf(dir, sizeof(dir), "%s/mokka-nvidia-smi.XXXXXX",
		 tmpbase && *tmpbase ? tmpbase : "/tmp");
	if (!mkdtemp(dir)) {
		r = -errno;
		sim_error(errs, "nvidia-smi", "%s: mkdtemp: %s", dir, strerror(-r));
		return r;
	}
	snprintf(tmp, sizeof(tmp), "%s/nvidia-smi", dir);
	if ((r = copy_file(s->nvidia_smi_src, tmp)) < 0)
		snprintf(why, sizeof(why), "copy to %s: %s", tmp, strerror(-r));
	else if ((r = run_patchelf(tmp, why, sizeof(why))) == 0 &&
		 (r = host_copy_in(&ctx->host, tmp, path, 0755)) < 0)
		snprintf(why, sizeof(why), "write: %s", strerror(-r));
	if (r < 0)
		sim_error(errs, path, "from %s: %s", s->nvidia_smi_src, why);
	else if (have_src)
		memo_keep(&src, tmp);
	unlink(tmp);
	rmdir(dir);
	return r;
}
