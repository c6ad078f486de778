/* mokka-nri as the cri simulator's daemon (SURFACES.md §2.6; the seed's
 * "NRI plugin on, its default"): while state.cri.nri is on, the
 * supervisor runs the plugin with the row's rights (supervisor/simtable.c)
 * and keeps it running; the drop-in (containerd.c) turns containerd's NRI
 * on at the same socket.  Everything the plugin reads is a host path it
 * resolves inside the host root: containerd's NRI socket, the mock tree,
 * the NRI CDI spec, the staging lock; /stagedz is the supervisor's health
 * listener.  NRI off: no daemon, and the supervisor stops a running one. */
#include <errno.h>
#include <stdio.h>

#include "workers/cri/cri.h"

int cri_nri_daemon(struct sim_ctx *ctx, const struct state *s, struct ipc_daemon_spec *d,
		   struct sim_errors *errs)
{
	const struct state_cri *c = &s->cri;
	const char *argv[] = {
		"mokka-nri",
		"--host-root", ctx->host.root[0] ? ctx->host.root : "/",
		"--socket-path", c->nri_socket,
		"--overlay-host-path", s->mock_root,
		"--cdi-spec-host-path", CRI_NRI_SPEC,
		"--staging-lock-path", c->nri_lock,
		"--stagedz-addr", c->nri_stagedz[0] ? c->nri_stagedz : "127.0.0.1:9091",
		"--node-name", s->node_name,
	};

	if (!c->nri)
		return 0;
	snprintf(d->name, sizeof(d->name), "mokka-nri");
	for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++) {
		int r = ipc_daemon_spec_add_arg(d, argv[i]);

		if (r < 0) {
			sim_error(errs, "daemon", "mokka-nri: %s", r == -E2BIG ? "too many arguments" :
				  "out of memory");
			return r;
		}
	}
	return 0;
}
