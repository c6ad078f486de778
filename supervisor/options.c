/* The flags of mokka-supervisor as one table: name, argument kind,
 * destination and --help text.  Each destination starts from its default
 * or its environment variable (profile_env_read, the one place the
 * environment is read), and a flag is written over it: flag > env >
 * default. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/compile.h"
#include "profile/env.h"
#include "supervisor/options.h"

enum kind {
	K_TRUE,		/* no argument: bool set */
	K_STR,		/* const char * */
	K_NODE,		/* the node name: const char *, and the node's own identities */
	K_STR_OR_NULL,	/* const char *, "" = NULL */
	K_NONEMPTY,	/* const char *, "" keeps the default */
	K_ROOT,		/* char[], absolute, trailing slashes stripped */
	K_DURATION,	/* uint64_t ms */
	K_LEVEL,	/* enum log_level */
	K_FORMAT,	/* enum log_format */
	K_SAFE_PATH,	/* const char *, absolute, no ".." */
	K_PORT,		/* int 1..65535 */
	K_BOOL,		/* optional argument: bool, no argument = true */
	K_INT,		/* int lo..hi (profile_parse_int) */
	K_PATH,		/* const char * (profile_parse_path: "" allowed) */
	K_HELP,
	K_VERSION,
};

static const struct flag {
	const char *name;
	const char *arg;	/* --help's name for the argument; "[=X]" is optional */
	enum kind kind;
	size_t off;		/* in struct options */
	const char *help;	/* NULL: not listed on its own */
	long lo, hi;		/* K_INT */
} flags[] = {
#define AT(f) offsetof(struct options, f)
#define CO(f) offsetof(struct options, compile.f)
#define F(n, a, k, o, h) { .name = n, .arg = a, .kind = k, .off = o, .help = h }
#define FI(n, o, h, l, u) { .name = n, .arg = "N", .kind = K_INT, .off = o, .help = h, .lo = l, .hi = u }
	F("foreground", NULL, K_TRUE, AT(foreground),
	  "stay attached (the default; for systemd Type=notify)"),
	F("config", "FILE", K_STR, AT(config),
	  "GPU profile (default: built-in 8x H100 SXM, 2 NUMA nodes)"),
	F("topology", "FILE", K_STR_OR_NULL, AT(topology), "ComputeDomain topology document"),
	F("host-root", "DIR", K_ROOT, AT(host_root), "root that host paths live under (default /)"),
	F("health-addr", "ADDR", K_STR, AT(health_addr), "health/metrics listener (default :9091)"),
	F("resync-interval", "DUR", K_DURATION, AT(resync_ms),
	  "re-read the files regardless (default 1m)"),
	F("shutdown-timeout", "DUR", K_DURATION, AT(shutdown_ms),
	  "teardown budget on SIGTERM (default 8s)"),
	F("log-level", "LEVEL", K_LEVEL, AT(log_level), "error|warn|info|debug (default info)"),
	F("log-format", "FMT", K_FORMAT, AT(log_format), "text|json (default text)"),
	F("node-name", "NAME", K_NODE, CO(node_name), "node name (default $NODE_NAME, else hostname)"),
	F("state-source", "SRC", K_STR, AT(state_source),
	  "controlplane:FILE|DIR: this node's plan (mokka-plan) over the profile"),
	F("simulators", "LIST", K_STR, AT(simulators), "comma-separated subset to run (default: all)"),
	F("staging-lock-path", "PATH", K_PATH, AT(staging_lock),
	  "NRI staging lock, host path (default\n"
	  "                            /run/nvml-mock/nri-staging.lock; empty = none)"),
	F("mock-root", "PATH", K_SAFE_PATH, AT(mock_root),
	  "host path of the mock tree (default /var/lib/nvml-mock)"),
	F("nvidia-smi", "PATH", K_NONEMPTY, CO(nvidia_smi_src),
	  "real nvidia-smi binary to stage (default: search)"),
	F("ib-port", "PORT", K_PORT, CO(ib_port),
	  "mock-ib fabric relay port (default $MOCK_IB_PING_PORT, 18515)"),
	F("ib-peers", "LIST", K_STR, CO(ib_peers),
	  "mock-ib peers, host[:port],... (default $MOCK_IB_PEERS)"),
	F("ib-listen", "ADDR", K_STR, CO(ib_listen),
	  "relay listen address (default 0.0.0.0 with peers or\n"
	  "                            MOCK_IB_PING_FABRIC=1, else off)"),
	F("ib-socket", "PATH", K_SAFE_PATH, CO(ib_socket),
	  "mock-ib socket, host path (default <mock-root>/run/mock-ib.sock)"),
	F("container-runtime", "RT", K_STR, CO(cri_runtime),
	  "containerd|none: set up containerd for CDI (default containerd)"),
	F("container-runtime-restart", "MODE", K_STR, CO(cri_restart),
	  "systemd|none: restart it on change (default systemd)"),
	/* one space more: aligned with the line above */
	F("container-runtime-config", "FILE", K_STR, CO(cri_config),
	  " host path (default /etc/containerd/config.toml)"),
	F("container-runtime-config-dir", "DIR", K_STR, CO(cri_config_dir),
	  "drop-in dir under the config's dir\n"
	  "                            (default /etc/containerd/conf.d)"),
	F("container-runtime-systemd-unit", "UNIT", K_STR, CO(cri_unit),
	  "(default containerd.service)"),
	F("nri-plugin", "[=BOOL]", K_BOOL, CO(cri_nri),
	  "run mokka-nri and enable containerd's NRI for it\n"
	  "                            (default true; =false opts out)"),
	F("nri-socket", "PATH", K_STR, CO(cri_nri_socket),
	  "NRI socket, host path (default /var/run/nri/nri.sock)"),
	F("imex-channels", "[=BOOL]", K_BOOL, CO(imex_enabled),
	  "stage IMEX channel devices (default $IMEX_MOCK_CHANNELS)"),
	FI("imex-channel-count", CO(imex_channel_count),
	   "channels (default $IMEX_CHANNEL_COUNT, 2048)", 1, STATE_IMEX_MAX_CHANNELS),
	FI("imex-channel-major", CO(imex_channel_major),
	   "nvidia-caps-imex-channels major (default 235)", 1, 4095),
	FI("imex-caps-major", CO(imex_caps_major), "nvidia-caps major (default 236)", 1, 4095),
	F("imex-archive", "PATH", K_PATH, CO(imex_archive),
	  "IMEX redist .tar.xz or image directory to stage"),
	F("imex-checksums", "FILE", K_PATH, CO(imex_checksums),
	  "sha256sum list for it (default beside it)"),
	F("feature-gates", "LIST", K_STR, CO(feature_gates),
	  "Name=true|false,... (IMEXDownload: fetch the IMEX archive)"),
	F("imex-download-url", "URL", K_STR, CO(imex_download_url),
	  "IMEXDownload source (default NVIDIA's redist; https\n"
	  "                            only through $https_proxy)"),
	F("imex-download-sha256", "HEX", K_STR, CO(imex_download_sha256),
	  "the archive's pinned sha256 (IMEXDownload needs it)"),
	F("imex-download-version", "VER", K_STR, CO(imex_download_version),
	  "IMEX archive version (default 595.91.07)"),
	F("kernel-log", "PATH", K_PATH, CO(kernel_log),
	  "where injected Xids are announced (default\n"
	  "                            $MOCK_NVML_KMSG, /dev/kmsg; empty = off)"),
	F("help", NULL, K_HELP, 0, NULL),
	F("version", NULL, K_VERSION, 0, NULL),
#undef AT
#undef CO
#undef F
#undef FI
};

