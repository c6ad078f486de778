/* The NVIDIA Container Toolkit the nvidia handler runs (SURFACES.md §2.1):
 * the binaries copied from the toolkit directory on this machine into
 * /usr/local/nvml-mock/toolkit, its runtime config (CDI mode), and links
 * from /usr/bin and /etc/nvidia-container-runtime made only where nothing
 * is.  None of it is recorded: containers created through the handler
 * still exec the runtime after Mokka stops, so it is never removed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/cri/cri.h"

static const char *const binaries[] = {
	"nvidia-container-runtime", "nvidia-ctk", "nvidia-cdi-hook",
};

static const char runtime_config[] =
	"# Written by Mokka (mokka-worker-cri): the runtime injects CDI devices.\n"
	"[nvidia-container-runtime]\n"
	"mode = \"cdi\"\n"
	"\n"
	"[nvidia-container-runtime.modes.cdi]\n"
	"default-kind = \"" CRI_KIND "\"\n"
	"spec-dirs = [\"/var/run/cdi\", \"/etc/cdi\"]\n";

const char *cri_toolkit_source(char *buf, size_t len)
{
	const char *env = getenv("MOKKA_CONTAINER_TOOLKIT_DIR");

	snprintf(buf, len, "%s", env && *env ? env : MOKKA_LIBEXECDIR "/container-toolkit");
	return buf;
}

/* The four package paths and what Mokka's own link there points at. */
static void package_path(size_t i, char *path, size_t plen, char *target, size_t tlen)
{
	if (i < sizeof(binaries) / sizeof(binaries[0])) {
		snprintf(path, plen, "/usr/bin/%s", binaries[i]);
		snprintf(target, tlen, "%s/%s", CRI_TOOLKIT_DIR, binaries[i]);
	} else {
		snprintf(path, plen, "%s", CRI_RUNTIME_CONFIG_LINK);
		snprintf(target, tlen, "%s/config.toml", CRI_TOOLKIT_DIR);
	}
}

#define NPACKAGE (sizeof(binaries) / sizeof(binaries[0]) + 1)

int cri_foreign_toolkit(const struct host *h, char *who, size_t len)
{
	for (size_t i = 0; i < NPACKAGE; i++) {
		char path[256], want[256], res[4096], full[8192], cur[4096];
		struct stat st;
		ssize_t n;
		int r;

		package_path(i, path, sizeof(path), want, sizeof(want));
		/* The directory resolved (/usr/bin may be a link), the leaf as it is. */
		if ((r = cri_resolve_parent(h, path, res, sizeof(res))) < 0 ||
		    (r = host_path(h, res, full, sizeof(full))) < 0)
			return r;
		if (lstat(full, &st) < 0)
			continue;
		n = S_ISLNK(st.st_mode) ? readlink(full, cur, sizeof(cur) - 1) : -1;
		if (n >= 0) {
			cur[n] = '\0';
			if (strcmp(cur, want) == 0)
				continue;	/* ours */
		}
		snprintf(who, len, "%s", path);
		return 1;
	}
	return 0;
}

static int install_file(const struct host *h, const char *src, const char *name, mode_t mode,
			struct sim_errors *errs)
{
	struct host bare = *h;
	char path[512], res[4096];
	int r;

	bare.own = NULL;	/* never removed */
	bare.prev = NULL;
	snprintf(path, sizeof(path), "%s/%s", CRI_TOOLKIT_DIR, name);
	if ((r = cri_resolve_parent(h, path, res, sizeof(res))) < 0 ||
	    (r = src ? host_copy_in(&bare, src, res, mode) :
		 host_write(&bare, res, runtime_config, sizeof(runtime_config) - 1, mode)) < 0)
		sim_error(errs, path, "install%s%s: %s", src ? " from " : "", src ? src : "",
			  strerror(-r));
	return r;
}

/* The link at path -> target, only where nothing is. */
static int link_if_absent(const struct host *h, const char *path, const char *target,
			  struct sim_errors *errs)
{
	struct host bare = *h;
	char res[4096], full[8192];
	struct stat st;
	int r;

	bare.own = NULL;
	bare.prev = NULL;
	if ((r = cri_resolve_parent(h, path, res, sizeof(res))) < 0 ||
	    (r = host_path(h, res, full, sizeof(full))) < 0) {
		sim_error(errs, path, "resolve: %s", strerror(-r));
		return r;
	}
	if (lstat(full, &st) == 0)
		return 0;
	if ((r = host_symlink(&bare, target, res)) < 0)
		sim_error(errs, path, "symlink -> %s: %s", target, strerror(-r));
	return r;
}

int cri_toolkit_install(const struct host *h, bool *installed, struct sim_errors *errs)
{
	char dir[4096], src[4400], path[256], target[256];
	int first = 0, r;

	*installed = false;
	cri_toolkit_source(dir, sizeof(dir));
	snprintf(src, sizeof(src), "%s/%s", dir, binaries[0]);
	if (access(src, X_OK) < 0) {
		log_info("cri: no NVIDIA Container Toolkit in %s (set MOKKA_CONTAINER_TOOLKIT_DIR): "
			 "the nvidia handler's binary %s is not installed", dir, CRI_RUNTIME_PATH);
		return 0;
	}
	/* Binaries first, then the config they read, then the links that
	 * make them visible (specs naming the hook come after all this). */
	for (size_t i = 0; i < sizeof(binaries) / sizeof(binaries[0]); i++) {
		snprintf(src, sizeof(src), "%s/%s", dir, binaries[i]);
		if (access(src, X_OK) == 0 && (r = install_file(h, src, binaries[i], 0755, errs)) < 0)
			first = first ? first : r;
	}
	if ((r = install_file(h, NULL, "config.toml", 0644, errs)) < 0)
		first = first ? first : r;
	if (first)
		return first;
	for (size_t i = 0; i < NPACKAGE; i++) {
		package_path(i, path, sizeof(path), target, sizeof(target));
		if (i < sizeof(binaries) / sizeof(binaries[0])) {
			snprintf(src, sizeof(src), "%s/%s", dir, binaries[i]);
			if (access(src, X_OK) < 0)
				continue;
		}
		if ((r = link_if_absent(h, path, target, errs)) < 0)
			first = first ? first : r;
	}
	*installed = first == 0;
	return first;
}
