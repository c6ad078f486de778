/* The two CDI specs (SURFACES.md §2.2, §2.3).
 *
 * Everything a spec names is a host path (the de-prefixed path, or
 * containerd fails create with "failed to stat CDI host device"), and it
 * names only what exists under the host root when it is rendered: a GPU
 * whose device node is not there has no entry.  That one rule serves both
 * waves: Apply runs after gpudriver staged the nodes, and Stage (which
 * runs before gpudriver prunes) re-renders the published spec for the new
 * state, so entries of departing GPUs go first and new GPUs wait for
 * Apply. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/log.h"
#include "overrides/overrides.h"
#include "shims/nvml/pcibind.h"
#include "workers/cri/cri.h"

#define MAX_EDITS 16
#define RO "[\"ro\", \"nosuid\", \"nodev\", \"bind\"]"
#define RW "[\"rw\", \"nosuid\", \"nodev\", \"bind\"]"

struct node {
	char path[64];			/* in the container */
	char host[512];
};

struct mount {
	char host[512], ctr[512];
	const char *opts;
};

struct edits {
	const char *env[8];
	char env_buf[2][320];
	int nenv, nnodes, nmounts;
	struct node nodes[STATE_MAX_DEVICES + 8];
	struct mount mounts[MAX_EDITS];
	bool hook;
};

/* Exists under the root, links followed as the host would. */
static bool exists(const struct host *h, const char *path, bool want_dir)
{
	char res[4096], full[8192];
	struct stat st;

	return cri_resolve(h, path, res, sizeof(res)) == 0 &&
	       host_path(h, res, full, sizeof(full)) == 0 && stat(full, &st) == 0 &&
	       (!want_dir || S_ISDIR(st.st_mode));
}

/* A double-quoted YAML scalar (the JSON escapes are YAML's too). */
static void q(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20 || *c == 0x7f)
			fprintf(f, "\\x%02x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}

static void add_node(const struct host *h, struct edits *e, const char *ctr, const char *host)
{
	struct node *n;

	if (e->nnodes == (int)(sizeof(e->nodes) / sizeof(e->nodes[0])) || !exists(h, host, false))
		return;
	n = &e->nodes[e->nnodes++];
	snprintf(n->path, sizeof(n->path), "%s", ctr);
	snprintf(n->host, sizeof(n->host), "%s", host);
}

static void add_mount(const struct host *h, struct edits *e, const char *host, const char *ctr,
		      const char *opts, bool dir)
{
	struct mount *m;

	if (e->nmounts == MAX_EDITS || !exists(h, host, dir))
		return;
	m = &e->mounts[e->nmounts++];
	snprintf(m->host, sizeof(m->host), "%s", host);
	snprintf(m->ctr, sizeof(m->ctr), "%s", ctr);
	m->opts = opts;
}

static void gpu_node(const struct host *h, const struct state *s, struct edits *e,
		     const struct state_device *d)
{
	char ctr[64], host[512];

	snprintf(ctr, sizeof(ctr), "/dev/nvidia%d", d->minor);
	snprintf(host, sizeof(host), "%s/driver/dev/nvidia%d", s->mock_root, d->minor);
	add_node(h, e, ctr, host);
}

/* The common nodes nvidia-ctk's generated specs carry too (nvidia_cdi.sh). */
static const char *const control_nodes[] = {
	"nvidiactl", "nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools",
};

static void control(const struct host *h, const struct state *s, struct edits *e)
{
	char ctr[64], host[512];

	for (size_t i = 0; i < sizeof(control_nodes) / sizeof(control_nodes[0]); i++) {
		snprintf(ctr, sizeof(ctr), "/dev/%s", control_nodes[i]);
		snprintf(host, sizeof(host), "%s/driver/dev/%s", s->mock_root, control_nodes[i]);
		add_node(h, e, ctr, host);
	}
}

/* Module presence: R/sys/module (gpudriver's nvidia* modules).  /proc/modules
 * cannot be a mount target (runc refuses mounts into /proc). */
static void module_mounts(const struct host *h, const struct state *s, struct edits *e)
{
	char host[512];

	snprintf(host, sizeof(host), "%s/sys/module", s->mock_root);
	add_mount(h, e, host, "/sys/module", RO, true);
}

/* IMEX userspace, only while the imex simulator has it staged. */
static const char *const imex_binaries[] = { "nvidia-imex", "nvidia-imex-ctl", "nvidia-imex.real" };

static void common_edits(const struct host *h, const struct state *s, struct edits *e)
{
	const struct {
		const char *rel, *ctr, *opts;
		bool dir;
	} files[] = {
		{ "/driver/usr/lib64/libnvidia-ml.so.1", "/usr/lib64/libnvidia-ml.so.1", RO, false },
		{ "/driver/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi", RO, false },
		{ "/driver/config", "/etc/nvml-mock", RW, true },
	};
	char host[512], host2[512], ctr[512];

	e->env[e->nenv++] = "NVIDIA_VISIBLE_DEVICES=void";
	e->env[e->nenv++] = "MOCK_NVML_CONFIG=/etc/nvml-mock/config.yaml";
	e->env[e->nenv++] = "MOCK_NVML_OVERRIDES=/etc/nvml-mock/" OVR_DOC_NAME;
	control(h, s, e);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(host, sizeof(host), "%s%s", s->mock_root, files[i].rel);
		add_mount(h, e, host, files[i].ctr, files[i].opts, files[i].dir);
	}
	/* The PCI view, only when pcibus staged the whole tree. */
	snprintf(host, sizeof(host), "%s/sys/devices", s->mock_root);
	snprintf(host2, sizeof(host2), "%s/sys/bus/pci/devices", s->mock_root);
	if (exists(h, host, true) && exists(h, host2, true)) {
		add_mount(h, e, host, "/sys/devices", RO, true);
		add_mount(h, e, host2, "/sys/bus/pci/devices", RO, true);
	}
	module_mounts(h, s, e);
	if (s->fabric.enabled && s->fabric.state_dir[0] == '/' &&
	    exists(h, s->fabric.state_dir, true)) {
		add_mount(h, e, s->fabric.state_dir, s->fabric.state_dir, RO, true);
		snprintf(e->env_buf[0], sizeof(e->env_buf[0]), "MOCK_FABRICMANAGER_STATE_DIR=%s",
			 s->fabric.state_dir);
		e->env[e->nenv++] = e->env_buf[0];
	}
	for (size_t i = 0; i < sizeof(imex_binaries) / sizeof(imex_binaries[0]); i++) {
		snprintf(host, sizeof(host), "%s/driver/usr/bin/%s", s->mock_root, imex_binaries[i]);
		snprintf(ctr, sizeof(ctr), "/usr/bin/%s", imex_binaries[i]);
		add_mount(h, e, host, ctr, RO, false);
	}
	/* The toolkit's ldcache hook, only when the host has it: a hook that
	 * does not exist fails every container create. */
	e->hook = exists(h, "/usr/bin/nvidia-cdi-hook", false);
}