#define NFLAGS (sizeof(flags) / sizeof(flags[0]))
#define HELP_COLUMN 26	/* where the help text starts, after "  " */

static void usage(FILE *f)
{
	fputs("Usage: mokka-supervisor [OPTIONS]\n"
	      "Make this node look like an NVIDIA GPU node: parse the desired state and run\n"
	      "one isolated worker per simulator (stage, barrier, daemons, apply).\n\n", f);
	for (size_t i = 0; i < NFLAGS; i++) {
		const struct flag *g = &flags[i];
		char left[64];
		int n;

		if (!g->help)
			continue;
		n = snprintf(left, sizeof(left), "--%s%s%s", g->name,
			     g->arg && g->arg[0] != '[' ? " " : "", g->arg ? g->arg : "");
		/* a long name pushes its text right, two spaces after it */
		fprintf(f, "  %-*s%s%s\n", HELP_COLUMN, left, n >= HELP_COLUMN ? "  " : "", g->help);
	}
	fputs("  --help, --version\n\n"
	      "Health: GET /healthz, /readyz, /metrics on --health-addr.\n", f);
}

static int bad(const struct flag *g, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mokka-supervisor: --%s: ", g->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}

static int set_root(const struct flag *g, const char *arg, char *root, size_t len)
{
	if (arg[0] != '/')
		return bad(g, "'%s' is not an absolute path", arg);
	snprintf(root, len, "%s", arg);
	for (size_t n = strlen(root); n > 0 && root[n - 1] == '/'; n--)
		root[n - 1] = '\0';
	return 0;
}

static int set_port(const struct flag *g, const char *arg, int *port)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (*end || v < 1 || v > 65535)
		return bad(g, "want 1..65535, got '%s'", arg);
	*port = (int)v;
	return 0;
}

