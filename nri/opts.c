/* mokka-nri's command line.  NVIDIA's nvml-mock-nri names come first,
 * with its environment variables as defaults (flag > env > default):
 * --socket-path, --plugin-name, --plugin-index, --overlay-host-path,
 * --overlay-mount-path, --cdi-spec-host-path, --excluded-namespaces,
 * --node-name.  Ours: --host-root (where the host's / is), the staging
 * gate (--staging-lock-path, --stagedz-addr), --once, and the earlier
 * spellings (--socket, --name, --idx, --mock-root, --exclude-namespaces,
 * --health-port) kept as aliases. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nri/nri.h"

#define AT(f) offsetof(struct nri_opts, f)
#define CF(f) (offsetof(struct nri_opts, cf) + offsetof(struct nri_config, f))
#define SZ(f) sizeof(((struct nri_opts *)0)->f)
#define SZC(f) sizeof(((struct nri_config *)0)->f)

/* One string option: its names, environment variable, destination. */
static const struct sopt {
	const char *name, *alias, *env;
	size_t off, size;
} sopts[] = {
	{ "socket-path", "socket", "NRI_SOCKET_PATH", AT(socket), SZ(socket) },
	{ "plugin-name", "name", "NRI_PLUGIN_NAME", AT(name), SZ(name) },
	{ "plugin-index", "idx", "NRI_PLUGIN_INDEX", AT(idx), SZ(idx) },
	{ "overlay-host-path", "mock-root", "NVML_MOCK_OVERLAY_HOST_PATH", CF(mock_root),
	  SZC(mock_root) },
	{ "overlay-mount-path", NULL, "NVML_MOCK_OVERLAY_MOUNT_PATH", CF(container_root),
	  SZC(container_root) },
	{ "cdi-spec-host-path", NULL, "NVML_MOCK_CDI_SPEC_HOST_PATH", CF(cdi_spec),
	  SZC(cdi_spec) },
	{ "excluded-namespaces", "exclude-namespaces", "NVML_MOCK_EXCLUDED_NAMESPACES",
	  CF(exclude), SZC(exclude) },
	{ "node-name", NULL, "NODE_NAME", CF(node_name), SZC(node_name) },
	{ "host-root", NULL, NULL, CF(host_root), SZC(host_root) },
	{ "staging-lock-path", NULL, NULL, AT(lock), SZ(lock) },
	{ "stagedz-addr", NULL, NULL, AT(stagedz), SZ(stagedz) },
};
#define NSOPTS (sizeof(sopts) / sizeof(sopts[0]))
enum { O_HEALTH_PORT = 1000, O_ONCE, O_HELP, O_VERSION };

static const struct nri_opts defaults = {
	.socket = "/var/run/nri/nri.sock", .name = "mokka", .idx = "10",
	.lock = "/run/nvml-mock/nri-staging.lock", .stagedz = "127.0.0.1:9091",
	.cf = { .mock_root = "/var/lib/nvml-mock", .container_root = "/opt/nvml-mock",
		.cdi_spec = "/var/run/cdi/nvml-mock-nri.yaml" },
};

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int set(struct nri_opts *o, const struct sopt *s, const char *v, char *err, size_t errlen)
{
	if (strlen(v) >= s->size)
		return bad(err, errlen, "--%s: '%.64s...' is longer than %zu bytes", s->name, v,
			   s->size - 1);
	memcpy((char *)o + s->off, v, strlen(v) + 1);
	return 0;
}

/* The values together: two-digit index, absolute paths. */
static int check(const struct nri_opts *o, char *err, size_t errlen)
{
	const char *abs[] = { o->socket, o->cf.mock_root, o->cf.container_root, o->cf.cdi_spec };

	if (strlen(o->idx) != 2 || o->idx[0] < '0' || o->idx[0] > '9' || o->idx[1] < '0' ||
	    o->idx[1] > '9')
		return bad(err, errlen, "--plugin-index '%s': want two digits", o->idx);
	for (size_t i = 0; i < sizeof(abs) / sizeof(abs[0]); i++)
		if (abs[i][0] != '/')
			return bad(err, errlen, "'%s' is not an absolute path", abs[i]);
	if (o->lock[0] && o->lock[0] != '/')
		return bad(err, errlen, "--staging-lock-path '%s' is not an absolute path", o->lock);
	if (!strchr(o->stagedz, ':'))
		return bad(err, errlen, "--stagedz-addr '%s': want HOST:PORT", o->stagedz);
	return 0;
}

int nri_parse_opts(int argc, char **argv, struct nri_opts *o, char *err, size_t errlen)
{
	struct option lo[2 * NSOPTS + 5];
	size_t n = 0;
	int ch, r;

	*o = defaults;
	for (size_t i = 0; i < NSOPTS; i++) {
		const char *e = sopts[i].env ? getenv(sopts[i].env) : NULL;

		if (e && *e && (r = set(o, &sopts[i], e, err, errlen)) < 0)
			return r;
		lo[n++] = (struct option){ sopts[i].name, required_argument, NULL, (int)i };
		if (sopts[i].alias)
			lo[n++] = (struct option){ sopts[i].alias, required_argument, NULL, (int)i };
	}
	lo[n++] = (struct option){ "health-port", required_argument, NULL, O_HEALTH_PORT };
	lo[n++] = (struct option){ "once", no_argument, NULL, O_ONCE };
	lo[n++] = (struct option){ "help", no_argument, NULL, O_HELP };
	lo[n++] = (struct option){ "version", no_argument, NULL, O_VERSION };
	lo[n] = (struct option){ 0 };
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (ch >= 0 && ch < (int)NSOPTS)
			r = set(o, &sopts[ch], optarg, err, errlen);
		else if (ch == O_HEALTH_PORT)
			r = (size_t)snprintf(o->stagedz, sizeof(o->stagedz), "127.0.0.1:%s", optarg) <
			    sizeof(o->stagedz) ? 0 : bad(err, errlen, "--health-port: too long");
		else if (ch == O_ONCE)
			o->once = true, r = 0;
		else if (ch == O_HELP || ch == O_VERSION)
			return ch == O_HELP ? 1 : 2;
		else
			r = bad(err, errlen, "unknown option or missing argument: '%s'",
				argv[optind - 1]);
		if (r < 0)
			return r;
	}
	if (optind < argc)
		return bad(err, errlen, "unexpected argument '%s'", argv[optind]);
	/* "/" and "" are both this machine's root */
	if (!strcmp(o->cf.host_root, "/"))
		o->cf.host_root[0] = '\0';
	return check(o, err, errlen);
}