static void put_edits(FILE *f, const struct edits *e, const char *in)
{
	if (e->nenv) {
		fprintf(f, "%senv:\n", in);
		for (int i = 0; i < e->nenv; i++) {
			fprintf(f, "%s- ", in);
			q(f, e->env[i]);
			fputc('\n', f);
		}
	}
	if (e->nnodes) {
		fprintf(f, "%sdeviceNodes:\n", in);
		for (int i = 0; i < e->nnodes; i++) {
			fprintf(f, "%s- path: ", in);
			q(f, e->nodes[i].path);
			fprintf(f, "\n%s  hostPath: ", in);
			q(f, e->nodes[i].host);
			fputc('\n', f);
		}
	}
	if (e->nmounts) {
		fprintf(f, "%smounts:\n", in);
		for (int i = 0; i < e->nmounts; i++) {
			fprintf(f, "%s- hostPath: ", in);
			q(f, e->mounts[i].host);
			fprintf(f, "\n%s  containerPath: ", in);
			q(f, e->mounts[i].ctr);
			fprintf(f, "\n%s  options: %s\n", in, e->mounts[i].opts);
		}
	}
	if (e->hook)
		fprintf(f, "%shooks:\n%s- hookName: \"createContainer\"\n"
			"%s  path: \"/usr/bin/nvidia-cdi-hook\"\n"
			"%s  args: [\"nvidia-cdi-hook\", \"update-ldcache\", \"--folder\", \"/usr/lib64\"]\n",
			in, in, in, in);
}

/* One device entry: its name and its nodes. */
static void put_device(FILE *f, const char *name, const struct edits *e)
{
	fputs("- name: ", f);
	q(f, name);
	fputs("\n  containerEdits:\n", f);
	put_edits(f, e, "    ");
}

/* mokka-pcifs's binding file (NULL: none, or refused: a link on the way). */
static FILE *open_bindings(const struct host *h, const struct state *s)
{
	char rel[512];

	if (snprintf(rel, sizeof(rel), "%s" PCIBIND_FILE, s->mock_root) >= (int)sizeof(rel))
		return NULL;
	return host_fopen(h, rel);
}

/* CDI device names: letters, digits, '_', '-', '.', ':', starting with a
 * letter or digit. */
static bool cdi_name_ok(const char *n)
{
	if (!((n[0] >= 'a' && n[0] <= 'z') || (n[0] >= 'A' && n[0] <= 'Z') ||
	      (n[0] >= '0' && n[0] <= '9')))
		return false;
	return strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:") ==
	       strlen(n);
}

/* The per-GPU entries (by index, and by UUID unless by_uuid is false) and
 * "all" (the GPU nodes plus extra_all's).  Returns how many GPUs had a
 * node. */
