/* CreateContainerRequest -> ContainerAdjustment (SURFACES.md §2.6 and
 * issue 18).  Every container gets the mock driver view unless its pod
 * opts out (annotation nvml-mock.nvidia.com/inject=false), its namespace
 * is excluded, or it already has the overlay:
 *   - the rbind of R at /opt/nvml-mock (ro, nosuid, nodev);
 *   - PATH and LD_LIBRARY_PATH with the driver tree first, the shims that
 *     are staged appended to LD_PRELOAD, the MOCK_* defaults when unset,
 *     NODE_NAME and MOCK_TOPOLOGY_CONFIG when a topology is staged;
 *   - the GPUs, unless the container already carries NVIDIA devices (a
 *     device plugin served it) or the pod says devices=false: CDI
 *     nvml-mock.nvidia.com/gpu=all when the NRI spec is staged and the
 *     runtime resolves it, else every nvidia* node of R/driver/dev;
 *   - the IMEX channels on nvml-mock.nvidia.com/imex-channels=true.
 * Anything unreadable fails open (less is injected, never an error). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "nri/nri.h"

#define ANN_INJECT "nvml-mock.nvidia.com/inject"
#define ANN_DEVICES "nvml-mock.nvidia.com/devices"
#define ANN_IMEX "nvml-mock.nvidia.com/imex-channels"
#define CDI_ALL "nvml-mock.nvidia.com/gpu=all"
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define MAX_ENV 512

static const char *const shims[] = {	/* under R, appended to LD_PRELOAD */
	"driver/usr/local/lib/libmockfs.so", "ib/lib/libibmockumad.so",
	"ib/lib/libibmockverbs.so", "ib/lib/libibmocksys.so",
};

struct ctr {
	char ns[256];
	char inject[16], devices[16], imex[16];
	int nenv;
	struct { const uint8_t *s; size_t n; } env[MAX_ENV];
	bool has_overlay, has_nvidia;
};

static bool field_is(const struct pb_field *f, const char *s)
{
	return f->type == PB_LEN && f->len == strlen(s) && (!f->len || !memcmp(f->data, s, f->len));
}

static void copy(const struct pb_field *f, char *dst, size_t size)
{
	size_t n = f->len < size - 1 ? f->len : size - 1;

	if (n)
		memcpy(dst, f->data, n);
	dst[n] = '\0';
}

/* One map<string,string> entry of the annotations we read. */
static int annotation(const struct pb_field *e, struct ctr *c)
{
	struct pb_reader r = { e->data, e->data + e->len };
	struct pb_field f, key = { 0 }, val = { 0 };
	int k;

	while ((k = pb_next(&r, &f)) > 0) {
		if (f.num == 1 && f.type == PB_LEN)
			key = f;
		if (f.num == 2 && f.type == PB_LEN)
			val = f;
	}
	if (k < 0)
		return -EINVAL;
	if (field_is(&key, ANN_INJECT))
		copy(&val, c->inject, sizeof(c->inject));
	else if (field_is(&key, ANN_DEVICES))
		copy(&val, c->devices, sizeof(c->devices));
	else if (field_is(&key, ANN_IMEX))
		copy(&val, c->imex, sizeof(c->imex));
	else if (key.len > 12 && !memcmp(key.data, "cdi.k8s.io/", 11) && val.len >= 11 &&
		 memmem(val.data, val.len, "nvidia.com/", 11))
		c->has_nvidia = true;	/* CDI devices by annotation */
	return 0;
}

/* Field 1 (a string) of each element of a repeated message: its test. */
static int first_string(const struct pb_field *m, uint32_t num, struct pb_field *out)
{
	struct pb_reader r = { m->data, m->data + m->len };
	struct pb_field f;
	int k;

	memset(out, 0, sizeof(*out));
	while ((k = pb_next(&r, &f)) > 0)
		if (f.num == num && f.type == PB_LEN)
			*out = f;
	return k;
}

static bool nvidia_dev(const struct pb_field *p)
{
	return p->len > 11 && !memcmp(p->data, "/dev/nvidia", 11);
}

