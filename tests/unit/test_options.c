/* Supervisor flags and Go-style durations. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "profile/compile.h"
#include "supervisor/options.h"

/* ---- parse_duration_ms ---- */

static uint64_t dur(const char *s)
{
	uint64_t ms = 0xdeadbeef;
	int r = parse_duration_ms(s, &ms);

	cr_assert_eq(r, 0, "'%s' rejected", s);
	return ms;
}

static void bad_dur(const char *s)
{
	uint64_t ms = 0xdeadbeef;

	cr_assert_eq(parse_duration_ms(s, &ms), -EINVAL, "'%s' accepted (%lu)", s ? s : "(null)",
		     (unsigned long)ms);
	cr_assert_eq(ms, 0xdeadbeef, "'%s': output written on error", s ? s : "(null)");
}

Test(duration, valid)
{
	cr_assert_eq(dur("1m"), 60000);
	cr_assert_eq(dur("8s"), 8000);
	cr_assert_eq(dur("250ms"), 250);
	cr_assert_eq(dur("1h30m"), 5400000);
	cr_assert_eq(dur("1.5s"), 1500);
	cr_assert_eq(dur("0"), 0);
	cr_assert_eq(dur("0s"), 0);
	cr_assert_eq(dur("1h"), 3600000);
	cr_assert_eq(dur("2m30s"), 150000);
	cr_assert_eq(dur("1m500ms"), 60500);
	cr_assert_eq(dur("1500us"), 1);
	cr_assert_eq(dur(".5s"), 500);
	cr_assert_eq(dur("24h"), 86400000);
}

Test(duration, invalid)
{
	bad_dur(NULL);
	bad_dur("");
	bad_dur("5");
	bad_dur("1x");
	bad_dur("-1s");
	bad_dur("s");
	bad_dur("1s5");
	bad_dur("1s ");
	bad_dur("ms");
	bad_dur("1m-5s");
	bad_dur("nans");
	bad_dur("infs");
	bad_dur("1e400s");
	bad_dur("99999999999h");
}

/* ---- options_parse ---- */

static struct options o;

static int parse(const char *first, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = (char *)"mokka-supervisor";
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *)) {
		cr_assert_lt(argc, 31);
		argv[argc++] = (char *)a;
	}
	va_end(ap);
	argv[argc] = NULL;
	return options_parse(argc, argv, &o);
}

Test(options, defaults)
{
	cr_assert_eq(setenv("NODE_NAME", "node-from-env", 1), 0);
	cr_assert_eq(parse(NULL), 0);
	cr_assert(o.foreground);
	cr_assert_null(o.config);
	cr_assert_null(o.topology);
	cr_assert_str_eq(o.host_root, "");
	cr_assert_str_eq(o.health_addr, ":9091");
	cr_assert_eq(o.resync_ms, 60000);
	cr_assert_eq(o.shutdown_ms, 8000);
	cr_assert_eq(o.log_level, LOG_LVL_INFO);
	cr_assert_eq(o.log_format, LOG_FMT_TEXT);
	cr_assert_str_eq(o.compile.node_name, "node-from-env");
	cr_assert_null(o.simulators);
	cr_assert_str_eq(o.mock_root, "/var/lib/nvml-mock");
}

Test(options, node_name_falls_back_to_hostname)
{
	char host[256] = { 0 };

	cr_assert_eq(gethostname(host, sizeof(host) - 1), 0);
	cr_assert_eq(unsetenv("NODE_NAME"), 0);
	cr_assert_eq(parse(NULL), 0);
	cr_assert_str_eq(o.compile.node_name, host);
	cr_assert(!o.compile.node_identity, "the hostname names no node of a fleet");
	cr_assert_eq(setenv("NODE_NAME", "", 1), 0);
	cr_assert_eq(parse(NULL), 0);
	cr_assert_str_eq(o.compile.node_name, host);
	/* the flag wins over the environment */
	cr_assert_eq(setenv("NODE_NAME", "env", 1), 0);
	cr_assert_eq(parse("--node-name", "flag", NULL), 0);
	cr_assert_str_eq(o.compile.node_name, "flag");
	/* either names a node of its own (profile/identity.h) */
	cr_assert(o.compile.node_identity);
	cr_assert_eq(unsetenv("NODE_NAME"), 0);
	cr_assert_eq(parse("--node-name", "flag", NULL), 0);
	cr_assert(o.compile.node_identity, "--node-name alone: the node's own identities");
}

