/* Profile compiler: reference-schema YAML -> struct state.
 *
 * Two passes over the parsed tree: first a schema walk (one key table per
 * block) that warns about unknown keys and rejects wrongly typed values,
 * then extraction of what struct state carries, with range and path
 * checks.  Nothing is written to *out unless everything succeeded, so the
 * caller's last good state stays in force.
 *
 * This file: the entry point, system/fabric/options, the profile as JSON
 * and the final state.  The schema, devices and topology live in
 * compile_schema.c, compile_devices.c and compile_topology.c. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "ipc/log.h"
#include "profile/compile.h"
#include "profile/compile_internal.h"
#include "profile/identity.h"

#define DEFAULT_MOCK_ROOT "/var/lib/nvml-mock"

/* ------------------------------------------------------------------ */
/* System, fabric, options.                                            */

/* The reference schema is "1.0" (NVML.md §4).  Another major is another
 * schema whose keys may mean other things: refused, where it is written.  A
 * newer 1.x only adds keys, which the schema walk already warns about:
 * said once, by name. */
static int check_version(struct cctx *c, const struct ynode *root)
{
	const struct ynode *v = cc_lookup(root, "version");
	const char *s = v && v->kind == YNODE_SCALAR ? v->str : NULL;
	size_t major = s ? strspn(s, "0123456789") : 0, minor = 0;

	if (ytree_is_null(v))
		return cc_fail(c, root, "version", "missing (required, e.g. \"1.0\")");
	if (s && major && s[major] == '.')
		minor = strspn(s + major + 1, "0123456789");
	if (!s || !major || (s[major] && (s[major] != '.' || !minor || s[major + 1 + minor])))
		return cc_fail(c, v, "version", "want MAJOR.MINOR (\"1.0\"), got %s", cc_text(v));
	if (strtoul(s, NULL, 10) != 1)
		return cc_fail(c, v, "version", "unknown schema version '%.32s': this compiler "
			       "reads the reference schema 1.x", s);
	if (minor && strtoul(s + major + 1, NULL, 10) != 0)
		log_warn("%s:%d:%d: version: '%.32s' is newer than the 1.0 this compiler knows; "
			 "keys it does not know are ignored", c->file, v->line, v->col, s);
	return 0;
}

