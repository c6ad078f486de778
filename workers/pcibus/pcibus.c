/* pcibus simulator: Stage renders the state's PCI plan (computed by the
 * profile compiler, expanded by pci_fn.c) as R/sys and R/proc/bus/pci and
 * stages the mockfs shim; Apply writes the NFD feature file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/pcibus/pcibus.h"
#include "workers/pcibus/pcifs/pcifs.h"

/* The mockfs shim travels with the driver root; it is built by another
 * part of the tree, so its absence is a warning, not a Stage failure. */
static int stage_shim(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	char src[4096], dst[512];
	int r;

	if (!ctx->libdir || snprintf(src, sizeof(src), "%s/libmockfs.so", ctx->libdir) >= (int)sizeof(src) ||
	    access(src, R_OK) < 0) {
		log_warn("pcibus: %s/libmockfs.so: not found, shim not staged",
			 ctx->libdir ? ctx->libdir : "(no libdir)");
		return 0;
	}
	snprintf(dst, sizeof(dst), "%s/driver/usr/local/lib/libmockfs.so", s->mock_root);
	if ((r = host_copy_in(&ctx->host, src, dst, 0755)) < 0)
		sim_error(errs, "shim", "pcibus: %s: copy from %s: %s", dst, src, strerror(-r));
	return r;
}

/* The daemon's config; IOMMU comes from the profile (the daemon reads
 * pcie_topology.iommu itself), so this only names what Reload re-reads. */
static int stage_pcifs_conf(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	char conf[512], mnt[512];
	int r;

	/* The mount point is ours (recorded), so Discard removes it once the
	 * daemon has unmounted. */
	snprintf(mnt, sizeof(mnt), "%s" PCIFS_MOUNT, s->mock_root);
	if ((r = host_mkdirs(&ctx->host, mnt, 0755)) < 0) {
		sim_error(errs, "pcifs", "pcibus: %s: mkdir: %s", mnt, strerror(-r));
		return r;
	}
	snprintf(conf, sizeof(conf), "%s" PCIFS_CONF, s->mock_root);
	r = host_writef(&ctx->host, conf, 0644,
			"# written by mokka-worker-pcibus; mokka-pcifs re-reads it on SIGHUP\n"
			"# IOMMU=on|off overrides the profile's pcie_topology.iommu\n");
	if (r < 0)
		sim_error(errs, "pcifs", "pcibus: %s: write: %s", conf, strerror(-r));
	return r;
}

static int pcibus_stage(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct pcibus_plan *p;
	int first = 0;

	/* "/" or a relative R would put the tree over the host's own /sys. */
	if (s->mock_root[0] != '/' || strspn(s->mock_root, "/") == strlen(s->mock_root)) {
		sim_error(errs, "mock_root", "pcibus: mock root \"%s\": not an absolute path "
			  "below /", s->mock_root);
		return -EINVAL;
	}
	if (!(p = malloc(sizeof(*p)))) {
		sim_error(errs, "pcibus", "pcibus: plan: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	pcibus_first_error(&first, pcibus_plan_load(s, p, errs));
	/* Render what could be planned even when a device was refused, so
	 * every error of this pass is reported at once. */
	pcibus_first_error(&first, sysfs_tree_render(&ctx->host, p, errs));
	pcibus_first_error(&first, procfs_render(&ctx->host, p, errs));
	pcibus_first_error(&first, stage_shim(ctx, s, errs));
	pcibus_first_error(&first, stage_pcifs_conf(ctx, s, errs));
	free(p);
	return first;
}

/* mokka-pcifs serves the published tree with the kernel's write semantics
 * at R/run/pcifs; Reload (SIGHUP after each pass) makes it re-read the
 * tree and its config, keeping the node's bindings.  --notify-parent: a
 * GPU leaving or joining nvidia SIGHUPs the supervisor, whose next pass
 * re-renders the CDI spec and the NFD features without it; the write
 * returns once both followed (pcifs/sync.c). */
static int pcibus_daemon(struct sim_ctx *ctx, const struct state *s,
			 struct ipc_daemon_spec *d, struct sim_errors *errs)
{
	const char *argv[] = { "mokka-pcifs", "--mock-root", s->mock_root, "--host-root",
			       ctx->host.root[0] ? ctx->host.root : "/", "--notify-parent" };

	snprintf(d->name, sizeof(d->name), "mokka-pcifs");
	snprintf(d->reload_file, sizeof(d->reload_file), "%s" PCIFS_CONF, s->mock_root);
	for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++)
		if (ipc_daemon_spec_add_arg(d, argv[i]) < 0) {
			sim_error(errs, "daemon", "pcibus: out of memory");
			return -ENOMEM;
		}
	return 0;
}

static int pcibus_apply(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	return nfd_render(&ctx->host, s, errs);
}

/* Revoke is the framework removing what Apply recorded, after nfd_revoke
 * put back a features file that was there before us. */
/* Each swaps as one (workers/generation.h): lspci and NFD list the bus
 * and read the functions' files; a listing shows one generation's
 * functions.  Not R/sys as a whole: gpudriver's module directories live
 * there as its own generations. */
static const char *const pcibus_gens[] = {
	"/sys/bus/pci", "/sys/devices", "/proc/bus/pci", NULL,
};

/* Incremental reconcile (workers/stage_skip.h): Stage reads the state's
 * PCI plan, devices and top-level fields, and copies the mockfs shim in;
 * a Stage that starts reading another section must leave this list. */
static const char *const pcibus_stage_ignores[] = {
	"ib", "fabric", "cri", "imex", "topology_doc", "profile_doc", "profile", NULL,
};

static void pcibus_inputs(struct sim_ctx *ctx, const struct state *s, struct skip_key *k)
{
	char src[4200];

	snprintf(src, sizeof(src), "%s/libmockfs.so", ctx->libdir ? ctx->libdir : ".");
	skip_key_stat(k, src);
}

const struct simulator pcibus_simulator = {
	.name = "pcibus",
	.roles = SIM_ROLE_STAGE | SIM_ROLE_APPLY | SIM_ROLE_DAEMON,
	.stage = pcibus_stage,
	.daemon = pcibus_daemon,
	.apply = pcibus_apply,
	.revoke = nfd_revoke,
	.gens = pcibus_gens,
	.inputs = pcibus_inputs,
	.stage_ignores = pcibus_stage_ignores,
};