Test(options, every_flag)
{
	cr_assert_eq(parse("--foreground", "--config", "/etc/mokka/profile.yaml",
			   "--topology", "/etc/mokka/topo.yaml", "--host-root", "/host",
			   "--health-addr", "127.0.0.1:19091", "--resync-interval", "5m",
			   "--shutdown-timeout", "2500ms", "--log-level", "debug",
			   "--log-format", "json", "--node-name", "n1",
			   "--simulators", "pcibus,nvlink", "--mock-root", "/opt/mock", NULL), 0);
	cr_assert(o.foreground);
	cr_assert_str_eq(o.config, "/etc/mokka/profile.yaml");
	cr_assert_str_eq(o.topology, "/etc/mokka/topo.yaml");
	cr_assert_str_eq(o.host_root, "/host");
	cr_assert_str_eq(o.health_addr, "127.0.0.1:19091");
	cr_assert_eq(o.resync_ms, 300000);
	cr_assert_eq(o.shutdown_ms, 2500);
	cr_assert_eq(o.log_level, LOG_LVL_DEBUG);
	cr_assert_eq(o.log_format, LOG_FMT_JSON);
	cr_assert_str_eq(o.compile.node_name, "n1");
	cr_assert_str_eq(o.simulators, "pcibus,nvlink");
	cr_assert_str_eq(o.mock_root, "/opt/mock");
}

Test(options, equals_syntax_and_other_levels)
{
	cr_assert_eq(parse("--log-level=error", "--resync-interval=1h30m", NULL), 0);
	cr_assert_eq(o.log_level, LOG_LVL_ERROR);
	cr_assert_eq(o.resync_ms, 5400000);
	cr_assert_eq(parse("--log-level", "warn", NULL), 0);
	cr_assert_eq(o.log_level, LOG_LVL_WARN);
	cr_assert_eq(parse("--log-level", "info", "--log-format", "text", NULL), 0);
	cr_assert_eq(o.log_level, LOG_LVL_INFO);
	cr_assert_eq(o.log_format, LOG_FMT_TEXT);
	/* the parse starts from defaults every time */
	cr_assert_eq(parse(NULL), 0);
	cr_assert_eq(o.resync_ms, 60000);
}

Test(options, empty_topology_means_none)
{
	cr_assert_eq(parse("--topology", "", NULL), 0);
	cr_assert_null(o.topology);
}

Test(options, host_root)
{
	cr_assert_eq(parse("--host-root", "/srv/root///", NULL), 0);
	cr_assert_str_eq(o.host_root, "/srv/root");
	cr_assert_eq(parse("--host-root", "/", NULL), 0);
	cr_assert_str_eq(o.host_root, "", "'/' is the real root");
	cr_assert_eq(parse("--host-root", "//", NULL), 0);
	cr_assert_str_eq(o.host_root, "");
	cr_assert_eq(parse("--host-root", "relative/dir", NULL), -EINVAL);
	cr_assert_eq(parse("--host-root", "", NULL), -EINVAL);
	cr_assert_eq(parse("--host-root", "./x", NULL), -EINVAL);
}

Test(options, rejects_bad_values)
{
	cr_assert_eq(parse("--log-level", "verbose", NULL), -EINVAL);
	cr_assert_eq(parse("--log-level", "", NULL), -EINVAL);
	cr_assert_eq(parse("--log-level", "DEBUG", NULL), -EINVAL);
	cr_assert_eq(parse("--log-format", "xml", NULL), -EINVAL);
	cr_assert_eq(parse("--resync-interval", "60", NULL), -EINVAL);
	cr_assert_eq(parse("--shutdown-timeout", "-8s", NULL), -EINVAL);
	cr_assert_eq(parse("--mock-root", "var/lib/x", NULL), -EINVAL);
	cr_assert_eq(parse("--mock-root", "/var/../etc", NULL), -EINVAL);
}

Test(options, rejects_bad_usage, .init = cr_redirect_stderr)
{
	cr_assert_eq(parse("--no-such-flag", NULL), -EINVAL);
	cr_assert_eq(parse("positional", NULL), -EINVAL);
	cr_assert_eq(parse("--config", NULL), -EINVAL, "missing argument");
	cr_assert_eq(parse("-x", NULL), -EINVAL);
}

Test(options, help_and_version, .init = cr_redirect_stdout)
{
	cr_assert_eq(parse("--help", NULL), 1);
	cr_assert_eq(parse("--version", NULL), 1);
	fflush(stdout);
	cr_assert_stdout_neq_str("");
}

