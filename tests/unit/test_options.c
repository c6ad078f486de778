/* Supervisor flags and Go-style durations. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>

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
	cr_assert_str_eq(o.node_name, "node-from-env");
	cr_assert_null(o.simulators);
	cr_assert_str_eq(o.mock_root, "/var/lib/nvml-mock");
}

Test(options, node_name_falls_back_to_hostname)
{
	char host[256] = { 0 };

	cr_assert_eq(gethostname(host, sizeof(host) - 1), 0);
	cr_assert_eq(unsetenv("NODE_NAME"), 0);
	cr_assert_eq(parse(NULL), 0);
	cr_assert_str_eq(o.node_name, host);
	cr_assert_eq(setenv("NODE_NAME", "", 1), 0);
	cr_assert_eq(parse(NULL), 0);
	cr_assert_str_eq(o.node_name, host);
	/* the flag wins over the environment */
	cr_assert_eq(setenv("NODE_NAME", "env", 1), 0);
	cr_assert_eq(parse("--node-name", "flag", NULL), 0);
	cr_assert_str_eq(o.node_name, "flag");
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
	cr_assert_str_eq(o.node_name, "n1");
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
