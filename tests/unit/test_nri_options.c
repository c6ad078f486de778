/* NRI on by default (issue 18): the supervisor's --nri-plugin[=BOOL] and
 * what it derives for mokka-nri (the staging lock, /stagedz's host:port)
 * down to state.cri, and the daemon spec cri makes of it; mokka-nri's own
 * command line (NVIDIA's nvml-mock-nri names, their environment variables,
 * our aliases) and host paths resolved inside the host root. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "nri/nri.h"
#include "profile/compile.h"
#include "supervisor/options.h"
#include "supervisor/simtable.h"
#include "workers/cri/cri.h"

static struct options o;

/* argv = prog, then the NULL-terminated arguments (at most 30); argc. */
static int vargv(char *argv[32], const char *prog, const char *first, va_list ap)
{
	int argc = 1;

	argv[0] = (char *)prog;
	for (const char *a = first; a && argc < 31; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	argv[argc] = NULL;
	return argc;
}

static int sup(const char *first, ...)
{
	char *argv[32];
	va_list ap;
	int argc;

	va_start(ap, first);
	argc = vargv(argv, "mokka-supervisor", first, ap);
	va_end(ap);
	return options_parse(argc, argv, &o);
}

static void compiled(struct state *s)
{
	char err[512];

	state_init(s);
	cr_assert_eq(compile_profile("<built-in>", compile_default_profile,
				     compile_default_profile_len, NULL, NULL, 0, &o.compile, s, err,
				     sizeof(err)), 0, "%s", err);
}

Test(nri_options, supervisor_default_on)
{
	struct state s;

	cr_assert_eq(sup(NULL), 0);
	cr_assert(o.compile.cri_nri, "NRI is on without a flag");
	compiled(&s);
	cr_assert(s.cri.nri);
	cr_assert_str_eq(s.cri.nri_socket, "/var/run/nri/nri.sock");
	cr_assert_str_eq(s.cri.nri_lock, "/run/nvml-mock/nri-staging.lock");
	cr_assert_str_eq(s.cri.nri_stagedz, "127.0.0.1:9091", "the wildcard :9091 on loopback");
	state_free(&s);
	/* the old spelling still means on */
	cr_assert_eq(sup("--nri-plugin", "--nri-socket", "/run/nri/x.sock", NULL), 0);
	cr_assert(o.compile.cri_nri);
	cr_assert_str_eq(o.compile.cri_nri_socket, "/run/nri/x.sock");
}

Test(nri_options, supervisor_opt_out)
{
	struct state s;

	cr_assert_eq(sup("--nri-plugin=false", NULL), 0);
	cr_assert(!o.compile.cri_nri);
	compiled(&s);
	cr_assert(!s.cri.nri, "opted out: no NRI table, no plugin");
	state_free(&s);
	cr_assert_eq(sup("--nri-plugin=true", NULL), 0);
	cr_assert(o.compile.cri_nri);
	cr_redirect_stderr();
	cr_assert_eq(sup("--nri-plugin=maybe", NULL), -EINVAL);
}

Test(nri_options, supervisor_gate_follows_its_flags)
{
	static const struct { const char *addr, *want; } addrs[] = {
		{ "127.0.0.1:7001", "127.0.0.1:7001" }, { "0.0.0.0:7002", "127.0.0.1:7002" },
		{ "[::]:7003", "127.0.0.1:7003" }, { "[::1]:7004", "[::1]:7004" },
		{ "10.1.2.3:7005", "10.1.2.3:7005" },
	};
	struct state s;

	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		cr_assert_eq(sup("--health-addr", addrs[i].addr, NULL), 0);
		cr_assert_str_eq(o.compile.cri_nri_stagedz, addrs[i].want, "%s", addrs[i].addr);
	}
	cr_assert_eq(sup("--staging-lock-path", "", "--host-root", "/tmp/r", NULL), 0);
	compiled(&s);
	cr_assert_str_eq(s.cri.nri_lock, "", "no lock");
	state_free(&s);
	cr_assert_eq(sup("--staging-lock-path", "/run/x/l.lock", NULL), 0);
	compiled(&s);
	cr_assert_str_eq(s.cri.nri_lock, "/run/x/l.lock");
	state_free(&s);
}

/* ---- mokka-nri ---- */

static struct nri_opts n;
static char err[512];

static int nri(const char *first, ...)
{
	char *argv[32];
	va_list ap;
	int argc;

	va_start(ap, first);
	argc = vargv(argv, "mokka-nri", first, ap);
	va_end(ap);
	return nri_parse_opts(argc, argv, &n, err, sizeof(err));
}