/* Moved from test_cri.c: the container runtime flags, parsed and compiled
 * into state.cri. */
Test(options, cri_flags_parse_and_compile)
{
	char *argv[] = { "mokka-supervisor", "--container-runtime", "none",
			 "--container-runtime-restart", "none",
			 "--container-runtime-config", "/etc/k/containerd.toml",
			 "--container-runtime-config-dir", "/etc/k/d",
			 "--container-runtime-systemd-unit", "k-containerd.service",
			 "--nri-plugin", "--nri-socket", "/run/nri/x.sock", NULL };
	struct state s;
	char err[512];

	cr_assert_eq(options_parse(14, argv, &o), 0);
	cr_assert_str_eq(o.compile.cri_runtime, "none");
	cr_assert_str_eq(o.compile.cri_config_dir, "/etc/k/d");
	cr_assert(o.compile.cri_nri);
	struct compile_opts co = {
		.cri_runtime = o.compile.cri_runtime, .cri_restart = o.compile.cri_restart,
		.cri_config = o.compile.cri_config, .cri_config_dir = o.compile.cri_config_dir,
		.cri_unit = o.compile.cri_unit, .cri_nri = o.compile.cri_nri,
		.cri_nri_socket = o.compile.cri_nri_socket,
	};
	state_init(&s);
	cr_assert_eq(compile_profile("<built-in>", compile_default_profile,
				     compile_default_profile_len, NULL, NULL, 0, &co, &s, err,
				     sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s.cri.runtime, "none");
	cr_assert_str_eq(s.cri.restart, "none");
	cr_assert_str_eq(s.cri.config, "/etc/k/containerd.toml");
	cr_assert_str_eq(s.cri.systemd_unit, "k-containerd.service");
	cr_assert_str_eq(s.cri.nri_socket, "/run/nri/x.sock");
	cr_assert(s.cri.nri);
	state_free(&s);
	/* defaults */
	struct compile_opts none = { 0 };
	state_init(&s);
	cr_assert_eq(compile_profile("<built-in>", compile_default_profile,
				     compile_default_profile_len, NULL, NULL, 0, &none, &s, err,
				     sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s.cri.runtime, "containerd");
	cr_assert_str_eq(s.cri.restart, "systemd");
	cr_assert_str_eq(s.cri.config, "/etc/containerd/config.toml");
	cr_assert_str_eq(s.cri.config_dir, "/etc/containerd/conf.d");
	cr_assert_str_eq(s.cri.systemd_unit, "containerd.service");
	cr_assert_str_eq(s.cri.nri_socket, "/var/run/nri/nri.sock");
	cr_assert(!s.cri.nri);
	state_free(&s);
}

/* ---- flag > environment > default (the environment: profile/env.c) ---- */

static void clear_env(void)
{
	static const char *const names[] = {
		"NODE_NAME", "MOCK_IB_PING_PORT", "MOCK_IB_PEERS", "MOCK_IB_PING_FABRIC",
		"IMEX_MOCK_CHANNELS", "IMEX_CHANNEL_COUNT", "IMEX_CHANNEL_MAJOR", "IMEX_CAPS_MAJOR",
		"MOKKA_NVIDIA_CAPS_MAJOR", "MOKKA_IMEX_ARCHIVE", "MOKKA_IMEX_CHECKSUMS",
		"MOCK_NVML_KMSG", "MOKKA_NVIDIA_SMI", "GPU_COUNT",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
}

Test(options, flag_over_env_over_default, .init = clear_env)
{
	/* defaults */
	cr_assert_eq(parse(NULL), 0);
	cr_assert_eq(o.compile.ib_port, 0, "0: mock-ib's 18515");
	cr_assert_null(o.compile.ib_peers);
	cr_assert_null(o.compile.ib_listen);
	cr_assert_not(o.compile.imex_enabled);
	cr_assert_eq(o.compile.imex_channel_count, 2048);
	cr_assert_eq(o.compile.imex_channel_major, 235);
	cr_assert_eq(o.compile.imex_caps_major, 236);
	cr_assert_str_eq(o.compile.kernel_log, "/dev/kmsg");
	cr_assert_str_eq(o.compile.mock_root, "/var/lib/nvml-mock");
	/* the environment */
	setenv("MOCK_IB_PING_PORT", "19000", 1);
	setenv("MOCK_IB_PEERS", "a,b:7", 1);
	setenv("MOCK_IB_PING_FABRIC", "1", 1);
	setenv("IMEX_MOCK_CHANNELS", "true", 1);
	setenv("IMEX_CHANNEL_COUNT", "16", 1);
	setenv("MOCK_NVML_KMSG", "", 1);
	setenv("MOKKA_NVIDIA_SMI", "/opt/env/nvidia-smi", 1);
	setenv("GPU_COUNT", "4", 1);
	cr_assert_eq(parse(NULL), 0);
	cr_assert_eq(o.compile.ib_port, 19000);
	cr_assert_str_eq(o.compile.ib_peers, "a,b:7");
	cr_assert_str_eq(o.compile.ib_listen, "0.0.0.0");
	cr_assert(o.compile.imex_enabled);
	cr_assert_eq(o.compile.imex_channel_count, 16);
	cr_assert_str_eq(o.compile.kernel_log, "", "an empty MOCK_NVML_KMSG is off");
	cr_assert_str_eq(o.compile.nvidia_smi_src, "/opt/env/nvidia-smi");
	cr_assert_eq(o.compile.gpu_count_cap, 4);
	/* the flags over it */
	cr_assert_eq(parse("--ib-port", "19001", "--ib-peers", "c", "--ib-listen", "10.0.0.1",
			   "--imex-channels=false", "--imex-channel-count", "8",
			   "--kernel-log", "/tmp/kmsg", "--nvidia-smi", "/opt/flag/nvidia-smi",
			   "--mock-root", "/opt/mock", NULL), 0);
	cr_assert_eq(o.compile.ib_port, 19001);
	cr_assert_str_eq(o.compile.ib_peers, "c");
	cr_assert_str_eq(o.compile.ib_listen, "10.0.0.1");
	cr_assert_not(o.compile.imex_enabled);
	cr_assert_eq(o.compile.imex_channel_count, 8);
	cr_assert_str_eq(o.compile.kernel_log, "/tmp/kmsg");
	cr_assert_str_eq(o.compile.nvidia_smi_src, "/opt/flag/nvidia-smi");
	cr_assert_str_eq(o.compile.mock_root, "/opt/mock");
	/* an empty --nvidia-smi keeps the environment's */
	cr_assert_eq(parse("--nvidia-smi", "", NULL), 0);
	cr_assert_str_eq(o.compile.nvidia_smi_src, "/opt/env/nvidia-smi");
	/* --imex-channels alone is true */
	setenv("IMEX_MOCK_CHANNELS", "false", 1);
	cr_assert_eq(parse("--imex-channels", NULL), 0);
	cr_assert(o.compile.imex_enabled);
	clear_env();
}

Test(options, bad_environment_is_a_usage_error, .init = clear_env)
{
	cr_redirect_stderr();
	setenv("IMEX_CHANNEL_COUNT", "x", 1);
	cr_assert_eq(parse(NULL), -EINVAL);
	/* ... even when a flag would set it: the environment is read first */
	cr_assert_eq(parse("--imex-channel-count", "4", NULL), -EINVAL);
	clear_env();
	setenv("MOCK_IB_PING_PORT", "70000", 1);
	cr_assert_eq(parse(NULL), -EINVAL);
	clear_env();
}

Test(options, flag_values_refused, .init = cr_redirect_stderr)
{
	clear_env();
	cr_assert_eq(parse("--ib-port", "0", NULL), -EINVAL);
	cr_assert_eq(parse("--ib-port", "65536", NULL), -EINVAL);
	cr_assert_eq(parse("--ib-socket", "rel/sock", NULL), -EINVAL);
	cr_assert_eq(parse("--imex-channels=maybe", NULL), -EINVAL);
	cr_assert_eq(parse("--imex-channel-count", "0", NULL), -EINVAL);
	cr_assert_eq(parse("--imex-channel-major", "4096", NULL), -EINVAL);
	cr_assert_eq(parse("--imex-caps-major", "235", NULL), -EINVAL, "equal majors");
	cr_assert_eq(parse("--imex-channel-major", "195", NULL), -EINVAL, "nvidia's major");
	cr_assert_eq(parse("--imex-archive", "rel", NULL), -EINVAL);
	cr_assert_eq(parse("--kernel-log", "/a/../b", NULL), -EINVAL);
	cr_assert_eq(parse("--container-runtime", "docker", NULL), -EINVAL);
}
