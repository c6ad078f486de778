/* The control plane's per-node document into the profile (see
 * controlplane.h).  Both are read with libyaml's document API; the profile
 * is written back with its emitter (comments do not survive; the bytes are
 * only the compiler's and the engine's input). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "profile/controlplane.h"
#include "profile/yaml_doc.h"

/* Plan runtime field -> profile device key, and how its value maps. */
static const struct cp_field {
	const char *section, *key, *path;
	const char *const *from, *const *to;	/* enum/bool names, NULL for ints */
	long min, max;
} fields[] = {
	{ "modes", "persistence", "persistence_mode",
	  (const char *const[]){ "true", "false", NULL },
	  (const char *const[]){ "enabled", "disabled", NULL }, 0, 0 },
	{ "modes", "computeMode", "compute_mode",
	  (const char *const[]){ "Default", "ExclusiveProcess", "Prohibited", NULL },
	  (const char *const[]){ "default", "exclusive_process", "prohibited", NULL }, 0, 0 },
	{ "modes", "ecc", "ecc.mode_current",
	  (const char *const[]){ "true", "false", NULL },
	  (const char *const[]){ "enabled", "disabled", NULL }, 0, 0 },
	{ "telemetry", "drawMilliWatts", "power.current_draw_mw", NULL, NULL, 0, 10000000 },
	{ "telemetry", "temperatureCelsius", "thermal.temperature_gpu_c", NULL, NULL, -50, 200 },
	{ "telemetry", "gpuUtilizationPercent", "utilization.gpu", NULL, NULL, 0, 100 },
	{ "telemetry", "memoryUtilizationPercent", "utilization.memory", NULL, NULL, 0, 100 },
};

static yaml_node_t *get(yaml_document_t *d, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(d, p->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, key))
			return yaml_document_get_node(d, p->value);
	}
	return NULL;
}

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static void add(struct cp_gpu *g, const char *path, const char *value, bool quoted)
{
	struct cp_setting *s = &g->set[g->nset++];

	snprintf(s->path, sizeof(s->path), "%s", path);
	snprintf(s->value, sizeof(s->value), "%s", value);
	s->quoted = quoted;
}

/* One field of runtime.<section>.<key>. */
static int runtime_field(yaml_document_t *d, yaml_node_t *rt, const struct cp_field *f,
			 struct cp_gpu *g, char *err, size_t errlen)
{
	const char *v = scalar(get(d, get(d, rt, f->section), f->key));
	long n;
	int i;

	if (!v)
		return 0;
	if (f->from) {
		for (i = 0; f->from[i] && strcmp(f->from[i], v); i++)
			;
		if (!f->from[i])
			return fail(err, errlen, "spec.gpus[%d].runtime.%s.%s: unknown value \"%s\"",
				    g->index, f->section, f->key, v);
		add(g, f->path, f->to[i], true);
		return 0;
	}
	if (!parse_long(v, f->min, f->max, &n))
		return fail(err, errlen, "spec.gpus[%d].runtime.%s.%s: not an integer in %ld..%ld",
			    g->index, f->section, f->key, f->min, f->max);
	add(g, f->path, v, false);
	return 0;
}

