/* The environment defaults of the profile compiler (profile/env.c): each
 * variable, empty and bad values, and the order they apply in.  Flag over
 * environment is test_options.c's (the supervisor's flags). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "profile/compile.h"
#include "profile/env.h"

static const char *const vars[] = {
	"NODE_NAME", "DRIVER_VERSION", "GPU_COUNT", "MOCK_FABRICMANAGER_STATE_DIR",
	"MOCK_FABRICMANAGER_INIT_DELAY", "MOKKA_NVIDIA_SMI", "MOCK_IB_PING_PORT",
	"MOCK_IB_PEERS", "MOCK_IB_PING_FABRIC", "IMEX_MOCK_CHANNELS", "IMEX_CHANNEL_COUNT",
	"IMEX_CHANNEL_MAJOR", "IMEX_CAPS_MAJOR", "MOKKA_NVIDIA_CAPS_MAJOR",
	"MOKKA_IMEX_ARCHIVE", "MOKKA_IMEX_CHECKSUMS", "MOCK_NVML_KMSG",
};

static void clean(void)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static struct compile_opts co;
static char err[512];

static void read_ok(void)
{
	memset(err, 0, sizeof(err));
	cr_assert_eq(profile_env_read(&co, err, sizeof(err)), 0, "%s", err);
}

/* NAME=value is refused, and the message names both. */
static void refused(const char *name, const char *value)
{
	char want[128];

	clean();
	cr_assert_eq(setenv(name, value, 1), 0);
	err[0] = '\0';
	cr_assert_eq(profile_env_read(&co, err, sizeof(err)), -EINVAL, "%s=%s accepted", name,
		     value);
	snprintf(want, sizeof(want), "$%s: ", name);
	cr_assert(strstr(err, want) == err, "'%s' does not start with '%s'", err, want);
	snprintf(want, sizeof(want), "got '%s'", value);
	cr_assert(strstr(err, want), "'%s' does not quote the value", err);
	unsetenv(name);
}

TestSuite(env, .init = clean, .fini = clean);

Test(env, defaults)
{
	char host[256] = { 0 };

	cr_assert_eq(gethostname(host, sizeof(host) - 1), 0);
	read_ok();
	cr_assert_str_eq(co.node_name, host, "no NODE_NAME: the hostname");
	cr_assert_null(co.driver_version);
	cr_assert_eq(co.gpu_count_cap, 0);
	cr_assert_null(co.fabric_state_dir);
	cr_assert_eq(co.fabric_init_delay_ms, 0);
	cr_assert_eq(co.ib_port, 0);
	cr_assert_null(co.ib_peers);
	cr_assert_null(co.ib_listen);
	cr_assert_null(co.ib_socket, "flags only");
	cr_assert_null(co.mock_root, "flags only");
	cr_assert_null(co.cri_runtime, "flags only");
	cr_assert_not(co.imex_enabled);
	cr_assert_eq(co.imex_channel_count, 2048);
	cr_assert_eq(co.imex_channel_major, 235);
	cr_assert_eq(co.imex_caps_major, 236);
	cr_assert_str_eq(co.imex_archive, "");
	cr_assert_str_eq(co.imex_checksums, "");
	cr_assert_str_eq(co.kernel_log, "/dev/kmsg");
	/* the search: a candidate that is there, or none */
	if (co.nvidia_smi_src)
		cr_assert_eq(access(co.nvidia_smi_src, X_OK), 0, "%s", co.nvidia_smi_src);
}

Test(env, each_variable)
{
	static const struct {
		const char *name, *value;
	} set[] = {
		{ "NODE_NAME", "node-7" }, { "DRIVER_VERSION", "550.54.15" },
		{ "GPU_COUNT", "4" }, { "MOCK_FABRICMANAGER_STATE_DIR", "/run/fm" },
		{ "MOCK_FABRICMANAGER_INIT_DELAY", "1m30s" },
		{ "MOKKA_NVIDIA_SMI", "/opt/nvidia-smi" }, { "MOCK_IB_PING_PORT", "19000" },
		{ "MOCK_IB_PEERS", "a:1,b" }, { "MOCK_IB_PING_FABRIC", "1" },
		{ "IMEX_MOCK_CHANNELS", "TRUE" }, { "IMEX_CHANNEL_COUNT", "16" },
		{ "IMEX_CHANNEL_MAJOR", "240" }, { "IMEX_CAPS_MAJOR", "241" },
		{ "MOKKA_IMEX_ARCHIVE", "/srv/imex.tar.xz" },
		{ "MOKKA_IMEX_CHECKSUMS", "/srv/imex.sha256" }, { "MOCK_NVML_KMSG", "/tmp/kmsg" },
	};

	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		cr_assert_eq(setenv(set[i].name, set[i].value, 1), 0);
	read_ok();
	cr_assert_str_eq(co.node_name, "node-7");
	cr_assert_str_eq(co.driver_version, "550.54.15");
	cr_assert_eq(co.gpu_count_cap, 4);
	cr_assert_str_eq(co.fabric_state_dir, "/run/fm");
	cr_assert_eq(co.fabric_init_delay_ms, 90000);
	cr_assert_str_eq(co.nvidia_smi_src, "/opt/nvidia-smi", "named: no search");
	cr_assert_eq(co.ib_port, 19000);
	cr_assert_str_eq(co.ib_peers, "a:1,b");
	cr_assert_str_eq(co.ib_listen, "0.0.0.0");
	cr_assert(co.imex_enabled);
	cr_assert_eq(co.imex_channel_count, 16);
	cr_assert_eq(co.imex_channel_major, 240);
	cr_assert_eq(co.imex_caps_major, 241);
	cr_assert_str_eq(co.imex_archive, "/srv/imex.tar.xz");
	cr_assert_str_eq(co.imex_checksums, "/srv/imex.sha256");
	cr_assert_str_eq(co.kernel_log, "/tmp/kmsg");
	/* read again: the same (nothing is kept between reads) */
	setenv("MOCK_IB_PING_FABRIC", "0", 1);
	unsetenv("GPU_COUNT");
	read_ok();
	cr_assert_null(co.ib_listen);
	cr_assert_eq(co.gpu_count_cap, 0);
}

