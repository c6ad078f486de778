/* Apply: the NFD local-source feature file.  NFD turns each "key=value"
 * line into the label feature.node.kubernetes.io/<key>=<value>, so keys
 * and values must be valid label names/values or NFD drops the line.
 *
 * A file of that name that was there before us (the reference's mock left
 * one, or an operator wrote it) is kept aside, content and mode, under
 * R/state and put back at Revoke: while Mokka runs the labels describe its
 * GPUs, as on a real node, and teardown leaves the host as it found it.
 * Anything but a regular file there is left alone and refused. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "ipc/log.h"
#include "shims/nvml/pcibind.h"
#include "workers/manifest.h"
#include "workers/pcibus/pcibus.h"

#define NFD_KEPT "/state/pcibus.nfd-foreign"	/* under the mock root */
#define NFD_MAX (1u << 20)

#define LABEL_VALUE_MAX 63

/* Make s a label value: [A-Za-z0-9._-], alphanumeric at both ends, at
 * most 63 characters ("NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3").
 * Empty when nothing valid is left. */
static void label_value(char *out, size_t len, const char *s)
{
	size_t n = 0;

	while (*s && !isalnum((unsigned char)*s))
		s++;
	for (; *s && n + 1 < len && n < LABEL_VALUE_MAX; s++) {
		unsigned char c = (unsigned char)*s;
		out[n++] = isalnum(c) || c == '.' || c == '_' || c == '-' ? (char)c : '-';
	}
	while (n && !isalnum((unsigned char)out[n - 1]))
		n--;
	out[n] = '\0';
}

/* Distinct device ids in device order, dash-joined: "2330-20b0". */
static void device_ids(const struct state *s, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (int i = 0; i < s->num_devices; i++) {
		size_t add = off ? 5 : 4;
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = s->devices[j].device_id == s->devices[i].device_id;
		if (seen || off + add >= len || off + add > LABEL_VALUE_MAX)
			continue;
		off += (size_t)snprintf(out + off, len - off, "%s%04x", off ? "-" : "",
					s->devices[i].device_id);
	}
}

struct feature {
	const char *key;
	void (*value)(const struct state *s, char *out, size_t len);
};

/* GPUs the nvidia driver holds (nfd_render counts them from mokka-pcifs's
 * binding file: one on vfio-pci is not the driver's). */
static int gpus_held;

static void value_count(const struct state *s, char *out, size_t len)
{
	snprintf(out, len, "%d", gpus_held);
}

static int count_held(const struct host *h, const struct state *s)
{
	char rel[512];
	FILE *f = NULL;
	int n = 0;

	/* No binding file (or one refused): the nvidia driver holds them all. */
	if (snprintf(rel, sizeof(rel), "%s" PCIBIND_FILE, s->mock_root) < (int)sizeof(rel))
		f = host_fopen(h, rel);
	for (int i = 0; i < s->num_devices; i++)
		n += !pcibind_detached_in(f, s->devices[i].bus_id);
	if (f)
		fclose(f);
	return n;
}

static void value_driver(const struct state *s, char *out, size_t len)
{
	label_value(out, len, s->driver_version);
}

static void value_cuda(const struct state *s, char *out, size_t len)
{
	label_value(out, len, s->cuda_version);
}

static void value_product(const struct state *s, char *out, size_t len)
{
	label_value(out, len, s->devices[0].name);
}

static const struct feature features[] = {
	{ "mokka.gpu.count", value_count },
	{ "mokka.gpu.driver-version", value_driver },
	{ "mokka.gpu.cuda-version", value_cuda },
	{ "mokka.gpu.device-ids", device_ids },
	{ "mokka.gpu.product", value_product },
};

/* R/state's copy of a foreign features file, relative to the root. */
static int kept_rel(const struct host *h, char *rel, size_t len)
{
	return snprintf(rel, len, "%s" NFD_KEPT, h->mock_root) >= (int)len ? -ENAMETOOLONG : 0;
}

