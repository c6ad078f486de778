/* The engine over the compiled profile image (shims/nvml/engine_image.c):
 * an image compiled from config.yaml's very bytes is what the engine
 * reads (proved with an image whose trees say something else), a stale,
 * corrupt or foreign image falls back to parsing, and a config.yaml that
 * changes under an initialised engine reaches the same handles at the
 * overrides' one-second check, while a bad one leaves the last good
 * configuration in force. */
#include "tests/unit/nvml_engine_fixture.h"
#include "nvimage/nvimage.h"

TestSuite(nvml_engine_image, .init = setup, .fini = teardown);

static void put_bytes(const char *name, const char *buf, size_t len)
{
	char part[600];
	FILE *f;

	snprintf(part, sizeof(part), "%s.tmp", at(name));
	cr_assert_not_null(f = fopen(part, "wb"));
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	cr_assert_eq(rename(part, at(name)), 0);
}

/* An image of what's profile, naming src's bytes as its source. */
static void put_image(const char *src, const char *what)
{
	struct yl_error err;
	struct yl_node *p = yl_parse(what, strlen(what), &err), *trees[8] = { p };
	size_t n = yl_get(p, "devices")->n, len;
	char *img;

	cr_assert_lt(n, 8);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(nvi_device_base(p, i, &trees[i + 1]), 0);
	cr_assert_eq(nvi_encode((const struct yl_node *const *)trees, n + 1, src, strlen(src),
				&img, &len), 0);
	put_bytes(NVI_NAME, img, len);
	free(img);
	for (size_t i = 0; i <= n; i++)
		yl_free(trees[i]);
}

static char *with_temp(unsigned t)
{
	static char buf[sizeof(base_profile) + 16];
	char *p;

	snprintf(buf, sizeof(buf), "%s", base_profile);
	p = strstr(buf, "temperature_gpu_c: 30");
	cr_assert_not_null(p);
	p[19] = (char)('0' + t / 10), p[20] = (char)('0' + t % 10);
	return buf;
}

Test(nvml_engine_image, the_image_is_what_is_read)
{
	char cfg[sizeof(base_profile) + 16];

	snprintf(cfg, sizeof(cfg), "%s", with_temp(30));
	put("config.yaml", cfg);
	put_image(cfg, with_temp(44));	/* the same bytes named, other trees */
	init_ok();
	cr_assert_eq(u64(engine_device(0), "thermal.temperature_gpu_c"), 44);
	cr_assert_str_eq(str(engine_device(0), "name"), "Special GPU");
	engine_shutdown();

	put("config.yaml", with_temp(31));	/* the image names other bytes: parsed */
	init_ok();
	cr_assert_eq(u64(engine_device(0), "thermal.temperature_gpu_c"), 31);
	engine_shutdown();
}

Test(nvml_engine_image, a_bad_image_is_parsed_around)
{
	char cfg[sizeof(base_profile) + 16], *img;
	size_t len;

	snprintf(cfg, sizeof(cfg), "%s", with_temp(35));
	put("config.yaml", cfg);
	char why[200];

	cr_assert_eq(nvi_compile(cfg, strlen(cfg), &img, &len, why, sizeof(why)), 0, "%s", why);
	img[len - 2] ^= 0x55;	/* the checksum no longer matches */
	put_bytes(NVI_NAME, img, len);
	init_ok();
	cr_assert_eq(u64(engine_device(0), "thermal.temperature_gpu_c"), 35);
	engine_shutdown();
	put_bytes(NVI_NAME, img, 10);	/* cut short */
	init_ok();
	cr_assert_eq(u64(engine_device(1), "thermal.temperature_gpu_c"), 35);
	engine_shutdown();
	free(img);
}

Test(nvml_engine_image, a_new_config_reaches_an_initialised_engine)
{
	put("config.yaml", with_temp(30));
	init_ok();
	struct mdev *d = engine_device(0);
	const char *uuid = mdev_uuid(d), *name = str(d, "name");

	cr_assert_eq(u64(d, "thermal.temperature_gpu_c"), 30);
	put("config.yaml", with_temp(62));
	put_image(with_temp(62), with_temp(62));
	usleep(1100 * 1000);
	cr_assert_eq(u64(d, "thermal.temperature_gpu_c"), 62, "seen at the next call");
	cr_assert_eq(engine_device(0), d, "handles stay put");
	cr_assert_str_eq(mdev_uuid(d), uuid);
	cr_assert_str_eq(name, "Special GPU", "strings handed out survive a reload");

	put("config.yaml", "devices: [\n");	/* bad: the last good one stays */
	usleep(1100 * 1000);
	cr_assert_eq(u64(d, "thermal.temperature_gpu_c"), 62);
	cr_assert_eq(engine_device_count(), 3);
}