/* The profile's parsers say "--name: want ..., got '...'" themselves. */
static int report(int r, const char *err)
{
	if (r < 0)
		fprintf(stderr, "mokka-supervisor: %s\n", err);
	return r;
}

/* One flag into its destination: 0, or -EINVAL with the message printed. */
static int set_flag(struct options *o, const struct flag *g, const char *arg)
{
	void *dst = (char *)o + g->off;
	char what[64], err[512];

	snprintf(what, sizeof(what), "--%s", g->name);
	switch (g->kind) {
	case K_TRUE: *(bool *)dst = true; return 0;
	case K_STR: *(const char **)dst = arg; return 0;
	case K_NODE:
		/* named like $NODE_NAME (NVIDIA's programs take either): a node
		 * of a fleet, its own identities (profile/identity.h) */
		*(const char **)dst = arg;
		o->compile.node_identity = true;
		return 0;
	case K_STR_OR_NULL: *(const char **)dst = *arg ? arg : NULL; return 0;
	case K_NONEMPTY:
		if (*arg)
			*(const char **)dst = arg;
		return 0;
	case K_ROOT: return set_root(g, arg, dst, sizeof(o->host_root));
	case K_DURATION:
		if (parse_duration_ms(arg, dst) < 0)
			return bad(g, "invalid duration '%s' (e.g. 8s, 1m, 500ms)", arg);
		return 0;
	case K_LEVEL:
		if (log_parse_level(arg, dst) < 0)
			return bad(g, "want error|warn|info|debug, got '%s'", arg);
		return 0;
	case K_FORMAT:
		if (log_parse_format(arg, dst) < 0)
			return bad(g, "want text|json, got '%s'", arg);
		return 0;
	case K_SAFE_PATH:
		if (arg[0] != '/' || strstr(arg, ".."))
			return bad(g, "want an absolute path without '..', got '%s'", arg);
		*(const char **)dst = arg;
		return 0;
	case K_PORT: return set_port(g, arg, dst);
	case K_BOOL:
		return report(profile_parse_bool(what, arg ? arg : "true", dst, err, sizeof(err)), err);
	case K_INT:
		return report(profile_parse_int(what, arg, g->lo, g->hi, dst, err, sizeof(err)), err);
	case K_PATH: return report(profile_parse_path(what, arg, dst, err, sizeof(err)), err);
	case K_HELP: usage(stdout); return 1;
	case K_VERSION: printf("mokka-supervisor %s\n", MOKKA_VERSION); return 1;
	}
	return -EINVAL;
}

static void defaults(struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->foreground = true;
	o->health_addr = ":9091";
	o->resync_ms = 60000;
	o->shutdown_ms = 8000;
	o->log_level = LOG_LVL_INFO;
	o->log_format = LOG_FMT_TEXT;
	o->mock_root = "/var/lib/nvml-mock";
	o->staging_lock = "/run/nvml-mock/nri-staging.lock";
}

/* The flags together: the container runtime's (the drop-in directory must
 * lie under the config file's directory, whichever of the two was given),
 * the IMEX majors, no positional arguments. */
static int check(struct options *o, int argc, char **argv)
{
	char err[512];

	options_nri(o);
	if (compile_cri_flags(&o->compile, err, sizeof(err)) < 0)
		return report(-EINVAL, err);
	if (options_imex_check(o) < 0)
		return -EINVAL;
	if (optind < argc) {
		fprintf(stderr, "mokka-supervisor: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return -EINVAL;
	}
	o->compile.mock_root = o->mock_root;
	return 0;
}

int options_parse(int argc, char **argv, struct options *o)
{
	static struct option opts[NFLAGS + 1];
	char err[512];
	int c, r;

	for (size_t i = 0; i < NFLAGS; i++)
		opts[i] = (struct option){
			flags[i].name,
			flags[i].kind == K_BOOL ? optional_argument :
			flags[i].arg ? required_argument : no_argument,
			NULL, 256 + (int)i,
		};
	defaults(o);
	if (profile_env_read(&o->compile, err, sizeof(err)) < 0)
		return report(-EINVAL, err);
	o->compile.cri_nri = true;	/* node-wide injection (NRI), as the seed has it */
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c < 256 || c >= 256 + (int)NFLAGS) {
			usage(stderr);
			return -EINVAL;
		}
		if ((r = set_flag(o, &flags[c - 256], optarg)) != 0)
			return r;
	}
	return check(o, argc, argv);
}