static int read_small(int fd, char **buf, size_t *len)
{
	size_t cap = 4096;
	ssize_t n;

	*len = 0;
	if (!(*buf = malloc(cap)))
		return -ENOMEM;
	while ((n = read(fd, *buf + *len, cap - *len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || cap >= NFD_MAX) {
			free(*buf);
			return n < 0 ? -errno : -EFBIG;
		}
		*len += (size_t)n;
		if (*len == cap) {
			char *m = realloc(*buf, cap *= 2);
			if (!m) {
				free(*buf);
				return -ENOMEM;
			}
			*buf = m;
		}
	}
	return 0;
}

/* Whether leaf is in dirfd (links included): 1, 0, or -errno. */
static int present_at(int dirfd, const char *leaf)
{
	struct stat st;

	if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	return errno == ENOENT ? 0 : -errno;
}

/* The foreign file's bytes and mode, read through its directory's fd
 * opened beneath the root: a link on the way is refused and named (a
 * root-only file outside must never be copied into the root). */
static int read_foreign(struct host *h, int rootfd, const char *fphys, char **buf, size_t *len,
			mode_t *mode, struct sim_errors *errs)
{
	const char *leaf;
	struct stat st;
	int dfd, fd, r;

	if ((dfd = beneath_parent(rootfd, fphys, &leaf)) < 0)
		return dfd == -ENOENT ? 0 : host_refused(h->root, rootfd, fphys, dfd);
	if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = errno == ENOENT ? 0 : -errno;
		close(dfd);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		close(dfd);
		sim_error(errs, "nfd", "pcibus: %s: exists and is not a regular file: left alone",
			  NFD_FEATURES_FILE);
		return -EEXIST;
	}
	fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	r = fd < 0 ? -errno : 0;
	close(dfd);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		r = -EEXIST;	/* swapped since the fstatat: left alone */
	else
		r = read_small(fd, buf, len);
	close(fd);
	*mode = st.st_mode & 07777;
	return r < 0 ? r : 1;
}

/* A features file that is not ours (not in the last manifest, none kept
 * yet): copied to R/state (recorded, so teardown removes the copy once
 * nfd_revoke has put it back). */
static int keep_foreign(struct host *h, struct sim_errors *errs)
{
	char rel[512], fphys[PATH_MAX], kphys[PATH_MAX], *buf = NULL;
	const char *kleaf;
	size_t len = 0;
	mode_t mode = 0644;
	int rootfd, kdir, r;

	if ((r = kept_rel(h, rel, sizeof(rel))) < 0 ||
	    (r = host_phys(h, NFD_FEATURES_FILE, fphys, sizeof(fphys))) < 0 ||
	    (r = host_phys(h, rel, kphys, sizeof(kphys))) < 0)
		return r;
	if ((rootfd = beneath_root(h->root)) < 0)
		return rootfd;
	/* Kept by an earlier pass: still ours to remove after Revoke. */
	if ((kdir = beneath_parent(rootfd, kphys, &kleaf)) >= 0) {
		r = present_at(kdir, kleaf);
		close(kdir);
	} else {
		r = kdir == -ENOENT ? 0 : host_refused(h->root, rootfd, kphys, kdir);
	}
	if (r > 0) {
		if (h->own)
			manifest_add(h->own, rel, 'f');
		r = 0;
	} else if (r == 0 && !(h->prev && manifest_has(h->prev, NFD_FEATURES_FILE))) {
		r = read_foreign(h, rootfd, fphys, &buf, &len, &mode, errs);
	}
	close(rootfd);
	if (r <= 0)
		return r;
	r = host_write(h, rel, buf, len, mode);
	free(buf);
	if (r == 0)
		log_info("%s: a features file that is not Mokka's: kept in %s, put back at "
			 "teardown", NFD_FEATURES_FILE, rel);
	return r;
}

/* The kept copy renamed back over the features file, each reached through
 * its directory's fd opened beneath the root (no check-then-use window): a
 * link on either way, or at either end, is refused and named, never
 * followed nor replaced.  Nothing kept, or no features directory: 0. */