static int parse_gpu(yaml_document_t *d, yaml_node_t *gn, struct cp_gpu *g, char *err,
		     size_t errlen)
{
	const char *uuid = scalar(get(d, gn, "uuid")), *serial = scalar(get(d, gn, "serial"));
	yaml_node_t *rt = get(d, gn, "runtime");
	const char *state = scalar(get(d, get(d, rt, "health"), "state"));
	const char *xid = scalar(get(d, get(d, rt, "health"), "xid"));
	long idx, x = 79;
	int rc;

	if (!parse_long(scalar(get(d, gn, "index")), 0, CP_MAX_GPUS - 1, &idx))
		return fail(err, errlen, "spec.gpus[].index: not 0..%d", CP_MAX_GPUS - 1);
	g->index = (int)idx;
	if (!uuid || strncmp(uuid, "GPU-", 4) || strlen(uuid) >= sizeof(g->uuid) ||
	    strspn(uuid + 4, "0123456789abcdefABCDEF-") != strlen(uuid + 4) || !uuid[4])
		return fail(err, errlen, "spec.gpus[%d].uuid: not GPU-<hex>", g->index);
	if (!serial || !*serial || strlen(serial) >= sizeof(g->serial) ||
	    strspn(serial, "0123456789") != strlen(serial))
		return fail(err, errlen, "spec.gpus[%d].serial: not decimal digits", g->index);
	snprintf(g->uuid, sizeof(g->uuid), "%s", uuid);
	snprintf(g->serial, sizeof(g->serial), "%s", serial);
	if (state && strcmp(state, "Healthy") && strcmp(state, "Failed"))
		return fail(err, errlen, "spec.gpus[%d].runtime.health.state: not Healthy or Failed",
			    g->index);
	if (xid && !parse_long(xid, 0, 65535, &x))
		return fail(err, errlen, "spec.gpus[%d].runtime.health.xid: not 0..65535", g->index);
	if (state && !strcmp(state, "Failed")) {
		char buf[16];

		/* lost to NVML, with its Xid delivered once */
		snprintf(buf, sizeof(buf), "%ld", x);
		add(g, "failure.mode", "lost", true);
		add(g, "failure.xid.code", buf, false);
	}
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
		if ((rc = runtime_field(d, rt, &fields[f], g, err, errlen)) < 0)
			return rc;
	return 0;
}

static int parse_doc(yaml_document_t *d, const char *node, struct cp_plan *out, char *err,
		     size_t errlen)
{
	yaml_node_t *root = yaml_document_get_root_node(d), *gpus;
	const char *kind = scalar(get(d, root, "kind"));
	const char *name = scalar(get(d, get(d, root, "metadata"), "name"));
	int rc;

	if (!kind || strcmp(kind, "SGPUNodeState") || !name || strcmp(name, node))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	snprintf(out->node, sizeof(out->node), "%s", name);
	gpus = get(d, get(d, root, "spec"), "gpus");
	if (!gpus || gpus->type != YAML_SEQUENCE_NODE)
		return fail(err, errlen, "SGPUNodeState %s: spec.gpus: required list", name);
	for (yaml_node_item_t *it = gpus->data.sequence.items.start;
	     it < gpus->data.sequence.items.top; it++) {
		if (out->ngpus == CP_MAX_GPUS)
			return fail(err, errlen, "SGPUNodeState %s: more than %d GPUs", name,
				    CP_MAX_GPUS);
		rc = parse_gpu(d, yaml_document_get_node(d, *it), &out->gpus[out->ngpus], err, errlen);
		if (rc < 0)
			return rc;
		out->ngpus++;
	}
	return 0;
}

int cp_parse(const char *buf, size_t len, const char *node, struct cp_plan *out, char *err,
	     size_t errlen)
{
	yaml_parser_t parser;
	int rc = -ENOENT;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (rc == -ENOENT) {
		yaml_document_t d;

		if (!yaml_parser_load(&parser, &d)) {
			snprintf(err, errlen, "line %zu: %s", parser.problem_mark.line + 1,
				 parser.problem ? parser.problem : "YAML error");
			rc = -EINVAL;
			break;
		}
		if (!yaml_document_get_root_node(&d)) {
			yaml_document_delete(&d);
			break;		/* end of stream */
		}
		rc = parse_doc(&d, node, out, err, errlen);
		yaml_document_delete(&d);
	}
	yaml_parser_delete(&parser);
	if (rc == -ENOENT)
		snprintf(err, errlen, "no SGPUNodeState document for node %s", node);
	return rc;
}

/* ---- merge */

static int add_scalar(yaml_document_t *d, const char *v, bool quoted)
{
	return yaml_document_add_scalar(d, NULL, (yaml_char_t *)v, (int)strlen(v),
					quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
					       : YAML_PLAIN_SCALAR_STYLE);
}

/* The id of map's value for key, added as an empty mapping when absent or
 * not a mapping (a scalar there is replaced). */
