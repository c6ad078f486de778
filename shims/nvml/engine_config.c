/* Mock NVML engine: where the files are (relative to this library, so a
 * bind-mounted driver root works without environment), loading them, and
 * the device list (boot merge, identity, visibility). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* dladdr */
#endif
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_internal.h"
#include "pcibind.h"
#include "fileio/fileio.h"

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* Textual parent ("/a/b/c" -> "/a/b"), so symlinked directories keep
 * their logical layout; falls back to appending "/..". */
static void parent_dir(char *path, size_t size)
{
	char *slash = strrchr(path, '/');

	if (slash && slash != path && strcmp(slash, "/..") && strcmp(slash, "/."))
		*slash = 0;
	else if (slash == path)
		path[1] = 0;
	else
		strncat(path, "/..", size - strlen(path) - 1);
}

static int set_path(char *dst, const char *fmt, const char *a, const char *b)
{
	int n = snprintf(dst, PATH_MAX, fmt, a, b);

	if (n < 0 || n >= PATH_MAX) {
		eng_debug("path too long: %s%s", a, b);
		return ENG_ERROR_UNKNOWN;
	}
	return ENG_SUCCESS;
}

int eng_locate_files(void)
{
	char root[PATH_MAX] = "", dir[PATH_MAX];
	const char *v;
	Dl_info info;
	int rc = ENG_SUCCESS;

	/* <root>/usr/lib64/libnvidia-ml.so.1: the driver root is two up. */
	if (dladdr((void *)engine_init, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
		snprintf(eng.lib_dir, sizeof(eng.lib_dir), "%s", info.dli_fname);
		parent_dir(eng.lib_dir, sizeof(eng.lib_dir));
		snprintf(root, sizeof(root), "%s", eng.lib_dir);
		parent_dir(root, sizeof(root));
		parent_dir(root, sizeof(root));
	}
	if ((v = env("MOCK_NVML_CONFIG"))) {
		rc = set_path(eng.config_path, "%s%s", v, "");
	} else {
		if (root[0])
			rc = set_path(eng.config_path, "%s%s", root, "/config/config.yaml");
		if (!root[0] || access(eng.config_path, F_OK) != 0)
			rc = set_path(eng.config_path, "%s%s", "/etc/nvml-mock/config.yaml", "");
	}
	snprintf(dir, sizeof(dir), "%s", eng.config_path);
	parent_dir(dir, sizeof(dir));
	if (rc == ENG_SUCCESS && (v = env("MOCK_NVML_OVERRIDES")))
		rc = set_path(eng.overrides_path, "%s%s", v, "");
	else if (rc == ENG_SUCCESS &&
		 ovr_path_beside(eng.overrides_path, sizeof(eng.overrides_path), dir) < 0) {
		eng_debug("path too long: %s/%s", dir, OVR_DOC_NAME);
		rc = ENG_ERROR_UNKNOWN;
	}
	if (rc == ENG_SUCCESS)
		rc = (v = env("MOCK_TOPOLOGY_CONFIG")) ? set_path(eng.topology_path, "%s%s", v, "")
			: set_path(eng.topology_path, "%s%s", dir, "/topology.yaml");
	if (rc == ENG_SUCCESS && (v = env("MOCK_FABRICMANAGER_STATE_DIR"))) {
		eng.fm_dir_from_env = true;
		rc = set_path(eng.fm_dir, "%s%s", v, "");
	} else if (rc == ENG_SUCCESS && root[0]) {
		parent_dir(root, sizeof(root));	/* R/driver -> R/fabric-state */
		rc = set_path(eng.fm_dir, "%s%s", root, "/fabric-state");
	}
	return rc;
}

struct yl_node *eng_load_yaml(const char *path, bool *missing)
{
	struct yl_error err;
	struct yl_node *doc;
	char *buf, why[300];
	size_t len;
	int r = fileio_read(path, YL_MAX_INPUT, &buf, &len, why, sizeof(why));

	*missing = r == -ENOENT;
	if (r < 0) {
		eng_debug("%s", why);
		return NULL;
	}
	doc = yl_parse(buf, len, &err);
	if (!doc) {
		yl_error_format(&err, why, sizeof(why));
		eng_debug("%s:%s", path, why);
	}
	free(buf);
	return doc;
}

bool eng_parse_bdf(const char *s, unsigned long *domain, unsigned *bus,
		   unsigned *dev, unsigned *fn)
{
	unsigned long part[3];
	int colons = 0;
	char *end;

	for (const char *c = s; *c; c++)
		colons += *c == ':';
	if (colons < 1 || colons > 2)
		return false;
	*domain = 0;
	for (int i = 0; i <= colons; i++) {
		if (!isxdigit((unsigned char)*s))
			return false;
		part[i] = strtoul(s, &end, 16);
		if (end - s > (i == 0 && colons == 2 ? 8 : 2))
			return false;
		if (i < colons && *end != ':')
			return false;
		s = end + 1;
	}
	if (*end != '.' || end[1] < '0' || end[1] > '7' || end[2])
		return false;
	if (colons == 2)
		*domain = part[0];
	*bus = (unsigned)part[colons - 1];
	*dev = (unsigned)part[colons];
	*fn = (unsigned)(end[1] - '0');
	return *dev < 32;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;	/* field separator */
}

/* A profile without a uuid gets the one the supervisor's profile compiler
 * derives (profile/compile_devices.c), so NVML and the staged surfaces
 * (CDI, procfs) name the GPU alike. */
static void default_uuid(struct mdev *d, const char *bdf_lower)
{
	const char *name = yl_text(yl_get(d->base, "name"));
	const char *serial = yl_text(yl_get(d->base, "serial"));
	uint64_t id = 0, h[2] = { 0xcbf29ce484222325ull, 0x84222325cbf29ce4ull };
	unsigned vendor, device;
	char idx[48];

	yl_u64(yl_path(d->base, "pci.device_id"), &id);
	vendor = id ? (unsigned)(id & 0xffff) : 0x10de;
	device = (unsigned)(id >> 16 & 0xffff);
	snprintf(idx, sizeof(idx), "%u:%04x:%04x", d->prof_index, device, vendor);
	for (int i = 0; i < 2; i++) {
		h[i] = fnv1a(h[i], name ? name : "");
		h[i] = fnv1a(h[i], serial ? serial : "");
		h[i] = fnv1a(h[i], bdf_lower);
		h[i] = fnv1a(h[i], idx);
	}
	snprintf(d->uuid, sizeof(d->uuid), "GPU-%08x-%04x-%04x-%04x-%012llx",
		 (unsigned)(h[0] >> 32), (unsigned)(h[0] >> 16) & 0xffff,
		 (unsigned)h[0] & 0xffff, (unsigned)(h[1] >> 48),
		 (unsigned long long)(h[1] & 0xffffffffffffull));
}

static int device_identity(struct mdev *d, const struct yl_node *entry)
{
	const char *bus = yl_text(yl_path(d->base, "pci.bus_id"));
	const char *uuid = yl_text(yl_get(entry, "uuid"));
	unsigned long dom;
	unsigned b, dv, fn;
	char lower[32];

	if (!bus || !eng_parse_bdf(bus, &dom, &b, &dv, &fn) || dom > 0xffff) {
		eng_debug("%s: devices (index %u): missing or invalid pci.bus_id '%s'",
			  eng.config_path, d->prof_index, bus ? bus : "");
		return ENG_ERROR_DRIVER_NOT_LOADED;
	}
	snprintf(d->bus_id, sizeof(d->bus_id), "%08lX:%02X:%02X.%u", dom, b, dv, fn);
	snprintf(lower, sizeof(lower), "%04lx:%02x:%02x.%u", dom, b, dv, fn);
	if (uuid && *uuid)
		snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
	else
		default_uuid(d, lower);
	return ENG_SUCCESS;
}

/* Do the device nodes decide which GPUs are visible?  They do when there
 * is a /dev/nvidia<N> or /dev/nvidiactl: a container given no GPU
 * (NVIDIA_VISIBLE_DEVICES=none) has nvidiactl alone and a real driver
 * lists none there.  Without either (host tools over a staged tree) every
 * device is visible. */
static bool any_gpu_node(const char *dir)
{
	struct dirent *e;
	bool any = false;
	DIR *dp = opendir(dir);

	if (!dp)
		return false;
	while (!any && (e = readdir(dp)))
		any = !strcmp(e->d_name, "nvidiactl") ||
		      (!strncmp(e->d_name, "nvidia", 6) && e->d_name[6] &&
		       strspn(e->d_name + 6, "0123456789") == strlen(e->d_name + 6));
	closedir(dp);
	return any;
}

struct entry {
	const struct yl_node *node;
	uint64_t index;
	size_t pos;		/* in devices[] */
};

int eng_build_devices(void)
{
	const struct yl_node *list = yl_get(eng.profile, "devices");
	const char *dev_dir = env("MOCK_NVML_DEV_DIR") ? env("MOCK_NVML_DEV_DIR") : "/dev";
	struct entry ents[ENG_MAX_DEVICES];
	size_t n = 0;
	uint64_t cap;
	bool filter = any_gpu_node(dev_dir);

	for (size_t i = 0; list && list->kind == YL_SEQ && i < list->n; i++) {
		const struct yl_node *e = list->kids[i];
		size_t j;

		if (e->kind != YL_MAP || n == ENG_MAX_DEVICES) {
			eng_debug("%s: devices[%zu]: skipped (%s)", eng.config_path, i,
				  n == ENG_MAX_DEVICES ? "too many devices" : "not a mapping");
			continue;
		}
		/* insertion sort by index, stable */
		ents[n].node = e;
		ents[n].pos = i;
		if (!yl_u64(yl_get(e, "index"), &ents[n].index))
			ents[n].index = i;
		for (j = n++; j > 0 && ents[j - 1].index > ents[j].index; j--) {
			struct entry t = ents[j];

			ents[j] = ents[j - 1];
			ents[j - 1] = t;
		}
	}
	if (yl_u64(yl_path(eng.profile, "system.num_devices"), &cap) && cap > 0 && cap < n)
		n = (size_t)cap;
	for (size_t i = 0; i < n; i++) {
		struct mdev *d = &eng_devs[eng.ndev];
		uint64_t minor = ents[i].index;
		char node[PATH_MAX];
		int rc;

		yl_u64(yl_get(ents[i].node, "minor_number"), &minor);
		snprintf(node, sizeof(node), "%s/nvidia%llu", dev_dir, (unsigned long long)minor);
		if (filter && access(node, F_OK) != 0)
			continue;
		/* Bound to vfio-pci, unbound or removed (mokka-pcifs): not NVML's. */
		if (pcibind_detached(eng.config_path,
				     yl_text(yl_path(ents[i].node, "pci.bus_id"))))
			continue;
		memset(d, 0, sizeof(*d));
		d->index = eng.ndev;
		d->prof_index = (unsigned)ents[i].index;
		d->minor = (unsigned)minor;
		if (eng_device_base(ents[i].pos, &d->base) < 0 || !d->base)
			return ENG_ERROR_UNKNOWN;
		eng.ndev++;	/* owns d->base now: teardown frees it */
		if ((rc = device_identity(d, ents[i].node)) != ENG_SUCCESS)
			return rc;
	}
	eng_pcie_affinity();
	return ENG_SUCCESS;
}