static int container(const struct pb_field *m, const char *croot, struct ctr *c)
{
	struct pb_reader r = { m->data, m->data + m->len }, lr;
	struct pb_field f, g, s;
	int k;

	while ((k = pb_next(&r, &f)) > 0) {
		if (f.type != PB_LEN)
			continue;
		if (f.num == 6 && annotation(&f, c) < 0)
			return -EINVAL;
		if (f.num == 8 && c->nenv < MAX_ENV)
			c->env[c->nenv].s = f.data, c->env[c->nenv++].n = f.len;
		if (f.num == 9 && first_string(&f, 1, &s) >= 0 && field_is(&s, croot))
			c->has_overlay = true;
		if (f.num == 20 && first_string(&f, 1, &s) >= 0 && s.len > 11 &&
		    memmem(s.data, s.len, "nvidia.com/", 11))
			c->has_nvidia = true;
		if (f.num != 11)
			continue;
		lr = (struct pb_reader){ f.data, f.data + f.len };
		while ((k = pb_next(&lr, &g)) > 0)
			if (g.num == 2 && g.type == PB_LEN && first_string(&g, 1, &s) >= 0 &&
			    nvidia_dev(&s))
				c->has_nvidia = true;
		if (k < 0)
			return -EINVAL;
	}
	return k;
}

static int decode(const uint8_t *req, size_t len, const char *croot, struct ctr *c)
{
	struct pb_reader r = { req, req + len }, pr;
	struct pb_field f, g;
	int k;

	memset(c, 0, sizeof(*c));
	while ((k = pb_next(&r, &f)) > 0) {
		if (f.num == 1 && f.type == PB_LEN) {
			pr = (struct pb_reader){ f.data, f.data + f.len };
			while ((k = pb_next(&pr, &g)) > 0) {
				if (g.num == 4 && g.type == PB_LEN)
					copy(&g, c->ns, sizeof(c->ns));
				if (g.num == 6 && g.type == PB_LEN && annotation(&g, c) < 0)
					return -EINVAL;
			}
			if (k < 0)
				return -EINVAL;
		}
		if (f.num == 2 && f.type == PB_LEN && container(&f, croot, c) < 0)
			return -EINVAL;
	}
	return k;
}

/* The container's value of key, or NULL. */
static const char *getenv_c(const struct ctr *c, const char *key, char *buf, size_t size)
{
	size_t kl = strlen(key);

	for (int i = c->nenv - 1; i >= 0; i--)
		if (c->env[i].n > kl && !memcmp(c->env[i].s, key, kl) && c->env[i].s[kl] == '=') {
			snprintf(buf, size, "%.*s", (int)(c->env[i].n - kl - 1), c->env[i].s + kl + 1);
			return buf;
		}
	return NULL;
}

static void env_kv(struct pb_buf *adj, const char *key, const char *value)
{
	struct pb_buf kv = { 0 };

	pb_str(&kv, 1, key);
	pb_str(&kv, 2, value);
	pb_msg(adj, 4, &kv);
}

static bool host_exists(const struct nri_config *cf, const char *rel)
{
	char p[8192];
	struct stat st;

	snprintf(p, sizeof(p), "%s%s/%s", cf->host_root, cf->mock_root, rel);
	return stat(p, &st) == 0;
}

static void env(const struct nri_config *cf, const struct ctr *c, struct pb_buf *adj)
{
	static const struct { const char *key, *rel; } defaults[] = {
		{ "MOCK_NVML_CONFIG", "/driver/config/config.yaml" }, { "MOCK_IB", NULL },
		{ "MOCK_IB_ROOT", "/ib" }, { "MOCK_IB_PING_SOCKET", "/run/mock-ib.sock" },
		{ "MOCK_PCI_ROOT", "" },
	};
	const char *cr = cf->container_root, *old;
	char buf[4096], val[8192];

	old = getenv_c(c, "PATH", buf, sizeof(buf));
	snprintf(val, sizeof(val), "%s/driver/usr/bin:%s", cr, old ? old : DEFAULT_PATH);
	env_kv(adj, "PATH", val);
	old = getenv_c(c, "LD_LIBRARY_PATH", buf, sizeof(buf));
	snprintf(val, sizeof(val), "%s/driver/usr/lib64%s%s", cr, old && *old ? ":" : "",
		 old ? old : "");
	env_kv(adj, "LD_LIBRARY_PATH", val);
	old = getenv_c(c, "LD_PRELOAD", buf, sizeof(buf));
	snprintf(val, sizeof(val), "%s", old ? old : "");
	for (size_t i = 0; i < sizeof(shims) / sizeof(shims[0]); i++)
		if (host_exists(cf, shims[i]) && strlen(val) + strlen(cr) + strlen(shims[i]) + 3 <
		    sizeof(val))
			snprintf(val + strlen(val), sizeof(val) - strlen(val), "%s%s/%s",
				 val[0] ? ":" : "", cr, shims[i]);
	if (val[0] && (!old || strcmp(val, old)))
		env_kv(adj, "LD_PRELOAD", val);
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		if (getenv_c(c, defaults[i].key, buf, sizeof(buf)))
			continue;
		if (defaults[i].rel)
			snprintf(val, sizeof(val), "%s%s", cr, defaults[i].rel);
		env_kv(adj, defaults[i].key, defaults[i].rel ? val : "full");
	}
	if (cf->node_name[0] && host_exists(cf, "topology/topology.yaml")) {
		if (!getenv_c(c, "NODE_NAME", buf, sizeof(buf)))
			env_kv(adj, "NODE_NAME", cf->node_name);
		snprintf(val, sizeof(val), "%s/topology/topology.yaml", cr);
		env_kv(adj, "MOCK_TOPOLOGY_CONFIG", val);
	}
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Every char device named prefix* in R/<rel> as /dev/<under>/<name>. */
static int raw_devices(const struct nri_config *cf, const char *rel, const char *prefix,
		       const char *under, struct pb_buf *devs)
{
	char dir[8192], p[8500];
	struct dirent **e;
	int n, added = 0;

	snprintf(dir, sizeof(dir), "%s%s/%s", cf->host_root, cf->mock_root, rel);
	if ((n = scandir(dir, &e, NULL, by_name)) < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		struct stat st;
		struct pb_buf d = { 0 }, mode = { 0 };

		snprintf(p, sizeof(p), "%s/%s", dir, e[i]->d_name);
		if (!strncmp(e[i]->d_name, prefix, strlen(prefix)) && lstat(p, &st) == 0 &&
		    S_ISCHR(st.st_mode)) {
			snprintf(p, sizeof(p), "/dev/%s%s", under, e[i]->d_name);
			pb_str(&d, 1, p);
			pb_str(&d, 2, "c");
			pb_varint(&d, 3, major(st.st_rdev));
			pb_varint(&d, 4, minor(st.st_rdev));
			pb_varint(&mode, 1, st.st_mode & 0777);
			pb_msg(&d, 5, &mode);
			pb_msg(devs, 1, &d);
			added++;
		}
		free(e[i]);
	}
	free(e);
	return added;
}