static int child_map(yaml_document_t *d, int map, const char *key)
{
	yaml_node_t *m = yaml_document_get_node(d, map);
	int k, v;

	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(d, p->key);

		if (kn->type == YAML_SCALAR_NODE && !strcmp((char *)kn->data.scalar.value, key)) {
			if (yaml_document_get_node(d, p->value)->type == YAML_MAPPING_NODE)
				return p->value;
			/* adding moves the node array, not a mapping's pairs */
			v = yaml_document_add_mapping(d, NULL, YAML_BLOCK_MAPPING_STYLE);
			if (v)
				p->value = v;
			return v;
		}
	}
	k = add_scalar(d, key, false);
	v = yaml_document_add_mapping(d, NULL, YAML_BLOCK_MAPPING_STYLE);
	if (!k || !v || !yaml_document_append_mapping_pair(d, map, k, v))
		return 0;
	return v;
}

/* path "a.b.c" under map: maps a and b, scalar c. */
static int set_path(yaml_document_t *d, int map, const char *path, const char *val, bool quoted)
{
	char buf[64], *dot, *at = buf;

	snprintf(buf, sizeof(buf), "%s", path);
	while ((dot = strchr(at, '.'))) {
		*dot = 0;
		map = child_map(d, map, at);
		if (!map)
			return -ENOMEM;
		at = dot + 1;
	}
	return ydoc_set_scalar(d, map, at, val, quoted);
}

static int merge_device(yaml_document_t *d, int dev, const struct cp_gpu *g)
{
	int rc = set_path(d, dev, "uuid", g->uuid, true);

	rc = rc ?: set_path(d, dev, "serial", g->serial, true);
	for (int i = 0; !rc && i < g->nset; i++)
		rc = set_path(d, dev, g->set[i].path, g->set[i].value, g->set[i].quoted);
	return rc;
}

static int merge_devices(yaml_document_t *d, const struct cp_plan *p, char *err, size_t errlen)
{
	yaml_node_t *root = yaml_document_get_root_node(d), *devs = get(d, root, "devices");
	int n, rc;

	if (!devs || devs->type != YAML_SEQUENCE_NODE)
		return fail(err, errlen, "control plane: the profile has no devices list to apply "
			    "node %s's plan to", p->node);
	n = (int)(devs->data.sequence.items.top - devs->data.sequence.items.start);
	for (int i = 0; i < n; i++) {
		/* re-read: adding nodes may move the document's node array */
		devs = get(d, yaml_document_get_root_node(d), "devices");
		int dev = devs->data.sequence.items.start[i];
		long idx;

		if (!parse_long(scalar(get(d, yaml_document_get_node(d, dev), "index")), 0,
				CP_MAX_GPUS - 1, &idx))
			continue;
		for (int g = 0; g < p->ngpus; g++)
			if (p->gpus[g].index == idx && (rc = merge_device(d, dev, &p->gpus[g])) < 0)
				return rc;
	}
	return 0;
}

int cp_merge_profile(const char *profile, size_t plen, const struct cp_plan *p, char **out,
		     size_t *olen, char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t d;
	const char *why;
	int rc;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)profile, plen);
	if (!yaml_parser_load(&parser, &d)) {
		rc = fail(err, errlen, "profile: line %zu: %s", parser.problem_mark.line + 1,
			  parser.problem ? parser.problem : "YAML error");
		yaml_parser_delete(&parser);
		return rc;
	}
	yaml_parser_delete(&parser);
	rc = merge_devices(&d, p, err, errlen);
	/* the plan's identities are this node's: never derived over again
	 * from the node name (profile/identity.h) */
	if (!rc)
		rc = ydoc_set_scalar(&d, (int)(yaml_document_get_root_node(&d) - d.nodes.start) + 1,
				"node_identity", "pinned", true);
	if (rc < 0) {
		yaml_document_delete(&d);
		return rc;
	}
	rc = ydoc_emit(&d, out, olen, &why);
	if (rc < 0)
		fail(err, errlen, "profile: cannot write the merged profile: %s", why);
	return rc;
}
