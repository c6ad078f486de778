/* containerd's configuration for CDI (SURFACES.md §2.5), in memory:
 *
 * * the drop-in <config-dir>/50-mokka.toml: the nvidia handler as the
 *   default runtime, CDI on, and with the NRI plugin the whole NRI table.
 *   containerd replaces a plugin's table whole when a later file sets it
 *   (CONSUMERS.md §2), so the drop-in carries config.toml's own cri table
 *   with our keys set on top, not just our keys;
 * * an imports entry in config.toml when no entry covers the drop-in,
 *   inserted as text so every other byte (comments, layout) stays.
 *
 * Both results are parsed again before anyone writes them: a config that
 * would not parse is never written. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/cri/cri.h"

/* Where the CRI runtime settings live, per config version (containerd
 * 1.x reads version 2, 2.x version 3). */
static const struct layout {
	long long version;
	const char *cri;		/* plugin id of the runtime settings */
} layouts[] = {
	{ 2, "io.containerd.grpc.v1.cri" },
	{ 3, "io.containerd.cri.v1.runtime" },
};
#define NRI_PLUGIN "io.containerd.nri.v1.nri"

/* containerd's NRI defaults (SURFACES.md §2.5): before containerd 2.1 a
 * plugin's whole table comes from the last file that sets it, so every
 * key is written. */
static const struct {
	const char *key, *value;
} nri_defaults[] = {
	{ "plugin_config_path", "/etc/nri/conf.d" },
	{ "plugin_path", "/opt/nri/plugins" },
	{ "plugin_registration_timeout", "5s" },
	{ "plugin_request_timeout", "2s" },
};

static const char *const cdi_spec_dirs[] = { "/etc/cdi", "/var/run/cdi" };

void cri_plan_free(struct cri_plan *plan)
{
	free(plan->dropin);
	free(plan->config);
	plan->dropin = plan->config = NULL;
}

static const struct layout *layout_for(const struct toml_node *root)
{
	const struct toml_node *v = toml_get(root, "version");

	for (size_t i = 0; v && v->kind == TOML_INT && i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].version == v->num)
			return &layouts[i];
	return &layouts[0];
}

bool cri_imports_cover(const struct toml_node *imports, const char *config, const char *path)
{
	const char *slash = strrchr(config, '/');
	int dirlen = slash ? (int)(slash - config) : 0;

	for (size_t i = 0; imports && imports->kind == TOML_ARRAY && i < imports->n; i++) {
		const struct toml_node *e = imports->kids[i];
		char pat[1024];

		if (e->kind != TOML_STRING)
			continue;
		/* containerd resolves a relative entry against the file's dir */
		if (e->str[0] == '/')
			snprintf(pat, sizeof(pat), "%s", e->str);
		else
			snprintf(pat, sizeof(pat), "%.*s/%s", dirlen, config, e->str);
		if (fnmatch(pat, path, FNM_PATHNAME) == 0)
			return true;
	}
	return false;
}

int cri_validate_config(const char *name, const char *text, size_t len, char *why,
			size_t whylen)
{
	struct toml_doc doc;
	struct toml_error err;
	const struct toml_node *v;
	int r = toml_parse(text, len, &doc, &err);

	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		snprintf(why, whylen, "%s:%d:%d: %s", name, err.line, err.col, err.msg);
		return r;
	}
	r = 0;
	if ((v = toml_get(doc.root, "version")) && v->kind != TOML_INT) {
		snprintf(why, whylen, "%s:%d:%d: version: want an integer", name, v->line, v->col);
		r = -EINVAL;
	} else if ((v = toml_get(doc.root, "imports"))) {
		bool ok = v->kind == TOML_ARRAY;
		for (size_t i = 0; ok && i < v->n; i++)
			ok = v->kids[i]->kind == TOML_STRING;
		if (!ok) {
			snprintf(why, whylen, "%s:%d:%d: imports: want an array of paths", name,
				 v->line, v->col);
			r = -EINVAL;
		}
	}
	toml_doc_free(&doc);
	return r;
}

/* Set key to a string/bool unless keep_existing and it is there already. */
static int set_str(struct toml_node *t, const char *key, const char *v, bool keep_existing)
{
	struct toml_node *n;

	if (keep_existing && toml_get(t, key))
		return 0;
	if (!(n = toml_new_string(key, v)) || toml_put(t, n) < 0) {
		toml_free(n);
		return -ENOMEM;
	}
	return 0;
}

static int set_bool(struct toml_node *t, const char *key, bool v)
{
	struct toml_node *n = toml_new_bool(key, v);

	if (!n || toml_put(t, n) < 0) {
		toml_free(n);
		return -ENOMEM;
	}
	return 0;
}

