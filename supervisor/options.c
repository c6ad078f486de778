#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/compile.h"
#include "supervisor/options.h"

static const struct {
	const char *unit;
	double ms;
} duration_units[] = {
	{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
	{ "us", 0.001 }, { "ns", 0.000001 },
};

int parse_duration_ms(const char *s, uint64_t *ms)
{
	double total = 0;

	if (!s || !*s)
		return -EINVAL;
	if (strcmp(s, "0") == 0) {
		*ms = 0;
		return 0;
	}
	while (*s) {
		char *end;
		double v = strtod(s, &end);
		size_t best = 0;
		double mult = 0;

		if (end == s || !(v >= 0))	/* also NaN */
			return -EINVAL;
		for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
			size_t n = strlen(duration_units[i].unit);
			/* longest match: "ms" before "m" */
			if (strncmp(end, duration_units[i].unit, n) == 0 && n > best) {
				best = n;
				mult = duration_units[i].ms;
			}
		}
		if (!best)
			return -EINVAL;
		total += v * mult;
		s = end + best;
	}
	if (total > 1e12)
		return -EINVAL;
	*ms = (uint64_t)total;
	return 0;
}

const char *options_find_nvidia_smi(const char *flag)
{
	static const char *const candidates[] = {
		MOKKA_PKGDATADIR "/nvidia-smi", "/usr/bin/nvidia-smi",
	};
	const char *env = getenv("MOKKA_NVIDIA_SMI");

	if (flag && *flag)
		return flag;
	if (env && *env)
		return env;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

/* The container runtime flags together (the drop-in directory must lie
 * under the config file's directory, whichever of the two was given). */
static int options_check_cri(const struct options *o)
{
	struct compile_opts co = {
		.cri_runtime = o->cri_runtime, .cri_restart = o->cri_restart,
		.cri_config = o->cri_config, .cri_config_dir = o->cri_config_dir,
		.cri_unit = o->cri_unit, .cri_nri = o->cri_nri,
		.cri_nri_socket = o->cri_nri_socket,
	};
	char err[512];

	if (compile_cri_flags(&co, err, sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "mokka-supervisor: %s\n", err);
	return -EINVAL;
}

static void usage(FILE *f)
{
	fputs("Usage: mokka-supervisor [OPTIONS]\n"
	      "Make this node look like an NVIDIA GPU node: parse the desired state and run\n"
	      "one isolated worker per simulator (stage, barrier, daemons, apply).\n\n"
	      "  --foreground              stay attached (the default; for systemd Type=notify)\n"
	      "  --config FILE             GPU profile (default: built-in 8x H100 SXM, 2 NUMA nodes)\n"
	      "  --topology FILE           ComputeDomain topology document\n"
	      "  --host-root DIR           root that host paths live under (default /)\n"
	      "  --health-addr ADDR        health/metrics listener (default :9091)\n"
	      "  --resync-interval DUR     re-read the files regardless (default 1m)\n"
	      "  --shutdown-timeout DUR    teardown budget on SIGTERM (default 8s)\n"
	      "  --log-level LEVEL         error|warn|info|debug (default info)\n"
	      "  --log-format FMT          text|json (default text)\n"
	      "  --node-name NAME          node name (default $NODE_NAME, else hostname)\n"
	      "  --simulators LIST         comma-separated subset to run (default: all)\n"
	      "  --mock-root PATH          host path of the mock tree (default /var/lib/nvml-mock)\n"
	      "  --nvidia-smi PATH         real nvidia-smi binary to stage (default: search)\n"
	      "  --ib-port PORT            mock-ib fabric relay port (default $MOCK_IB_PING_PORT, 18515)\n"
	      "  --ib-peers LIST           mock-ib peers, host[:port],... (default $MOCK_IB_PEERS)\n"
	      "  --ib-listen ADDR          relay listen address (default 0.0.0.0 with peers or\n"
	      "                            MOCK_IB_PING_FABRIC=1, else off)\n"
	      "  --ib-socket PATH          mock-ib socket, host path (default <mock-root>/run/mock-ib.sock)\n"
	      "  --container-runtime RT    containerd|none: set up containerd for CDI (default containerd)\n"
	      "  --container-runtime-restart MODE  systemd|none: restart it on change (default systemd)\n"
	      "  --container-runtime-config FILE   host path (default /etc/containerd/config.toml)\n"
	      "  --container-runtime-config-dir DIR  drop-in dir under the config's dir\n"
	      "                            (default /etc/containerd/conf.d)\n"
	      "  --container-runtime-systemd-unit UNIT  (default containerd.service)\n"
	      "  --nri-plugin              the NRI plugin is deployed: enable containerd's NRI\n"
	      "  --nri-socket PATH         NRI socket, host path (default /var/run/nri/nri.sock)\n"
	      "  --imex-channels[=BOOL]    stage IMEX channel devices (default $IMEX_MOCK_CHANNELS)\n"
	      "  --imex-channel-count N    channels (default $IMEX_CHANNEL_COUNT, 2048)\n"
	      "  --imex-channel-major N    nvidia-caps-imex-channels major (default 235)\n"
	      "  --imex-caps-major N       nvidia-caps major (default 236)\n"
	      "  --imex-archive PATH       IMEX redist .tar.xz or image directory to stage\n"
	      "  --imex-checksums FILE     sha256sum list for it (default beside it)\n"
	      "  --kernel-log PATH         where injected Xids are announced (default\n"
	      "                            $MOCK_NVML_KMSG, /dev/kmsg; empty = off)\n"
	      "  --help, --version\n\n"
	      "Health: GET /healthz, /readyz, /metrics on --health-addr.\n", f);
}

int options_parse(int argc, char **argv, struct options *o)
{
	enum { O_CONFIG = 256, O_TOPO, O_ROOT, O_HEALTH, O_RESYNC, O_SHUT, O_LVL, O_FMT,
	       O_NODE, O_SIMS, O_MOCK, O_FG, O_HELP, O_VERSION, O_SMI, O_IBPORT, O_IBPEERS,
	       O_IBLISTEN, O_IBSOCK, O_CRT, O_CRTRESTART, O_CRTCONF, O_CRTDIR, O_CRTUNIT,
	       O_NRI, O_NRISOCK, O_IMEX_FIRST };
	static const struct option opts[] = {
		{ "foreground", no_argument, NULL, O_FG },
		{ "config", required_argument, NULL, O_CONFIG },
		{ "topology", required_argument, NULL, O_TOPO },
		{ "host-root", required_argument, NULL, O_ROOT },
		{ "health-addr", required_argument, NULL, O_HEALTH },
		{ "resync-interval", required_argument, NULL, O_RESYNC },
		{ "shutdown-timeout", required_argument, NULL, O_SHUT },
		{ "log-level", required_argument, NULL, O_LVL },
		{ "log-format", required_argument, NULL, O_FMT },
		{ "node-name", required_argument, NULL, O_NODE },
		{ "simulators", required_argument, NULL, O_SIMS },
		{ "mock-root", required_argument, NULL, O_MOCK },
		{ "nvidia-smi", required_argument, NULL, O_SMI },
		{ "ib-port", required_argument, NULL, O_IBPORT },
		{ "ib-peers", required_argument, NULL, O_IBPEERS },
		{ "ib-listen", required_argument, NULL, O_IBLISTEN },
		{ "ib-socket", required_argument, NULL, O_IBSOCK },
		{ "container-runtime", required_argument, NULL, O_CRT },
		{ "container-runtime-restart", required_argument, NULL, O_CRTRESTART },
		{ "container-runtime-config", required_argument, NULL, O_CRTCONF },
		{ "container-runtime-config-dir", required_argument, NULL, O_CRTDIR },
		{ "container-runtime-systemd-unit", required_argument, NULL, O_CRTUNIT },
		{ "nri-plugin", no_argument, NULL, O_NRI },
		{ "nri-socket", required_argument, NULL, O_NRISOCK },
		{ "imex-channels", optional_argument, NULL, O_IMEX_FIRST + OPT_IMEX_CHANNELS },
		{ "imex-channel-count", required_argument, NULL, O_IMEX_FIRST + OPT_IMEX_COUNT },
		{ "imex-channel-major", required_argument, NULL, O_IMEX_FIRST + OPT_IMEX_MAJOR },
		{ "imex-caps-major", required_argument, NULL, O_IMEX_FIRST + OPT_IMEX_CAPS_MAJOR },
		{ "imex-archive", required_argument, NULL, O_IMEX_FIRST + OPT_IMEX_ARCHIVE },
		{ "imex-checksums", required_argument, NULL, O_IMEX_FIRST + OPT_IMEX_CHECKSUMS },
		{ "kernel-log", required_argument, NULL, O_IMEX_FIRST + OPT_KERNEL_LOG },
		{ "help", no_argument, NULL, O_HELP },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->foreground = true;
	o->health_addr = ":9091";
	o->resync_ms = 60000;
	o->shutdown_ms = 8000;
	o->log_level = LOG_LVL_INFO;
	o->log_format = LOG_FMT_TEXT;
	o->mock_root = "/var/lib/nvml-mock";
	if (getenv("NODE_NAME") && *getenv("NODE_NAME"))
		snprintf(o->node_name, sizeof(o->node_name), "%s", getenv("NODE_NAME"));
	else
		gethostname(o->node_name, sizeof(o->node_name) - 1);
	/* The reference's environment, so its chart keeps working. */
	if (getenv("MOCK_IB_PING_PORT"))
		o->ib_port = atoi(getenv("MOCK_IB_PING_PORT"));
	if (getenv("MOCK_IB_PEERS") && *getenv("MOCK_IB_PEERS"))
		o->ib_peers = getenv("MOCK_IB_PEERS");
	if (getenv("MOCK_IB_PING_FABRIC") && !strcmp(getenv("MOCK_IB_PING_FABRIC"), "1"))
		o->ib_listen = "0.0.0.0";

	if (options_imex_defaults(o) < 0)
		return -EINVAL;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_FG: o->foreground = true; break;
		case O_CONFIG: o->config = optarg; break;
		case O_TOPO: o->topology = *optarg ? optarg : NULL; break;
		case O_ROOT:
			if (optarg[0] != '/') {
				fprintf(stderr, "mokka-supervisor: --host-root: '%s' is not an absolute path\n", optarg);
				return -EINVAL;
			}
			snprintf(o->host_root, sizeof(o->host_root), "%s", optarg);
			for (size_t n = strlen(o->host_root); n > 0 && o->host_root[n - 1] == '/'; n--)
				o->host_root[n - 1] = '\0';
			break;
		case O_HEALTH: o->health_addr = optarg; break;
		case O_RESYNC:
		case O_SHUT:
			if (parse_duration_ms(optarg, c == O_RESYNC ? &o->resync_ms : &o->shutdown_ms) < 0) {
				fprintf(stderr, "mokka-supervisor: --%s: invalid duration '%s' (e.g. 8s, 1m, 500ms)\n",
					c == O_RESYNC ? "resync-interval" : "shutdown-timeout", optarg);
				return -EINVAL;
			}
			break;
		case O_LVL:
			if (log_parse_level(optarg, &o->log_level) < 0) {
				fprintf(stderr, "mokka-supervisor: --log-level: want error|warn|info|debug, got '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case O_FMT:
			if (log_parse_format(optarg, &o->log_format) < 0) {
				fprintf(stderr, "mokka-supervisor: --log-format: want text|json, got '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case O_NODE: snprintf(o->node_name, sizeof(o->node_name), "%s", optarg); break;
		case O_SIMS: o->simulators = optarg; break;
		case O_MOCK:
			if (optarg[0] != '/' || strstr(optarg, "..")) {
				fprintf(stderr, "mokka-supervisor: --mock-root: want an absolute path without '..', got '%s'\n", optarg);
				return -EINVAL;
			}
			o->mock_root = optarg;
			break;
		case O_SMI: o->nvidia_smi = optarg; break;
		case O_IBPORT: {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 65535) {
				fprintf(stderr, "mokka-supervisor: --ib-port: want 1..65535, got '%s'\n", optarg);
				return -EINVAL;
			}
			o->ib_port = (int)v;
			break;
		}
		case O_IBPEERS: o->ib_peers = optarg; break;
		case O_IBLISTEN: o->ib_listen = optarg; break;
		case O_IBSOCK:
			if (optarg[0] != '/' || strstr(optarg, "..")) {
				fprintf(stderr, "mokka-supervisor: --ib-socket: want an absolute path without '..', got '%s'\n", optarg);
				return -EINVAL;
			}
			o->ib_socket = optarg;
			break;
		case O_CRT: o->cri_runtime = optarg; break;
		case O_CRTRESTART: o->cri_restart = optarg; break;
		case O_CRTCONF: o->cri_config = optarg; break;
		case O_CRTDIR: o->cri_config_dir = optarg; break;
		case O_CRTUNIT: o->cri_unit = optarg; break;
		case O_NRI: o->cri_nri = true; break;
		case O_NRISOCK: o->cri_nri_socket = optarg; break;
		case O_IMEX_FIRST + OPT_IMEX_CHANNELS ... O_IMEX_FIRST + OPT_KERNEL_LOG:
			if (options_imex_flag(o, (enum options_imex)(c - O_IMEX_FIRST), optarg) < 0)
				return -EINVAL;
			break;
		case O_HELP: usage(stdout); return 1;
		case O_VERSION: printf("mokka-supervisor %s\n", MOKKA_VERSION); return 1;
		default: usage(stderr); return -EINVAL;
		}
	}
	if (options_check_cri(o) < 0)
		return -EINVAL;
	if (options_imex_check(o) < 0)
		return -EINVAL;
	if (optind < argc) {
		fprintf(stderr, "mokka-supervisor: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}
