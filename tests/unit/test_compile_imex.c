/* IMEX from the profile and the IMEXDownload settings (compile_imex.c):
 * a GB200/GB300 NVL GPU turns IMEX on without a flag, nvlink.multi_node
 * says so explicitly either way, other profiles need the flag; feature
 * gates are parsed strictly; a download needs its pinned sha256. */
#include "compile_fixture.h"

/* HEAD with the GPU name replaced (NULL: HEAD's H100), then tail. */
static int with(const char *name, const char *tail, const struct compile_opts *o)
{
	char yaml[2048];

	if (name)
		snprintf(yaml, sizeof(yaml), "version: \"1.0\"\nsystem:\n  driver_version: "
			 "\"580.65.06\"\ndevice_defaults:\n  name: \"%s\"\n%s%s", name,
			 strstr(HEAD, "  memory:\n"), tail);
	else
		snprintf(yaml, sizeof(yaml), "%s%s", HEAD, tail);
	state_free(&st);
	state_init(&st);
	return compile_str("p.yaml", yaml, o);
}

Test(compile, imex_on_for_nvl_racks_only)
{
	static const struct compile_opts flag = { .imex_enabled = true };

	cr_assert_eq(with("NVIDIA GB200", TWO_DEVICES, NULL), 0, "%s", err);
	cr_assert(st.imex.enabled && st.imex.from_profile);
	cr_assert_eq(with("NVIDIA GB300 NVL", TWO_DEVICES, NULL), 0, "%s", err);
	cr_assert(st.imex.enabled);
	cr_assert_eq(with(NULL, TWO_DEVICES, NULL), 0, "%s", err);
	cr_assert_not(st.imex.enabled, "H100 keeps IMEX off");
	cr_assert_eq(with(NULL, TWO_DEVICES, &flag), 0, "%s", err);
	cr_assert(st.imex.enabled && !st.imex.from_profile);
	cr_assert_eq(with(NULL, TWO_DEVICES "nvlink:\n  multi_node: true\n", NULL), 0, "%s", err);
	cr_assert(st.imex.enabled && st.imex.from_profile);
	cr_assert_eq(with("NVIDIA GB200", TWO_DEVICES "nvlink:\n  multi_node: false\n", NULL), 0);
	cr_assert_not(st.imex.enabled, "multi_node: false wins over the GPU name");
}

Test(compile, imex_download_gate)
{
	struct compile_opts o = { .feature_gates = "IMEXDownload=true",
		.imex_download_sha256 = "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789" };

	cr_assert_eq(with(NULL, TWO_DEVICES, &o), 0, "%s", err);
	cr_assert(st.imex.download);
	cr_assert_str_eq(st.imex.download_sha256,
			 "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
	cr_assert_str_eq(st.imex.download_version, "595.91.07");
	cr_assert(strstr(st.imex.download_url, "/nvidia-imex-linux-"), "%s", st.imex.download_url);
	o.feature_gates = "IMEXDownload=maybe";
	cr_assert_eq(with(NULL, TWO_DEVICES, &o), -EINVAL);
	cr_assert(strstr(err, "want true or false"), "%s", err);
	o.feature_gates = "Bogus=true";
	cr_assert_eq(with(NULL, TWO_DEVICES, &o), -EINVAL);
	cr_assert(strstr(err, "unrecognized feature gate 'Bogus'"), "%s", err);
	o.feature_gates = "IMEXDownload=true";
	o.imex_download_sha256 = NULL;
	cr_assert_eq(with(NULL, TWO_DEVICES, &o), -EINVAL);
	cr_assert(strstr(err, "no pinned sha256"), "%s", err);
	o.imex_download_sha256 = "abc";
	cr_assert_eq(with(NULL, TWO_DEVICES, &o), -EINVAL);
	o.imex_download_sha256 = "0000000000000000000000000000000000000000000000000000000000000000";
	o.imex_download_url = "ftp://x/y";
	cr_assert_eq(with(NULL, TWO_DEVICES, &o), -EINVAL);
	cr_assert(strstr(err, "not an http:// or https:// URL"), "%s", err);
}
