/* Editing a libyaml document in place (profile/yaml_doc.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/yaml_doc.h"

int ydoc_get(yaml_document_t *d, int map, const char *key)
{
	yaml_node_t *m = map ? yaml_document_get_node(d, map) : NULL;

	if (!m || m->type != YAML_MAPPING_NODE)
		return 0;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(d, p->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, key))
			return p->value;
	}
	return 0;
}

static int add_scalar(yaml_document_t *d, const char *v, bool quoted)
{
	return yaml_document_add_scalar(d, NULL, (yaml_char_t *)v, (int)strlen(v),
					quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
					       : YAML_PLAIN_SCALAR_STYLE);
}

int ydoc_set_scalar(yaml_document_t *d, int map, const char *key, const char *val, bool quoted)
{
	int v = add_scalar(d, val, quoted), k;
	yaml_node_t *m = yaml_document_get_node(d, map);

	if (!v || !m || m->type != YAML_MAPPING_NODE)
		return -ENOMEM;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(d, p->key);

		if (kn->type == YAML_SCALAR_NODE && !strcmp((char *)kn->data.scalar.value, key)) {
			p->value = v;
			return 0;
		}
	}
	k = add_scalar(d, key, false);
	return k && yaml_document_append_mapping_pair(d, map, k, v) ? 0 : -ENOMEM;
}

struct out_buf {
	char *p;
	size_t len, cap;
};

static int write_out(void *arg, unsigned char *buf, size_t size)
{
	struct out_buf *o = arg;

	if (o->len + size + 1 > o->cap) {
		size_t cap = (o->len + size + 1) * 2;
		char *p = realloc(o->p, cap);

		if (!p)
			return 0;
		o->p = p;
		o->cap = cap;
	}
	memcpy(o->p + o->len, buf, size);
	o->len += size;
	o->p[o->len] = '\0';
	return 1;
}

int ydoc_emit(yaml_document_t *d, char **out, size_t *olen, const char **why)
{
	struct out_buf o = { 0 };
	yaml_emitter_t em;
	int ok;

	if (why)
		*why = "out of memory";
	if (!yaml_emitter_initialize(&em)) {
		yaml_document_delete(d);
		return -ENOMEM;
	}
	yaml_emitter_set_output(&em, write_out, &o);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_unicode(&em, 1);
	/* dump takes the document (and deletes it) */
	ok = yaml_emitter_open(&em);
	if (ok)
		ok = yaml_emitter_dump(&em, d) && yaml_emitter_close(&em) && yaml_emitter_flush(&em);
	else
		yaml_document_delete(d);
	if (!ok && why && em.problem)
		*why = em.problem;
	yaml_emitter_delete(&em);
	if (!ok || !o.p) {
		free(o.p);
		return -ENOMEM;
	}
	*out = o.p;
	*olen = o.len;
	return 0;
}