Test(env, empty_is_unset_but_kmsg)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		cr_assert_eq(setenv(vars[i], "", 1), 0);
	read_ok();
	cr_assert_neq(co.node_name[0], '\0', "an empty NODE_NAME: the hostname");
	cr_assert_null(co.driver_version);
	cr_assert_null(co.fabric_state_dir);
	cr_assert_eq(co.gpu_count_cap, 0);
	cr_assert_null(co.ib_peers);
	cr_assert_eq(co.imex_channel_count, 2048);
	cr_assert_str_eq(co.kernel_log, "", "an empty MOCK_NVML_KMSG turns announcements off");
}

Test(env, caps_major_order)
{
	/* gpudriver's own variable sets the nvidia-caps major too ... */
	setenv("MOKKA_NVIDIA_CAPS_MAJOR", "250", 1);
	read_ok();
	cr_assert_eq(co.imex_caps_major, 250);
	/* ... and IMEX_CAPS_MAJOR wins over it */
	setenv("IMEX_CAPS_MAJOR", "251", 1);
	read_ok();
	cr_assert_eq(co.imex_caps_major, 251);
}

Test(env, bad_values)
{
	refused("GPU_COUNT", "x");
	refused("GPU_COUNT", "-1");
	refused("GPU_COUNT", "4x");
	refused("MOCK_FABRICMANAGER_INIT_DELAY", "5");
	refused("MOCK_FABRICMANAGER_INIT_DELAY", "-1s");
	refused("MOCK_IB_PING_PORT", "0");
	refused("MOCK_IB_PING_PORT", "65536");
	refused("MOCK_IB_PING_PORT", "port");
	refused("MOCK_IB_PING_FABRIC", "maybe");
	refused("IMEX_MOCK_CHANNELS", "2");
	refused("IMEX_CHANNEL_COUNT", "0");
	refused("IMEX_CHANNEL_COUNT", "2049");
	refused("IMEX_CHANNEL_MAJOR", "4096");
	refused("IMEX_CAPS_MAJOR", "0");
	refused("MOKKA_NVIDIA_CAPS_MAJOR", "99999");
	refused("MOKKA_IMEX_ARCHIVE", "imex.tar.xz");
	refused("MOKKA_IMEX_CHECKSUMS", "/srv/../etc/shadow");
	refused("MOCK_NVML_KMSG", "kmsg");
}

Test(env, compiled_into_the_state)
{
	struct state s;

	setenv("GPU_COUNT", "2", 1);
	setenv("NODE_NAME", "env-node", 1);
	setenv("IMEX_MOCK_CHANNELS", "true", 1);
	setenv("IMEX_CHANNEL_COUNT", "3", 1);
	read_ok();
	state_init(&s);
	cr_assert_eq(compile_profile("<built-in>", compile_default_profile,
				     compile_default_profile_len, NULL, NULL, 0, &co, &s, err,
				     sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.num_devices, 2, "GPU_COUNT caps the built-in 8");
	cr_assert_str_eq(s.node_name, "env-node");
	cr_assert(s.imex.enabled);
	cr_assert_eq(s.imex.channel_count, 3);
	state_free(&s);
}

/* ---- the shared value parsers ---- */

Test(env, parsers_leave_out_alone_on_error)
{
	int n = 7;
	bool b = true;
	const char *p = "keep";

	cr_assert_eq(profile_parse_int("--n", "12", 1, 20, &n, err, sizeof(err)), 0);
	cr_assert_eq(n, 12);
	cr_assert_eq(profile_parse_int("--n", "21", 1, 20, &n, err, sizeof(err)), -EINVAL);
	cr_assert_eq(n, 12);
	cr_assert_str_eq(err, "--n: want an integer 1..20, got '21'");
	cr_assert_eq(profile_parse_int("--n", "", 1, 20, &n, err, sizeof(err)), -EINVAL);
	cr_assert_eq(profile_parse_bool("--b", "Off", &b, err, sizeof(err)), 0);
	cr_assert_not(b);
	cr_assert_eq(profile_parse_bool("--b", "nah", &b, err, sizeof(err)), -EINVAL);
	cr_assert_not(b);
	cr_assert_str_eq(err, "--b: want true or false, got 'nah'");
	cr_assert_eq(profile_parse_path("--p", "", &p, err, sizeof(err)), 0);
	cr_assert_str_eq(p, "");
	cr_assert_eq(profile_parse_path("--p", "/a/../b", &p, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(p, "");
	cr_assert_str_eq(err, "--p: want an absolute path without '..', got '/a/../b'");
}
