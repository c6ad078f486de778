/* kernellog worker: Stage writes the device map the daemon announces by
 * (SURFACES.md §6): per GPU its index, PCI address, UUID and board
 * serial, each checked again here so nothing the profile says can inject
 * text into the kernel log.  The daemon (mokka-kernellog) is described
 * only when a kernel log is configured; Reload = the map rewritten +
 * SIGHUP.  Discard also forgets what was announced (the daemon's state
 * file), so a fresh node starts from nothing, and takes the device map
 * with it under the daemon's lock (kernellog.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/kernellog/kernellog.h"
#include "workers/simulator.h"

static int kl_stage(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	char path[512], *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int r;

	if (!f) {
		sim_error(errs, "device-map", "out of memory");
		return -ENOMEM;
	}
	fputs("# written by mokka-worker-kernellog: index bdf uuid serial\n", f);
	for (int i = 0; i < s->num_devices; i++) {
		const struct state_device *d = &s->devices[i];

		/* The compiler checked the address; UUID and serial are free text
		 * in a profile, and they end up in the kernel log. */
		if (!state_valid_bdf(d->bus_id) || !klog_valid_uuid(d->uuid)) {
			log_warn("GPU %d: PCI address '%s' or UUID '%s' unfit for the kernel log; "
				 "its Xids are not announced", d->index, d->bus_id, d->uuid);
			continue;
		}
		fprintf(f, "%d %s %s %s\n", d->index, d->bus_id, d->uuid,
			d->serial[0] && klog_valid_serial(d->serial) ? d->serial : "-");
	}
	if (fclose(f) != 0) {
		free(text);
		sim_error(errs, "device-map", "out of memory");
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s%s", s->mock_root, KLOG_DEVICES);
	if ((r = host_write(&ctx->host, path, text, len, 0644)) < 0)
		sim_error(errs, path, "write: %s", strerror(-r));
	free(text);
	return r;
}

static int kl_daemon(struct sim_ctx *ctx, const struct state *s, struct ipc_daemon_spec *d,
		     struct sim_errors *errs)
{
	const char *argv[] = {
		"mokka-kernellog", "--mock-root", s->mock_root, "--host-root",
		ctx->host.root[0] ? ctx->host.root : "/", "--kernel-log", s->kernel_log,
	};

	/* No kernel log configured: no daemon (the supervisor stops one). */
	if (!s->kernel_log[0])
		return 0;
	snprintf(d->name, sizeof(d->name), "mokka-kernellog");
	snprintf(d->reload_file, sizeof(d->reload_file), "%s%s", s->mock_root, KLOG_DEVICES);
	for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++)
		if (ipc_daemon_spec_add_arg(d, argv[i]) < 0) {
			sim_error(errs, "daemon", "out of memory");
			return -ENOMEM;
		}
	return 0;
}

/* Under the daemon's lock (R/kernellog): the announced state and the
 * device map go together, so a daemon still running (an orphan) finds no
 * map and writes nothing after this; the manifest removes the rest. */
static int kl_discard(struct sim_ctx *ctx, struct sim_errors *errs)
{
	char path[512], dir[8192];
	const char *what[] = { KLOG_ANNOUNCED, KLOG_DEVICES };
	int r = 0, dfd = -1;

	snprintf(path, sizeof(path), "%s%s", ctx->host.mock_root, KLOG_DIR);
	if (host_path(&ctx->host, path, dir, sizeof(dir)) == 0 &&
	    (dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) >= 0)
		while (flock(dfd, LOCK_EX) < 0 && errno == EINTR)
			;
	for (size_t i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		int u;

		snprintf(path, sizeof(path), "%s%s", ctx->host.mock_root, what[i]);
		if ((u = host_unlink(&ctx->host, path)) < 0) {
			sim_error(errs, path, "unlink: %s", strerror(-u));
			r = r ? r : u;
		}
	}
	if (dfd >= 0)
		close(dfd);
	return r;
}

static const struct simulator kernellog_simulator = {
	.name = "kernellog",
	.roles = SIM_ROLE_STAGE | SIM_ROLE_DAEMON,
	.stage = kl_stage,
	.daemon = kl_daemon,
	.discard = kl_discard,
};

int main(int argc, char **argv)
{
	return worker_main(argc, argv, &kernellog_simulator);
}
