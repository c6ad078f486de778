/* The fabric's remote members, as the relay hears of them: a REGISTER
 * joins or changes a member, the loss of its last connection makes it
 * leave (the fabric is rebuilt after the event batch).  A member's old
 * state stays alive (d->retired) until the rebuild that stops using it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/log.h"
#include "workers/ib/mockib/mockib.h"

struct mib_member *mib_member_find(struct mockib *d, const char *node)
{
	for (struct mib_member *m = d->members; m; m = m->next)
		if (!strcmp(m->node, node))
			return m;
	return NULL;
}

static void retire(struct mockib *d, struct state_ib *ib, char *json)
{
	struct mib_member *old = calloc(1, sizeof(*old));

	if (!old) {
		/* Leaking beats freeing what the live fabric still reads. */
		log_warn("relay: out of memory retiring a member's old state");
		return;
	}
	old->ib = ib;
	old->json = json;
	old->next = d->retired;
	d->retired = old;
}

bool mib_member_refresh(struct mockib *d, const char *node, const uint8_t *json, size_t len)
{
	struct mib_member *m = mib_member_find(d, node);

	return m && m->json_len == len && !memcmp(m->json, json, len);
}

int mib_member_update(struct mockib *d, const char *node, struct state_ib *ib,
		      const uint8_t *json, size_t len, const char *via)
{
	struct mib_member *m;
	char *copy;

	if (mib_member_refresh(d, node, json, len)) {
		free(ib);
		return 0;
	}
	if (!(copy = malloc(len))) {
		free(ib);
		return -ENOMEM;
	}
	memcpy(copy, json, len);
	if (!(m = mib_member_find(d, node))) {
		if (!(m = calloc(1, sizeof(*m)))) {
			free(ib);
			free(copy);
			return -ENOMEM;
		}
		snprintf(m->node, sizeof(m->node), "%s", node);
		m->next = d->members;
		d->members = m;
		log_info("relay: member %s joined the fabric (%d HCA(s), via %s)", node,
			 ib->enabled ? ib->num_hcas : 0, via);
	} else {
		retire(d, m->ib, m->json);
		log_info("relay: member %s changed; rebuilding the fabric", node);
	}
	m->ib = ib;
	m->json = copy;
	m->json_len = len;
	mib_fabric_changed(d);
	mib_relay_members_changed(d);
	return 0;
}

void mib_member_leave(struct mockib *d, const char *node, const char *why)
{
	for (struct mib_member **pp = &d->members; *pp; pp = &(*pp)->next) {
		struct mib_member *m = *pp;

		if (strcmp(m->node, node))
			continue;
		*pp = m->next;
		m->next = d->retired;
		d->retired = m;
		log_info("relay: member %s left the fabric (%s)", node, why);
		mib_fabric_changed(d);
		mib_relay_members_changed(d);
		return;
	}
}

void mib_members_drop_all(struct mockib *d)
{
	while (d->members) {
		struct mib_member *m = d->members;

		d->members = m->next;
		m->next = d->retired;
		d->retired = m;
	}
}