static int put_back(const struct host *h, const char *kept_rel)
{
	char kphys[PATH_MAX], fphys[PATH_MAX];
	const char *kleaf, *fleaf;
	int rootfd, kdir = -1, fdir = -1, r;
	struct stat st;

	if ((r = host_phys(h, kept_rel, kphys, sizeof(kphys))) < 0 ||
	    (r = host_phys(h, NFD_FEATURES_FILE, fphys, sizeof(fphys))) < 0)
		return r;
	if ((rootfd = beneath_root(h->root)) < 0)
		return rootfd;
	if ((kdir = beneath_parent(rootfd, kphys, &kleaf)) < 0)
		r = kdir == -ENOENT ? 0 : host_refused(h->root, rootfd, kphys, kdir);
	else if (fstatat(kdir, kleaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
		r = errno == ENOENT ? 0 : -errno;
	else if (!S_ISREG(st.st_mode))
		r = host_refused(h->root, rootfd, kphys, S_ISLNK(st.st_mode) ? -ELOOP : -EINVAL);
	else if ((fdir = beneath_parent(rootfd, fphys, &fleaf)) < 0)
		r = fdir == -ENOENT ? 0 : host_refused(h->root, rootfd, fphys, fdir);
	else if (fstatat(fdir, fleaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		r = host_refused(h->root, rootfd, fphys, -ELOOP);
	else if (renameat(kdir, kleaf, fdir, fleaf) < 0)
		r = errno == ENOENT ? 0 : -errno;
	if (kdir >= 0)
		close(kdir);
	if (fdir >= 0)
		close(fdir);
	close(rootfd);
	return r;
}

int nfd_revoke(struct sim_ctx *ctx, struct sim_errors *errs)
{
	char rel[512];
	int r = kept_rel(&ctx->host, rel, sizeof(rel));

	if (r == 0)
		r = put_back(&ctx->host, rel);
	if (r < 0)
		sim_error(errs, "nfd", "pcibus: putting back %s from %s: %s", NFD_FEATURES_FILE,
			  rel, r == -ELOOP ? "a symbolic link on the way (refused, logged)"
					   : strerror(-r));
	return r;
}

int nfd_render(struct host *h, const struct state *s, struct sim_errors *errs)
{
	char doc[2048], value[128];
	size_t off;
	int r;

	/* No GPUs: no file, so NFD drops pci-10de.present instead of
	 * claiming a device that is not there. */
	if (s->num_devices <= 0)
		return 0;
	/* Line one stays exactly what the reference writes; consumers grep it. */
	off = (size_t)snprintf(doc, sizeof(doc), "pci-10de.present=true\n");
	gpus_held = count_held(h, s);
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		features[i].value(s, value, sizeof(value));
		if (value[0] && off < sizeof(doc))
			off += (size_t)snprintf(doc + off, sizeof(doc) - off, "%s=%s\n",
						features[i].key, value);
	}
	/* Other vendors' accelerators: pci-<vendor>.present, as NFD's own
	 * PCI source would label them (each vendor once). */
	for (int i = 0; i < s->pci.num_fns && off < sizeof(doc); i++) {
		const struct state_pci_fn *f = &s->pci.fns[i];
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = s->pci.fns[j].kind == STATE_PCI_ACCEL && s->pci.fns[j].vendor == f->vendor;
		if (f->kind == STATE_PCI_ACCEL && !seen)
			off += (size_t)snprintf(doc + off, sizeof(doc) - off, "pci-%04x.present=true\n",
						f->vendor);
	}
	if (off >= sizeof(doc))
		r = -EOVERFLOW;
	else if ((r = keep_foreign(h, errs)) == 0)
		r = host_write(h, NFD_FEATURES_FILE, doc, off, 0644);
	if (r == -EEXIST)
		return r;
	if (r < 0)
		sim_error(errs, "nfd", "pcibus: %s: write: %s", NFD_FEATURES_FILE, strerror(-r));
	return r;
}