static int put_devices(const struct host *h, const struct state *s, FILE *f, bool by_uuid,
		       const struct edits *extra_all)
{
	struct edits *all = calloc(1, sizeof(*all)), one;
	FILE *bind;
	char name[32];
	int n = 0;

	if (!all)
		return -ENOMEM;
	bind = open_bindings(h, s);
	fputs("devices:\n", f);
	for (int i = 0; i < s->num_devices; i++) {
		const struct state_device *d = &s->devices[i];

		memset(&one, 0, sizeof(one));
		gpu_node(h, s, &one, d);
		if (!one.nnodes)
			continue;	/* not staged (yet, or any more) */
		if (pcibind_detached_in(bind, d->bus_id))
			continue;	/* on vfio-pci, unbound or removed (mokka-pcifs) */
		n++;
		all->nodes[all->nnodes++] = one.nodes[0];
		snprintf(name, sizeof(name), "%d", d->index);
		put_device(f, name, &one);
		if (!by_uuid || !d->uuid[0])
			continue;
		if (!cdi_name_ok(d->uuid)) {
			log_warn("cri: GPU %d: UUID '%s' is not a CDI device name; only \"%d\" names it",
				 d->index, d->uuid, d->index);
			continue;
		}
		put_device(f, d->uuid, &one);
	}
	for (int i = 0; extra_all && i < extra_all->nnodes; i++)
		all->nodes[all->nnodes++] = extra_all->nodes[i];
	if (n)
		put_device(f, "all", all);
	if (bind)
		fclose(bind);
	free(all);
	return n;
}

static int finish(FILE *f, int n, char **out, size_t *len)
{
	if (fclose(f) != 0) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	if (n <= 0) {
		free(*out);
		*out = NULL;
		*len = 0;
	}
	return n < 0 ? n : 0;
}

int cri_render_spec(const struct host *h, const struct state *s, char **out, size_t *len)
{
	struct edits *e = calloc(1, sizeof(*e));
	FILE *f;
	int n;

	*out = NULL;
	if (!e || !(f = open_memstream(out, len))) {
		free(e);
		return -ENOMEM;
	}
	common_edits(h, s, e);
	fprintf(f, "# Written by Mokka (mokka-worker-cri): the simulated GPUs for CDI runtimes.\n"
		"cdiVersion: \"%s\"\nkind: \"%s\"\ncontainerEdits:\n", CRI_CDI_VERSION, CRI_KIND);
	put_edits(f, e, "  ");
	n = put_devices(h, s, f, true, NULL);
	/* NVIDIA_VISIBLE_DEVICES=none asks the toolkit's runtime (CDI mode)
	 * for the device "none"; its own generated specs carry it with one
	 * inert variable, as CDI allows no device without edits. */
	if (n > 0) {
		memset(e, 0, sizeof(*e));
		e->env[e->nenv++] = "NVCT_EMPTY_DEVICE=";
		put_device(f, "none", e);
	}
	free(e);
	return finish(f, n, out, len);
}

/* The NRI plugin's own kind: no hooks, no library (NRI brings those
 * through its overlay); "all" carries the control nodes too. */
int cri_render_nri_spec(const struct host *h, const struct state *s, char **out, size_t *len)
{
	struct edits *e = calloc(1, sizeof(*e)), *ctl = calloc(1, sizeof(*ctl));
	FILE *f = NULL;
	int n = -ENOMEM;

	*out = NULL;
	if (e && ctl && (f = open_memstream(out, len))) {
		e->env[e->nenv++] = "NVML_MOCK_DEVICE_SOURCE=cdi";
		module_mounts(h, s, e);
		control(h, s, ctl);
		fprintf(f, "# Written by Mokka (mokka-worker-cri): GPUs for the nvml-mock NRI plugin.\n"
			"cdiVersion: \"%s\"\nkind: \"%s\"\ncontainerEdits:\n", CRI_CDI_VERSION,
			CRI_NRI_KIND);
		put_edits(f, e, "  ");
		n = put_devices(h, s, f, false, ctl);
	}
	free(e);
	free(ctl);
	return f ? finish(f, n, out, len) : -ENOMEM;
}

int cri_publish(struct host *h, const char *spec, const char *text, size_t len,
		struct sim_errors *errs)
{
	char path[4096];
	int r;

	/* <root>/var/run is a link to /run on most hosts: resolve it inside
	 * the root, never through this machine's /run. */
	if ((r = cri_resolve_parent(h, spec, path, sizeof(path))) < 0) {
		sim_error(errs, spec, "resolve under the host root: %s", strerror(-r));
		return r;
	}
	r = text ? host_write(h, path, text, len, 0644) : host_unlink(h, path);
	if (r < 0)
		sim_error(errs, spec, "%s %s: %s", text ? "write" : "remove", path, strerror(-r));
	return r;
}