static void clear_env(void)
{
	static const char *const names[] = {
		"NRI_SOCKET_PATH", "NRI_PLUGIN_NAME", "NRI_PLUGIN_INDEX",
		"NVML_MOCK_OVERLAY_HOST_PATH", "NVML_MOCK_OVERLAY_MOUNT_PATH",
		"NVML_MOCK_CDI_SPEC_HOST_PATH", "NVML_MOCK_EXCLUDED_NAMESPACES", "NODE_NAME",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
}

Test(nri_options, plugin_defaults, .init = clear_env)
{
	cr_assert_eq(nri(NULL), 0, "%s", err);
	cr_assert_str_eq(n.socket, "/var/run/nri/nri.sock");
	cr_assert_str_eq(n.name, "mokka");
	cr_assert_str_eq(n.idx, "10");
	cr_assert_str_eq(n.lock, "/run/nvml-mock/nri-staging.lock");
	cr_assert_str_eq(n.stagedz, "127.0.0.1:9091");
	cr_assert_str_eq(n.cf.host_root, "");
	cr_assert_str_eq(n.cf.mock_root, "/var/lib/nvml-mock");
	cr_assert_str_eq(n.cf.container_root, "/opt/nvml-mock");
	cr_assert_str_eq(n.cf.cdi_spec, "/var/run/cdi/nvml-mock-nri.yaml");
	cr_assert(!n.once);
}

Test(nri_options, nvidia_names_env_and_aliases, .init = clear_env)
{
	cr_assert_eq(nri("--socket-path", "/run/nri/a.sock", "--plugin-name", "nvml-mock",
			 "--plugin-index", "20", "--overlay-host-path", "/var/lib/m",
			 "--overlay-mount-path", "/opt/m", "--cdi-spec-host-path", "/etc/cdi/x.yaml",
			 "--excluded-namespaces", "a,b", "--node-name", "n1", "--host-root", "/host",
			 "--staging-lock-path", "", "--stagedz-addr", "127.0.0.1:7", "--once",
			 NULL), 0, "%s", err);
	cr_assert_str_eq(n.socket, "/run/nri/a.sock");
	cr_assert_str_eq(n.name, "nvml-mock");
	cr_assert_str_eq(n.idx, "20");
	cr_assert_str_eq(n.cf.mock_root, "/var/lib/m");
	cr_assert_str_eq(n.cf.container_root, "/opt/m");
	cr_assert_str_eq(n.cf.cdi_spec, "/etc/cdi/x.yaml");
	cr_assert_str_eq(n.cf.exclude, "a,b");
	cr_assert_str_eq(n.cf.node_name, "n1");
	cr_assert_str_eq(n.cf.host_root, "/host");
	cr_assert_str_eq(n.lock, "", "an empty lock path is no lock");
	cr_assert_str_eq(n.stagedz, "127.0.0.1:7");
	cr_assert(n.once);
	/* our earlier spellings */
	cr_assert_eq(nri("--socket", "/s.sock", "--name", "x", "--idx", "05", "--mock-root", "/r",
			 "--exclude-namespaces", "c", "--health-port", "9", "--host-root", "/",
			 NULL), 0, "%s", err);
	cr_assert_str_eq(n.socket, "/s.sock");
	cr_assert_str_eq(n.idx, "05");
	cr_assert_str_eq(n.cf.mock_root, "/r");
	cr_assert_str_eq(n.cf.exclude, "c");
	cr_assert_str_eq(n.stagedz, "127.0.0.1:9");
	cr_assert_str_eq(n.cf.host_root, "", "/ is this machine's root");
	/* the environment, under a flag */
	setenv("NRI_SOCKET_PATH", "/env/nri.sock", 1);
	setenv("NRI_PLUGIN_INDEX", "30", 1);
	setenv("NODE_NAME", "node-env", 1);
	cr_assert_eq(nri("--plugin-index", "40", NULL), 0, "%s", err);
	cr_assert_str_eq(n.socket, "/env/nri.sock");
	cr_assert_str_eq(n.idx, "40", "the flag over the environment");
	cr_assert_str_eq(n.cf.node_name, "node-env");
	clear_env();
}

Test(nri_options, plugin_refusals, .init = clear_env)
{
	cr_assert_eq(nri("--plugin-index", "1", NULL), -EINVAL);
	cr_assert(strstr(err, "two digits"), "%s", err);
	cr_assert_eq(nri("--socket-path", "rel.sock", NULL), -EINVAL);
	cr_assert_eq(nri("--staging-lock-path", "rel", NULL), -EINVAL);
	cr_assert_eq(nri("--stagedz-addr", "nocolon", NULL), -EINVAL);
	cr_assert_eq(nri("--bogus", NULL), -EINVAL);
	cr_assert_eq(nri("extra", NULL), -EINVAL);
	cr_assert_eq(nri("--help", NULL), 1);
	cr_assert_eq(nri("--version", NULL), 2);
	char longv[600];
	memset(longv, 'a', sizeof(longv) - 1);
	longv[0] = '/';
	longv[sizeof(longv) - 1] = '\0';
	cr_assert_eq(nri("--socket-path", longv, NULL), -EINVAL);
}

/* Host paths inside the host root: <root>/var/run -> /run is resolved
 * against the root, not this machine's /. */
Test(nri_options, paths_resolved_inside_the_root)
{
	char root[] = "/tmp/mokka-nri-root.XXXXXX", p[4200], sock[108];
	int dirfd;

	cr_assert_not_null(mkdtemp(root));
	snprintf(p, sizeof(p), "mkdir -p %s/run/cdi %s/var && ln -s /run %s/var/run && "
		 "touch %s/run/cdi/s.yaml", root, root, root, root);
	cr_assert_eq(system(p), 0);
	cr_assert(nri_root_exists(root, "/var/run/cdi/s.yaml"));
	cr_assert(!nri_root_exists(root, "/var/run/cdi/none.yaml"));
	cr_assert_eq(nri_root_socket_path(root, "/var/run/nri.sock", sock, sizeof(sock), &dirfd), 0);
	cr_assert_geq(dirfd, 0);
	cr_assert(strncmp(sock, "/proc/self/fd/", 14) == 0, "%s", sock);
	close(dirfd);
	cr_assert_eq(nri_root_socket_path("", "/var/run/nri.sock", sock, sizeof(sock), &dirfd), 0);
	cr_assert_str_eq(sock, "/var/run/nri.sock");
	cr_assert_eq(dirfd, -1);
	snprintf(p, sizeof(p), "rm -rf %s", root);
	cr_assert_eq(system(p), 0);
}

/* The cri simulator describes mokka-nri from the compiled state, and the
 * spec passes cri's row (the supervisor starts nothing else). */

static const struct sim_def *cri_row(void)
{
	for (size_t i = 0; i < sim_table_len; i++)
		if (!strcmp(sim_table[i].name, "cri"))
			return &sim_table[i];
	return NULL;
}

Test(nri_options, cri_describes_mokka_nri_within_its_row)
{
	struct sim_ctx ctx = { 0 };
	struct ipc_daemon_spec d = { 0 };
	struct sim_errors errs = { 0 };
	struct state s;
	char why[512], line[2048] = "";

	cr_assert_eq(sup("--node-name", "node-7", "--health-addr", ":7100", NULL), 0);
	compiled(&s);
	snprintf(ctx.host.root, sizeof(ctx.host.root), "/tmp/r");
	cr_assert_eq(cri_nri_daemon(&ctx, &s, &d, &errs), 0);
	cr_assert_str_eq(d.name, "mokka-nri");
	for (int i = 0; d.argv[i]; i++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s", i ? " " : "",
			 d.argv[i]);
	cr_assert_str_eq(line, "mokka-nri --host-root /tmp/r --socket-path /var/run/nri/nri.sock "
			 "--overlay-host-path /var/lib/nvml-mock --cdi-spec-host-path "
			 "/var/run/cdi/nvml-mock-nri.yaml --staging-lock-path "
			 "/run/nvml-mock/nri-staging.lock --stagedz-addr 127.0.0.1:7100 "
			 "--node-name node-7");
	cr_assert_not_null(cri_row());
	cr_assert_not_null(simtable_check_daemon(cri_row(), &d, why, sizeof(why)), "%s", why);
	ipc_daemon_spec_free(&d);
	state_free(&s);
	/* opted out: no daemon (the supervisor stops a running one) */
	cr_assert_eq(sup("--nri-plugin=false", NULL), 0);
	compiled(&s);
	memset(&d, 0, sizeof(d));
	cr_assert_eq(cri_nri_daemon(&ctx, &s, &d, &errs), 0);
	cr_assert_str_eq(d.name, "");
	cr_assert_null(d.argv[0]);
	state_free(&s);
}
