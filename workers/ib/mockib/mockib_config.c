/* mock-ib's configuration (the JSON of state_ib_encode, written by the ib
 * worker) and the fabric built from it plus the relay's members. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio/fileio.h"
#include "ipc/log.h"
#include "workers/ib/mockib/mockib.h"

#define CONFIG_MAX (8u << 20)

int mib_config_load(const char *host_root, const char *path, char *node, struct state_ib *ib,
		    char **json, size_t *json_len, char *err, size_t errlen)
{
	char full[PATH_MAX * 2];
	char *buf;
	size_t len;
	int r;

	if ((size_t)snprintf(full, sizeof(full), "%s%s", host_root, path) >= sizeof(full)) {
		snprintf(err, errlen, "%s%s: path too long", host_root, path);
		return -ENAMETOOLONG;
	}
	if ((r = fileio_read(full, CONFIG_MAX, &buf, &len, NULL, 0)) < 0) {
		r = r == -EISDIR ? -EINVAL : r;	/* not a file: no config */
		snprintf(err, errlen, "%s: cannot read: %s", full, strerror(-r));
		return r;
	}
	if ((r = state_ib_decode(buf, len, node, ib, err, errlen)) < 0) {
		char why[256];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s: %s", full, why);
		free(buf);
		return r;
	}
	if (!node[0]) {
		snprintf(err, errlen, "%s: node_name is empty", full);
		free(buf);
		return -EINVAL;
	}
	if (!ib->enabled)
		log_warn("%s: infiniband is disabled in the profile; serving no HCAs", full);
	if (json) {
		*json = buf;
		*json_len = len;
	} else {
		free(buf);
	}
	return 0;
}

const char *mib_ca_owner(const struct mockib *d, int ca)
{
	if (!d->fab_ok || ca < 0 || ca >= d->fab.ncas)
		return NULL;
	return d->fab_members[d->fab.cas[ca].member].node;
}

int mib_fabric_rebuild(struct mockib *d)
{
	struct ib_fabric nf;
	struct ib_member *m;
	int n = 1, i = 1, r;

	d->fab_dirty = false;	/* a failed build is not retried in a loop */
	for (struct mib_member *p = d->members; p; p = p->next)
		n++;
	if (!(m = calloc((size_t)n, sizeof(*m))))
		return -ENOMEM;
	snprintf(m[0].node, sizeof(m[0].node), "%s", d->node);
	m[0].ib = d->ib;
	m[0].local = true;
	for (struct mib_member *p = d->members; p; p = p->next, i++) {
		snprintf(m[i].node, sizeof(m[i].node), "%s", p->node);
		m[i].ib = p->ib;
	}
	memset(&nf, 0, sizeof(nf));
	if ((r = ib_fabric_build(&nf, m, n)) < 0) {
		log_error("fabric: build from %d member(s) failed: %s; keeping the old one", n,
			  strerror(-r));
		free(m);
		return r;
	}
	if (d->fab_ok)
		ib_fabric_free(&d->fab);
	free(d->fab_members);
	d->fab = nf;
	d->fab_ok = true;
	d->fab_members = m;
	d->fab_nmembers = n;
	d->fab_gen++;
	/* Members that left are referenced by no fabric any more. */
	while (d->retired) {
		struct mib_member *p = d->retired;

		d->retired = p->next;
		free(p->ib);
		free(p->json);
		free(p);
	}
	d->fab_built = mib_now_ms();
	log_info("fabric: %d member(s), %d CA(s), %d switch(es)", n, nf.ncas, nf.nsws);
	return 0;
}

void mib_fabric_changed(struct mockib *d)
{
	d->fab_dirty = true;
}

int mib_fabric_flush(struct mockib *d)
{
	return d->fab_dirty ? mib_fabric_rebuild(d) : 0;
}

/* SIGHUP: re-read the config, keep the sessions, rebuild the fabric. */
int mib_reload(struct mockib *d)
{
	char node[STATE_NAME_MAX], err[512], *json = NULL;
	struct state_ib *ib = calloc(1, sizeof(*ib)), *old;
	size_t len = 0;
	bool relay_changed, sock_changed;
	int r;

	if (!ib)
		return -ENOMEM;
	if ((r = mib_config_load(d->host_root, d->conf_path, node, ib, &json, &len, err,
				 sizeof(err))) < 0) {
		log_warn("reload: %s; keeping the old config", err);
		free(ib);
		return r;
	}
	if (strcmp(node, d->node) != 0)
		log_warn("reload: node name changed from '%s' to '%s'", d->node, node);
	relay_changed = strcmp(ib->listen, d->ib->listen) || strcmp(ib->peers, d->ib->peers) ||
			ib->tcp_port != d->ib->tcp_port || strcmp(node, d->node);
	sock_changed = strcmp(ib->socket, d->ib->socket) != 0;
	if (relay_changed)
		mib_relay_stop(d);
	old = d->ib;
	d->ib = ib;
	snprintf(d->node, sizeof(d->node), "%s", node);
	free(d->reg_json);
	d->reg_json = json;
	d->reg_len = len;
	/* The fabric points into the old state: rebuild before freeing it. */
	r = mib_fabric_rebuild(d);
	if (r < 0) {
		d->ib = old;
		free(ib);
		return r;
	}
	free(old);
	if (sock_changed) {
		mib_listen_close(d);
		if (mib_listen_open(d) < 0)
			log_error("reload: new socket %s%s not opened; clients cannot connect",
				  d->host_root, d->ib->socket);
	}
	/* Sessions whose HCA went away are closed, as a hot-unplug would. */
	for (struct mib_session *s = d->sessions; s; s = s->next)
		if (!s->dead && s->kind != MOCKIB_KIND_NETLINK && mib_session_ca(s) < 0)
			mib_session_close(s, "its HCA is gone after the reload");
	if (relay_changed)
		mib_relay_start(d);
	else
		mib_relay_announce(d);
	log_info("reloaded: node %s, %d HCA(s), socket %s", d->node, d->ib->num_hcas,
		 d->sock_path);
	return 0;
}
