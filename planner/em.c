/* libyaml emitter wrapper (see em.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "planner/em.h"

static void emit(struct em *m, yaml_event_t *ev, int ok)
{
	if (m->err)
		return;
	if (!ok) {
		m->err = -ENOMEM;
		return;
	}
	if (!yaml_emitter_emit(&m->e, ev))
		m->err = -EIO;
}

int em_open(struct em *m, FILE *f)
{
	yaml_event_t ev;

	memset(m, 0, sizeof(*m));
	if (!yaml_emitter_initialize(&m->e))
		return -ENOMEM;
	yaml_emitter_set_output_file(&m->e, f);
	yaml_emitter_set_unicode(&m->e, 1);
	yaml_emitter_set_width(&m->e, -1);
	yaml_emitter_set_indent(&m->e, 2);
	emit(m, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	return m->err;
}

int em_close(struct em *m)
{
	yaml_event_t ev;

	emit(m, &ev, yaml_stream_end_event_initialize(&ev));
	if (!m->err && !yaml_emitter_flush(&m->e))
		m->err = -EIO;
	yaml_emitter_delete(&m->e);
	return m->err;
}

void em_doc(struct em *m)
{
	yaml_event_t ev;

	emit(m, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0));
}

void em_doc_end(struct em *m)
{
	yaml_event_t ev;

	emit(m, &ev, yaml_document_end_event_initialize(&ev, 1));
}

void em_map(struct em *m)
{
	yaml_event_t ev;

	emit(m, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
							 YAML_BLOCK_MAPPING_STYLE));
}

void em_seq(struct em *m)
{
	yaml_event_t ev;

	emit(m, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							  YAML_BLOCK_SEQUENCE_STYLE));
}

void em_end_map(struct em *m)
{
	yaml_event_t ev;

	emit(m, &ev, yaml_mapping_end_event_initialize(&ev));
}

void em_end_seq(struct em *m)
{
	yaml_event_t ev;

	emit(m, &ev, yaml_sequence_end_event_initialize(&ev));
}

/* Would a plain scalar read back as something other than this string? */
static bool needs_quotes(const char *s)
{
	static const char *const words[] = { "true", "false", "yes", "no", "on", "off",
		"null", "y", "n", "~", NULL };

	if (!*s || strchr("0123456789+-.", *s))
		return true;
	for (int i = 0; words[i]; i++)
		if (!strcasecmp(s, words[i]))
			return true;
	return false;
}

static void scalar(struct em *m, const char *s, bool plain)
{
	yaml_event_t ev;
	yaml_scalar_style_t style = plain ? YAML_PLAIN_SCALAR_STYLE
		: needs_quotes(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE;

	emit(m, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s,
						  (int)strlen(s), 1, 1, style));
}

void em_str(struct em *m, const char *s)
{
	scalar(m, s, false);
}

void em_int(struct em *m, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	scalar(m, buf, true);
}

void em_kstr(struct em *m, const char *key, const char *val)
{
	if (!val)
		return;
	scalar(m, key, false);
	scalar(m, val, false);
}

void em_kint(struct em *m, const char *key, int64_t v)
{
	scalar(m, key, false);
	em_int(m, v);
}

void em_kbool(struct em *m, const char *key, int v)
{
	scalar(m, key, false);
	scalar(m, v ? "true" : "false", true);
}

void em_kmap(struct em *m, const char *key)
{
	scalar(m, key, false);
	em_map(m);
}

void em_kseq(struct em *m, const char *key)
{
	scalar(m, key, false);
	em_seq(m);
}
