/* Editing a libyaml document in place: the profile rewrites (node
 * identities, profile/identity.c; a control-plane plan,
 * profile/controlplane.c) look up and set scalars by node id, then write
 * the document back out.  Ids, not pointers: adding a node may move the
 * document's node array. */
#ifndef MOKKA_PROFILE_YAML_DOC_H
#define MOKKA_PROFILE_YAML_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

/* The id of map's value for key; 0 when map is not a mapping or lacks key. */
int ydoc_get(yaml_document_t *d, int map, const char *key);

/* Sets map's key to the scalar val (double-quoted when quoted), replacing
 * any value it had.  0 or -ENOMEM. */
int ydoc_set_scalar(yaml_document_t *d, int map, const char *key, const char *val, bool quoted);

/* Writes d as YAML into a new NUL-terminated buffer (*out, *olen) and
 * deletes d, whatever the outcome.  0 or -ENOMEM; *why (may be NULL) gets
 * the emitter's problem. */
int ydoc_emit(yaml_document_t *d, char **out, size_t *olen, const char **why);

#endif