static int set_str_array(struct toml_node *t, const char *key, const char *const *v, size_t n)
{
	struct toml_node *a = toml_new(TOML_ARRAY, key), *e;

	for (size_t i = 0; a && i < n; i++) {
		if (!(e = toml_new_string(NULL, v[i])) || toml_put(a, e) < 0) {
			toml_free(e);
			toml_free(a);
			return -ENOMEM;
		}
	}
	if (!a || toml_put(t, a) < 0) {
		toml_free(a);
		return -ENOMEM;
	}
	return 0;
}

/* A copy of config.toml's table plugins.<id> (an empty one when absent). */
static struct toml_node *plugin_copy(const struct toml_node *config, const char *id)
{
	const struct toml_node *src = toml_getv(config, (const char *const[]){ "plugins", id, NULL });

	return src && src->kind == TOML_TABLE ? toml_clone(src, id) : toml_new(TOML_TABLE, id);
}

/* The cri table: config.toml's, plus CDI on and the nvidia handler (a copy
 * of runc's entry with our binary) as the default. */
static int cri_table(const struct toml_node *config, const struct layout *l,
		     const char *binary, struct toml_node *plugins)
{
	struct toml_node *cri = plugin_copy(config, l->cri), *ctrd, *rts, *nv, *opts;
	const struct toml_node *runc, *rt;
	int r;

	if (!cri || toml_put(plugins, cri) < 0) {
		toml_free(cri);
		return -ENOMEM;
	}
	if ((r = set_bool(cri, "enable_cdi", true)) < 0 ||
	    (r = set_str_array(cri, "cdi_spec_dirs", cdi_spec_dirs,
			       sizeof(cdi_spec_dirs) / sizeof(cdi_spec_dirs[0]))) < 0)
		return r;
	if (!(ctrd = toml_table(cri, "containerd")) || !(rts = toml_table(ctrd, "runtimes")) ||
	    (r = set_str(ctrd, "default_runtime_name", CRI_RUNTIME_NAME, false)) < 0)
		return -ENOMEM;
	runc = toml_get(rts, "runc");
	if (runc && runc->kind == TOML_TABLE)
		nv = toml_clone(runc, CRI_RUNTIME_NAME);
	else
		nv = toml_new(TOML_TABLE, CRI_RUNTIME_NAME);
	if (!nv || toml_put(rts, nv) < 0) {
		toml_free(nv);
		return -ENOMEM;
	}
	rt = toml_get(nv, "runtime_type");
	if ((!rt || rt->kind != TOML_STRING) &&
	    (r = set_str(nv, "runtime_type", "io.containerd.runc.v2", false)) < 0)
		return r;
	if (!(opts = toml_table(nv, "options")))
		return -ENOMEM;
	if (binary)
		return set_str(opts, "BinaryName", binary, false);
	/* runc's own entry may name a binary: the handler runs that one */
	return 0;
}

static int nri_table(const struct toml_node *config, const struct state_cri *c,
		     struct toml_node *plugins)
{
	struct toml_node *nri = plugin_copy(config, NRI_PLUGIN);
	int r;

	if (!nri || toml_put(plugins, nri) < 0) {
		toml_free(nri);
		return -ENOMEM;
	}
	if ((r = set_bool(nri, "disable", false)) < 0 ||
	    (r = set_bool(nri, "disable_connections", false)) < 0 ||
	    (r = set_str(nri, "socket_path", c->nri_socket, false)) < 0)
		return r;
	for (size_t i = 0; i < sizeof(nri_defaults) / sizeof(nri_defaults[0]); i++)
		if ((r = set_str(nri, nri_defaults[i].key, nri_defaults[i].value, true)) < 0)
			return r;
	return 0;
}

int cri_add_nri(struct toml_node *dropin, const struct toml_node *config,
		const struct state_cri *c)
{
	struct toml_node *plugins = toml_table(dropin, "plugins");

	return plugins ? nri_table(config, c, plugins) : -ENOMEM;
}

static int render_dropin(const struct state_cri *c, const struct toml_node *config,
			 const char *binary, struct cri_plan *plan)
{
	const struct layout *l = layout_for(config);
	struct toml_node *root = toml_new(TOML_TABLE, NULL), *v, *plugins;
	static const char head[] =
		CRI_DROPIN_MARK ": containerd runs containers through the\n"
		"# nvidia handler with CDI on.  Removed when Mokka stops (restart containerd then).\n";
	char *body = NULL;
	size_t len;
	int r = -ENOMEM;

	if (!root || !(v = toml_new(TOML_INT, "version")))
		goto out;
	v->num = l->version;
	if (toml_put(root, v) < 0) {
		toml_free(v);
		goto out;
	}
	if (!(plugins = toml_table(root, "plugins")) ||
	    (r = cri_table(config, l, binary, plugins)) < 0 ||
	    (c->nri && (r = nri_table(config, c, plugins)) < 0) ||
	    (r = toml_write(root, &body, &len)) < 0)
		goto out;
	r = -ENOMEM;
	if (!(plan->dropin = malloc(sizeof(head) + len)))
		goto out;
	memcpy(plan->dropin, head, sizeof(head) - 1);
	memcpy(plan->dropin + sizeof(head) - 1, body, len + 1);
	plan->dropin_len = sizeof(head) - 1 + len;
	r = 0;
out:
	free(body);
	toml_free(root);
	return r;
}