static bool excluded(const struct nri_config *cf, const char *ns)
{
	char list[600], *save = NULL;

	if (!*ns)
		return false;
	snprintf(list, sizeof(list), "kube-system,%s", cf->exclude);
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!strcmp(t, ns))
			return true;
	return false;
}

int nri_adjust(const struct nri_config *cf, const uint8_t *req, size_t len, struct pb_buf *adj,
	       char *why, size_t whylen)
{
	struct ctr *c = calloc(1, sizeof(*c));
	struct pb_buf mount = { 0 }, linux_ = { 0 };
	char src[512];
	int n = 0;

	if (!c)
		return -ENOMEM;
	if (decode(req, len, cf->container_root, c) < 0) {
		free(c);
		snprintf(why, whylen, "malformed CreateContainerRequest");
		return -EINVAL;
	}
	if (!strcasecmp(c->inject, "false") || excluded(cf, c->ns) || c->has_overlay) {
		snprintf(why, whylen, "left alone (%s)", c->has_overlay ? "it has the overlay" :
			 !strcasecmp(c->inject, "false") ? ANN_INJECT "=false" : "namespace excluded");
		free(c);
		return 0;
	}
	snprintf(src, sizeof(src), "%s", cf->mock_root);
	pb_str(&mount, 1, cf->container_root);
	pb_str(&mount, 2, "bind");
	pb_str(&mount, 3, src);
	for (const char *const *o = (const char *const[]){ "rbind", "ro", "nosuid", "nodev", NULL };
	     *o; o++)
		pb_str(&mount, 4, *o);
	pb_msg(adj, 3, &mount);
	env(cf, c, adj);
	if (c->has_nvidia || !strcasecmp(c->devices, "false")) {
		snprintf(why, whylen, "overlay; no GPUs (%s)", c->has_nvidia ?
			 "it already carries NVIDIA devices" : ANN_DEVICES "=false");
	} else if (cf->cdi_ok && nri_root_exists(cf->host_root, cf->cdi_spec)) {
		struct pb_buf cdi = { 0 };
		pb_str(&cdi, 1, CDI_ALL);
		pb_msg(adj, 8, &cdi);
		snprintf(why, whylen, "overlay + CDI " CDI_ALL);
	} else {
		n = raw_devices(cf, "driver/dev", "nvidia", "", &linux_);
		snprintf(why, whylen, "overlay + %d raw device nodes", n);
	}
	if (!strcasecmp(c->imex, "true"))
		n = raw_devices(cf, "driver/dev/nvidia-caps-imex-channels", "channel",
				"nvidia-caps-imex-channels/", &linux_);
	if (linux_.n)
		pb_msg(adj, 6, &linux_);
	else
		pb_free(&linux_);
	free(c);
	return adj->err;
}