static int compile_system(struct cctx *c, const struct ynode *root,
			  const struct compile_opts *o, struct state *s)
{
	const struct ynode *sys = cc_lookup(root, "system");
	const struct ynode *drv = cc_lookup(sys, "driver_version");
	int rc;

	if ((rc = check_version(c, root)) < 0)
		return rc;
	if ((rc = cc_get_str(c, drv, "system.driver_version", s->driver_version,
			     sizeof(s->driver_version))) < 0 ||
	    (rc = cc_get_str(c, cc_lookup(sys, "nvml_version"), "system.nvml_version",
			     s->nvml_version, sizeof(s->nvml_version))) < 0 ||
	    (rc = cc_get_str(c, cc_lookup(sys, "cuda_version"), "system.cuda_version",
			     s->cuda_version, sizeof(s->cuda_version))) < 0)
		return rc;
	if (!s->driver_version[0] && o->driver_version) {
		if (strlen(o->driver_version) >= sizeof(s->driver_version))
			return cc_fail(c, sys ? sys : root, "system.driver_version",
				       "DRIVER_VERSION fallback '%.40s' is too long",
				       o->driver_version);
		strcpy(s->driver_version, o->driver_version);
	}
	if (!s->driver_version[0])
		return cc_fail(c, sys ? sys : root, "system.driver_version",
			       "missing (required, e.g. \"550.163.01\")");
	/* It names library files (libnvidia-ml.so.<version>). */
	if (!cc_all_chars(s->driver_version, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._-") ||
	    !state_valid_path_component(s->driver_version))
		return cc_fail(c, drv ? drv : root, "system.driver_version",
			       "invalid driver version '%s' (want e.g. 550.163.01)",
			       s->driver_version);
	return 0;
}

static int compile_fabric(struct cctx *c, const struct ynode *root,
			  const struct compile_opts *o, struct state *s)
{
	const struct ynode *fab = cc_lookup(root, "device_defaults.fabric");
	const struct ynode *sw = cc_lookup(root, "nvlink.switches");
	const struct ynode *n;
	struct state_fabric *f = &s->fabric;
	uint64_t u;
	int64_t v;
	int rc;

	n = cc_lookup(fab, "state");
	f->enabled = (!ytree_is_null(sw) && sw->n > 0) ||
		     (n && n->kind == YNODE_SCALAR && !strcmp(n->str, "auto"));
	rc = cc_get_str(c, cc_lookup(fab, "cluster_uuid"), "device_defaults.fabric.cluster_uuid",
			f->cluster_uuid, sizeof(f->cluster_uuid));
	if (rc < 0)
		return rc;
	n = cc_lookup(fab, "clique_id");
	if (!ytree_is_null(n)) {
		rc = cc_get_u64(c, n, "device_defaults.fabric.clique_id", UINT32_MAX, &u);
		if (rc < 0)
			return rc;
		f->clique_id = (uint32_t)u;
	}
	n = cc_lookup(root, "nvlink.links_per_gpu");
	if (!ytree_is_null(n)) {
		rc = cc_get_int(c, n, "nvlink.links_per_gpu", 0, 64, &v);
		if (rc < 0)
			return rc;
		f->links_per_gpu = (int)v;
	}
	n = cc_lookup(root, "nvlink.bandwidth_per_link_mbps");
	if (!ytree_is_null(n)) {
		rc = cc_get_u64(c, n, "nvlink.bandwidth_per_link_mbps", LONG_MAX, &u);
		if (rc < 0)
			return rc;
		f->bandwidth_per_link_mbps = (long)u;
	}
	f->init_delay_ms = o->fabric_init_delay_ms;
	if (o->fabric_state_dir)
		rc = snprintf(f->state_dir, sizeof(f->state_dir), "%s", o->fabric_state_dir);
	else
		rc = snprintf(f->state_dir, sizeof(f->state_dir), "%s/fabric-state",
			      s->mock_root);
	if (rc < 0 || (size_t)rc >= sizeof(f->state_dir))
		return cc_fail(c, NULL, "fabric_state_dir", "path too long (at most %zu bytes)",
			       sizeof(f->state_dir) - 1);
	return 0;
}

static int copy_opt(struct cctx *c, const char *name, const char *v,
		    char *buf, size_t size)
{
	if (!v)
		return 0;
	if (strlen(v) >= size)
		return cc_fail(c, NULL, name, "'%.40s...' is too long (at most %zu bytes)",
			       v, size - 1);
	strcpy(buf, v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Profile as JSON, for the NVML library.                              */

static cJSON *scalar_json(const struct ynode *n)
{
	char num[32];
	int64_t i;
	uint64_t u;
	double d;
	bool b;

	if (!n->plain)
		return cJSON_CreateString(n->str);
	if (ytree_is_null(n))
		return cJSON_CreateNull();
	/* Only the YAML 1.2 words: "on"/"yes" stay strings in untyped data. */
	if (!strcmp(n->str, "true") || !strcmp(n->str, "false") ||
	    !strcmp(n->str, "True") || !strcmp(n->str, "False") ||
	    !strcmp(n->str, "TRUE") || !strcmp(n->str, "FALSE"))
		return ytree_bool(n, &b) == 0 ? cJSON_CreateBool(b) : NULL;
	/* Integers go out as exact decimal text: a double would round
	 * 64-bit byte counts. */
	if (ytree_int(n, &i) == 0) {
		snprintf(num, sizeof(num), "%lld", (long long)i);
		return cJSON_CreateRaw(num);
	}
	if (ytree_uint(n, &u) == 0) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)u);
		return cJSON_CreateRaw(num);
	}
	if (ytree_float(n, &d) == 0)
		return cJSON_CreateNumber(d);
	return cJSON_CreateString(n->str);
}

static cJSON *tree_json(const struct ynode *n)
{
	cJSON *j, *kid;

	if (n->kind == YNODE_SCALAR)
		return scalar_json(n);
	j = n->kind == YNODE_MAP ? cJSON_CreateObject() : cJSON_CreateArray();
	for (size_t i = 0; j && i < n->n; i += n->kind == YNODE_MAP ? 2 : 1) {
		kid = tree_json(n->kind == YNODE_MAP ? n->kids[i + 1] : n->kids[i]);
		if (!kid) {
			cJSON_Delete(j);
			return NULL;
		}
		if (n->kind == YNODE_MAP)
			cJSON_AddItemToObject(j, n->kids[i]->str, kid);
		else
			cJSON_AddItemToArray(j, kid);
	}
	return j;
}

static int profile_json(struct cctx *c, const struct ynode *root, struct state *s)
{
	cJSON *j = tree_json(root);

	s->profile_json = j ? cJSON_PrintUnformatted(j) : NULL;
	cJSON_Delete(j);
	if (!s->profile_json)
		return cc_fail(c, root, "(document)", "out of memory converting to JSON");
	return 0;
}

/* ------------------------------------------------------------------ */

static int compile_tree(struct cctx *c, const struct ynode *root,
			const struct compile_opts *o, struct state *s,
			struct dev_build *devs)
{
	int ndevs = 0, rc;

