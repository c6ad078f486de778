/* Simulator rows: what each worker and each daemon may do.  Workers run as
 * root with exactly their row's capabilities (bounding = permitted =
 * effective; inheritable and ambient empty, spawn.c); so do daemons, whose
 * binary the supervisor picks under its own libexecdir. */
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>

#include "supervisor/simtable.h"

/* File work as root.  Workers create and own what they stage (uid 0), so
 * the owner's rights do most of it; DAC_OVERRIDE rewrites read-only files
 * (0444 procfs/sysfs stand-ins) and writes host directories of other
 * modes, FOWNER chmods/utimes host files not created by us.  Nobody
 * chowns, signals another uid or keeps setgid bits: no CHOWN, KILL,
 * FSETID; DAC_READ_SEARCH adds nothing to DAC_OVERRIDE. */
#define FILES CAP_DAC_OVERRIDE, CAP_FOWNER
static const int caps_files[] = { FILES, -1 };
/* gpudriver makes device nodes and bind-mounts /run/nvidia/driver. */
static const int caps_gpudriver[] = { FILES, CAP_MKNOD, CAP_SYS_ADMIN, -1 };
/* cri restarts containerd through the host's systemctl, chrooted into the
 * host root. */
static const int caps_cri[] = { FILES, CAP_SYS_CHROOT, -1 };
/* ib makes the /dev/infiniband nodes, imex the channel devices. */
static const int caps_mknod[] = { FILES, CAP_MKNOD, -1 };

/* Daemons read their config and write markers and sockets in the mock
 * state tree and /dev/kmsg, all root-owned: uid 0 alone suffices. */
static const int caps_none[] = { -1 };
/* mock-ib's relay port comes from the profile and may be below 1024.  Its
 * socket is root:<group> 0660 like /dev/infiniband/umad*, the group from
 * $MOCK_IB_SOCKET_GROUP (inherited from the supervisor's environment):
 * CHOWN sets it, and mock-ib drops CHOWN from its sets right after. */
static const int caps_mockib[] = { CAP_NET_BIND_SERVICE, CAP_CHOWN, -1 };
/* The daemons read MOKKA_LOG_* through the inherited environment; a
 * worker may restate them, nothing else. */
static const char *const env_log[] = { "MOKKA_LOG_LEVEL", "MOKKA_LOG_FORMAT", NULL };

static const struct daemon_def daemons_fm[] = {
	{ "mokka-fabricmanager", 8, env_log, caps_none },
	{ NULL, 0, NULL, NULL },
};
static const struct daemon_def daemons_ib[] = {
	{ "mock-ib", 8, env_log, caps_mockib },
	{ NULL, 0, NULL, NULL },
};
/* mokka-pcifs mounts its FUSE view (mount(2) needs SYS_ADMIN; no setuid
 * fusermount3 under no_new_privs) and detaches a killed instance's stale
 * mount; it reads and writes only root-owned files of the mock tree. */
static const int caps_pcifs[] = { CAP_SYS_ADMIN, -1 };
static const struct daemon_def daemons_pci[] = {
	{ "mokka-pcifs", 8, env_log, caps_pcifs },
	{ NULL, 0, NULL, NULL },
};
/* mokka-nri dials containerd's NRI socket and reads the mock tree, the NRI
 * CDI spec and the staging lock: root-owned files and sockets, uid 0
 * alone suffices. */
static const struct daemon_def daemons_cri[] = {
	{ "mokka-nri", 16, env_log, caps_none },
	{ NULL, 0, NULL, NULL },
};
static const struct daemon_def daemons_kl[] = {
	{ "mokka-kernellog", 10, env_log, caps_none },
	{ NULL, 0, NULL, NULL },
};

const struct sim_def sim_table[] = {
	{ "pcibus", "mokka-worker-pcibus", ROLE_SIM | ROLE_APPLY | ROLE_DAEMON | ROLE_PUBLISH,
	  caps_files, daemons_pci },
	{ "nvlink", "mokka-worker-nvlink", ROLE_SIM | ROLE_PUBLISH, caps_files, NULL },
	{ "fabricmanager", "mokka-worker-fabricmanager", ROLE_SIM | ROLE_DAEMON, caps_files,
	  daemons_fm },
	{ "gpudriver", "mokka-worker-gpudriver", ROLE_SIM | ROLE_APPLY | ROLE_PUBLISH,
	  caps_gpudriver, NULL },
	{ "ib", "mokka-worker-ib", ROLE_SIM | ROLE_DAEMON | ROLE_PUBLISH, caps_mknod, daemons_ib },
	{ "kernellog", "mokka-worker-kernellog", ROLE_SIM | ROLE_DAEMON | ROLE_RELOAD_OVERRIDES,
	  caps_files, daemons_kl },
	/* imex publishes first: its channel directory lies inside gpudriver's
	 * dev generation, whose Publish then carries it into the new one. */
	{ "imex", "mokka-worker-imex", ROLE_SIM | ROLE_STAGE_FIRST | ROLE_PUBLISH, caps_mknod,
	  NULL },
	{ "cri", "mokka-worker-cri",
	  ROLE_SIM | ROLE_APPLY | ROLE_STAGE_FIRST | ROLE_PUBLISH | ROLE_DAEMON, caps_cri,
	  daemons_cri },
};
const size_t sim_table_len = sizeof(sim_table) / sizeof(sim_table[0]);

static const struct daemon_def *find_daemon(const struct sim_def *def, const char *name)
{
	for (const struct daemon_def *d = def->daemons; d && d->name; d++)
		if (strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

static bool env_allowed(const struct daemon_def *dd, const char *kv)
{
	size_t klen = strcspn(kv, "=");

	for (const char *const *k = dd->env_keys; k && *k; k++)
		if (strlen(*k) == klen && strncmp(*k, kv, klen) == 0)
			return true;
	return false;
}

const struct daemon_def *simtable_check_daemon(const struct sim_def *def,
					       const struct ipc_daemon_spec *spec,
					       char *err, size_t errlen)
{
	const struct daemon_def *dd;
	int n = 0;

	if (ipc_daemon_spec_check(spec, err, errlen) < 0)
		return NULL;
	if (!(dd = find_daemon(def, spec->name))) {
		snprintf(err, errlen, "daemon \"%.64s\" is not one simulator %s may start",
			 spec->name, def->name);
		return NULL;
	}
	while (spec->argv[n])
		n++;
	if (n > dd->max_args) {
		snprintf(err, errlen, "daemon %s: %d arguments, the row allows %d", dd->name, n,
			 dd->max_args);
		return NULL;
	}
	for (int i = 0; spec->env[i]; i++)
		if (!env_allowed(dd, spec->env[i])) {
			snprintf(err, errlen, "daemon %s: env key \"%.*s\" is not in the row",
				 dd->name, (int)strcspn(spec->env[i], "="), spec->env[i]);
			return NULL;
		}
	return dd;
}