/* Insert ins at off of text into a new buffer. */
static char *splice(const char *text, size_t len, size_t off, const char *ins, size_t *outlen)
{
	size_t n = strlen(ins);
	char *out = malloc(len + n + 1);

	if (!out)
		return NULL;
	memcpy(out, text, off);
	memcpy(out + off, ins, n);
	memcpy(out + off + n, text + off, len - off);
	out[len + n] = '\0';
	*outlen = len + n;
	return out;
}

/* config.toml with glob added to imports, every other byte kept: into the
 * existing array after its last element, or as a new top-level line
 * before the first table header. */
static int add_import(const char *text, size_t len, const struct toml_doc *doc,
		      const char *glob, char **out, size_t *outlen)
{
	const struct toml_node *imp = toml_get(doc->root, "imports");
	char ins[600];

	if (imp && imp->n) {
		snprintf(ins, sizeof(ins), ", \"%s\"", glob);
		*out = splice(text, len, imp->kids[imp->n - 1]->end, ins, outlen);
	} else if (imp) {
		snprintf(ins, sizeof(ins), "\"%s\"", glob);
		*out = splice(text, len, imp->start + 1, ins, outlen);
	} else {
		bool nl = doc->first_header == len && len && text[len - 1] != '\n';
		snprintf(ins, sizeof(ins), "%simports = [\"%s\"]\n%s", nl ? "\n" : "", glob,
			 doc->first_header < len ? "\n" : "");
		*out = splice(text, len, doc->first_header, ins, outlen);
	}
	return *out ? 0 : -ENOMEM;
}

int cri_containerd_plan(const struct state_cri *c, const char *config, size_t len, bool exists,
			const char *binary, struct cri_plan *plan, char *why, size_t whylen)
{
	struct toml_doc doc = { 0 };
	struct toml_error err;
	char glob[512];
	int r;

	memset(plan, 0, sizeof(*plan));
	snprintf(plan->dropin_path, sizeof(plan->dropin_path), "%s/%s", c->config_dir,
		 CRI_DROPIN_NAME);
	snprintf(glob, sizeof(glob), "%s/*.toml", c->config_dir);
	if (!exists) {
		config = "";
		len = 0;
	}
	if (exists && (r = cri_validate_config(c->config, config, len, why, whylen)) < 0)
		return r;
	if ((r = toml_parse(config, len, &doc, &err)) < 0) {
		snprintf(why, whylen, "%s:%d:%d: %s", c->config, err.line, err.col, err.msg);
		return r;
	}
	if ((r = render_dropin(c, doc.root, binary, plan)) < 0) {
		snprintf(why, whylen, "%s: cannot render the drop-in: %s", plan->dropin_path,
			 strerror(-r));
		goto out;
	}
	if (!exists) {
		/* No config.toml: containerd's defaults plus the import. */
		char buf[700];
		snprintf(buf, sizeof(buf), "%s\nversion = 2\nimports = [\"%s\"]\n",
			 CRI_DROPIN_MARK ": the import of our drop-in directory.", glob);
		r = (plan->config = strdup(buf)) ? 0 : -ENOMEM;
		plan->config_len = strlen(buf);
	} else if (!cri_imports_cover(toml_get(doc.root, "imports"), c->config, plan->dropin_path)) {
		r = add_import(config, len, &doc, glob, &plan->config, &plan->config_len);
	}
	if (r < 0)
		goto out;
	/* What we would write must be what containerd loads. */
	if ((r = cri_validate_config(plan->dropin_path, plan->dropin, plan->dropin_len, why,
				     whylen)) < 0)
		goto out;
	if (plan->config) {
		struct toml_doc check;
		if ((r = cri_validate_config(c->config, plan->config, plan->config_len, why,
					     whylen)) < 0 ||
		    (r = toml_parse(plan->config, plan->config_len, &check, &err)) < 0)
			goto out;
		bool covered = cri_imports_cover(toml_get(check.root, "imports"), c->config,
						 plan->dropin_path);
		toml_doc_free(&check);
		if (!covered) {
			snprintf(why, whylen, "%s: the imports entry we add would not cover %s",
				 c->config, plan->dropin_path);
			r = -EINVAL;
		}
	}
out:
	toml_doc_free(&doc);
	if (r < 0)
		cri_plan_free(plan);
	return r;
}