	if ((rc = compile_check_profile(c, root)) < 0 ||
	    (rc = compile_system(c, root, o, s)) < 0 ||
	    (rc = copy_opt(c, "node_name", o->node_name, s->node_name,
			   sizeof(s->node_name))) < 0 ||
	    (rc = copy_opt(c, "mock_root", o->mock_root ? o->mock_root : DEFAULT_MOCK_ROOT,
			   s->mock_root, sizeof(s->mock_root))) < 0 ||
	    (rc = compile_devices(c, root, devs, &ndevs)) < 0 ||
	    (rc = compile_topology(c, root, devs, ndevs, s)) < 0 ||
	    (rc = compile_mig(c, root)) < 0 ||
	    (rc = compile_fabric(c, root, o, s)) < 0)
		return rc;
	if (o->gpu_count_cap > 0 && o->gpu_count_cap < ndevs)
		ndevs = o->gpu_count_cap;
	s->num_devices = ndevs;
	for (int i = 0; i < ndevs; i++)
		s->devices[i] = devs[i].d;
	if ((rc = compile_ib(c, root, o, s)) < 0 ||
	    (rc = compile_cri(c, o, &s->cri)) < 0 ||
	    (rc = compile_imex(c, root, o, s)) < 0 ||
	    (rc = compile_accel(c, root, s)) < 0 ||
	    (rc = compile_sriov(c, root)) < 0 ||
	    (rc = compile_pci_plan(c, root, devs, ndevs, s)) < 0)
		return rc;
	return profile_json(c, root, s);
}

static int compile_all(const char *profile_name, const char *yaml, size_t len,
		       const char *topology_name, const char *topo, size_t topo_len,
		       const struct compile_opts *opts, struct state *out,
		       char *err, size_t errlen)
{
	static const struct compile_opts no_opts;
	struct cctx c = { profile_name ? profile_name : "<profile>", err, errlen, false };
	const struct compile_opts *o = opts ? opts : &no_opts;
	struct dev_build *devs = NULL;
	struct ytree_error ye;
	struct ynode *root = NULL;
	struct state *s;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (len > COMPILE_MAX_INPUT)
		return cc_fail(&c, NULL, "(document)", "profile too large (%zu bytes, at most %u)",
			       len, COMPILE_MAX_INPUT);
	rc = ytree_parse(yaml ? yaml : "", yaml ? len : 0, &root, &ye);
	if (rc < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s:%d:%d: yaml: %s", c.file, ye.line, ye.col, ye.msg);
		return -EINVAL;
	}
	if (ytree_is_null(root)) {
		ytree_free(root);
		return cc_fail(&c, NULL, "(document)", "empty profile");
	}
	s = calloc(1, sizeof(*s));
	devs = calloc(STATE_MAX_DEVICES, sizeof(*devs));
	if (!s || !devs)
		rc = cc_fail(&c, NULL, "(document)", "out of memory");
	else
		rc = compile_tree(&c, root, o, s, devs);
	if (rc == 0 && topo && topo_len) {
		c.file = topology_name ? topology_name : "<topology>";
		rc = compile_topology_doc(&c, topo, topo_len, s->node_name[0] ? s->node_name : NULL,
					  !ytree_is_null(cc_lookup(root, "device_defaults.fabric")), s);
	}
	ytree_free(root);
	free(devs);
	/* The bytes themselves are the engine config the mock NVML reads. */
	if (rc == 0 && !(s->profile_doc = strndup(yaml, len)))
		rc = cc_fail(&c, NULL, "(document)", "out of memory");
	else if (rc == 0)
		s->profile_len = len;
	if (rc == 0 && o->nvidia_smi_src)
		snprintf(s->nvidia_smi_src, sizeof(s->nvidia_smi_src), "%s", o->nvidia_smi_src);
	if (rc < 0) {
		if (s) {
			free(s->topology_doc);
			free(s->profile_json);
			free(s->profile_doc);
		}
		free(s);
		return rc;
	}
	s->generation = out->generation;
	*out = *s;
	free(s);
	return 0;
}

int compile_profile(const char *profile_name, const char *yaml, size_t len,
		    const char *topology_name, const char *topo, size_t topo_len,
		    const struct compile_opts *opts, struct state *out,
		    char *err, size_t errlen)
{
	char *own = NULL;
	size_t olen = 0;
	/* A node of its own (identity.h): the profile with this node's
	 * identities, compiled and staged as the engine config. */
	int rc = identity_apply(profile_name, yaml, len, opts ? opts->node_name : NULL,
				opts && opts->node_identity, &own, &olen, err, errlen);

	if (rc == 0 && own)
		rc = compile_all(profile_name, own, olen, topology_name, topo, topo_len, opts, out,
				 err, errlen);
	/* Without one, or again to report the error at the profile's own
	 * lines (the rewrite drops its comments). */
	if ((rc == 0 && !own) || (rc < 0 && own)) {
		rc = compile_all(profile_name, yaml, len, topology_name, topo, topo_len, opts, out,
				 err, errlen);
		if (rc == 0 && own)
			log_warn("%s: the node's own identities do not compile; kept the "
				 "profile's", profile_name ? profile_name : "<profile>");
	}
	free(own);

	/* A refused profile may have built a tree of YTREE_MAX_NODES nodes
	 * (tens of MB) that is all free now: give it back to the system
	 * rather than keep it for the life of a long-running supervisor. */
	if (rc < 0)
		malloc_trim(0);
	return rc;
}
