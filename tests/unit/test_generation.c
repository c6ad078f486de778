/* Generational surfaces (workers/generation.c, host.h): while staging a
 * write goes to the shadow and the manifest names the live path; publish
 * swaps shadow and live, the previous generation becoming the next base;
 * converge drops from the shadow what the Stage did not write; another
 * simulator's entries in a shared surface survive the swap (and so does a
 * surface nested in another, published first); a surface of ours not
 * staged is withdrawn; remove_all leaves nothing. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "workers/generation.h"
#include "workers/host.h"
#include "workers/manifest.h"

#define R "/var/lib/nvml-mock"

static const char *const gens[] = { "/driver/dev", "/driver/config/config.yaml", NULL };
static char tmp[256];
static struct host h;
static struct manifest own, all;	/* this Stage's; every Stage's (the worker's old + cur) */

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/mokka-test-gen.XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	memset(&h, 0, sizeof(h));
	snprintf(h.root, sizeof(h.root), "%s", tmp);
	snprintf(h.mock_root, sizeof(h.mock_root), R);
	manifest_init(&own);
	manifest_init(&all);
	h.own = &own;
	umask(022);
	cr_assert_eq(gen_prepare(&h, "sim", gens, true), 0);
}

static void teardown(void)
{
	manifest_free(&own);
	manifest_free(&all);
	if (tmp[0])
		nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(generation, .init = setup, .fini = teardown);

static const char *F(const char *p)
{
	static char buf[4][4200];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s%s", tmp, p);
	return buf[i];
}

static const char *content(const char *p)
{
	static char buf[256];
	int fd = open(F(p), O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* One Stage: write each "name=text" under dev/ and config.yaml, then
 * converge like the worker does. */
static void stage(const char *cfg, const char *const *files)
{
	char path[256];

	manifest_free(&own);
	h.staging = true;
	cr_assert_eq(host_writef(&h, R "/driver/config/config.yaml", 0644, "%s", cfg), 0);
	for (int i = 0; files[i]; i += 2) {
		snprintf(path, sizeof(path), R "/driver/dev/%s", files[i]);
		cr_assert_eq(host_writef(&h, path, 0644, "%s", files[i + 1]), 0);
	}
	h.staging = false;
	cr_assert_eq(gen_converge(&h, &own), 0);
	for (size_t i = 0; i < own.n; i++)
		manifest_add(&all, own.paths[i], own.kinds[i]);
}

static void publish(void)
{
	char err[512] = "";

	cr_assert_eq(gen_publish(&h, &all, err, sizeof(err)), 0, "%s", err);
}

Test(generation, staging_writes_the_shadow_and_records_the_live_path)
{
	h.staging = true;
	cr_assert_eq(host_writef(&h, R "/driver/dev/nvidia0", 0644, "n0"), 0);
	cr_assert_eq(host_writef(&h, R "/driver/config/overrides.yaml", 0644, "o"), 0);
	h.staging = false;
	cr_assert_str_eq(content(R HOST_SHADOW_DIR "/sim/driver/dev/nvidia0"), "n0");
	cr_assert_null(content(R "/driver/dev/nvidia0"), "a staged file is live before publish");
	cr_assert(manifest_has(&own, R "/driver/dev/nvidia0"));
	cr_assert(manifest_has(&own, R "/driver/dev"));
	cr_assert_str_eq(content(R "/driver/config/overrides.yaml"), "o", "no generation's");
	cr_assert_eq(host_gen_of(&h, R "/driver/dev"), 0);
	cr_assert_eq(host_gen_of(&h, R "/driver/device"), -1);
	cr_assert_eq(host_gen_of(&h, R "/driver/config/config.yaml"), 1);
	cr_assert_eq(host_gen_of(&h, R "/driver/config/config.yaml.x"), -1);
}

Test(generation, publish_swaps_and_the_previous_generation_waits_in_the_shadow)
{
	stage("gen1", (const char *const[]){ "nvidia0", "a1", NULL });
	publish();
	cr_assert_str_eq(content(R "/driver/config/config.yaml"), "gen1");
	cr_assert_str_eq(content(R "/driver/dev/nvidia0"), "a1");
	stage("gen2", (const char *const[]){ "nvidia0", "a2", "nvidia1", "b2", NULL });
	cr_assert_str_eq(content(R "/driver/config/config.yaml"), "gen1", "staged, not published");
	cr_assert_str_eq(content(R "/driver/dev/nvidia0"), "a1");
	cr_assert_null(content(R "/driver/dev/nvidia1"));
	publish();
	cr_assert_str_eq(content(R "/driver/config/config.yaml"), "gen2");
	cr_assert_str_eq(content(R "/driver/dev/nvidia0"), "a2");
	cr_assert_str_eq(content(R "/driver/dev/nvidia1"), "b2");
	cr_assert_str_eq(content(R HOST_SHADOW_DIR "/sim/driver/config/config.yaml"), "gen1");
	cr_assert_str_eq(content(R HOST_SHADOW_DIR "/sim/driver/dev/nvidia0"), "a1");
}

Test(generation, converge_drops_what_the_stage_did_not_write)
{
	stage("gen1", (const char *const[]){ "nvidia0", "a", "nvidia1", "b", NULL });
	publish();
	stage("gen2", (const char *const[]){ "nvidia0", "a", "nvidia1", "b", NULL });
	publish();
	/* a killed writer's temp file in the shadow goes too */
	int fd = open(F(R HOST_SHADOW_DIR "/sim/driver/dev/nvidia0.mokka-tmp.1"),
		      O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	stage("gen3", (const char *const[]){ "nvidia0", "a", NULL });
	cr_assert_null(content(R HOST_SHADOW_DIR "/sim/driver/dev/nvidia1"));
	cr_assert_null(content(R HOST_SHADOW_DIR "/sim/driver/dev/nvidia0.mokka-tmp.1"));
	cr_assert_str_eq(content(R "/driver/dev/nvidia1"), "b", "live until publish");
	publish();
	cr_assert_null(content(R "/driver/dev/nvidia1"));
	cr_assert_str_eq(content(R "/driver/dev/nvidia0"), "a");
}

Test(generation, another_simulators_entries_survive_the_swap)
{
	stage("gen1", (const char *const[]){ "nvidia0", "a", NULL });
	publish();
	/* IMEX's channel nodes, written live beside ours */
	cr_assert_eq(mkdir(F(R "/driver/dev/imex-channels"), 0755), 0);
	int fd = open(F(R "/driver/dev/imex-channels/channel0"), O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "c0", 2), 2);
	close(fd);
	stage("gen2", (const char *const[]){ "nvidia0", "a2", NULL });
	publish();
	cr_assert_str_eq(content(R "/driver/dev/nvidia0"), "a2");
	cr_assert_str_eq(content(R "/driver/dev/imex-channels/channel0"), "c0");
}

Test(generation, remove_all_leaves_nothing)
{
	struct stat st;

	stage("gen1", (const char *const[]){ "nvidia0", "a", NULL });
	publish();
	stage("gen2", (const char *const[]){ "nvidia0", "b", NULL });
	cr_assert_eq(gen_remove_all(&h), 0);
	cr_assert_neq(lstat(F(R "/driver/dev"), &st), 0);
	cr_assert_neq(lstat(F(R "/driver/config/config.yaml"), &st), 0);
	cr_assert_neq(lstat(F(R HOST_SHADOW_DIR), &st), 0);
}

/* A Stage that writes nothing into a surface it published before (IMEX
 * off, no topology document): Publish withdraws the live side into the
 * shadow.  A surface that was never ours stays. */
Test(generation, an_unstaged_surface_of_ours_is_withdrawn)
{
	struct stat st;

	stage("gen1", (const char *const[]){ "nvidia0", "a", NULL });
	publish();
	manifest_free(&own);
	cr_assert_eq(gen_converge(&h, &own), 0);
	cr_assert_neq(lstat(F(R HOST_SHADOW_DIR "/sim/driver/dev"), &st), 0, "converged away");
	publish();
	cr_assert_neq(lstat(F(R "/driver/dev"), &st), 0, "withdrawn");
	cr_assert_null(content(R "/driver/config/config.yaml"), "withdrawn");
	cr_assert_str_eq(content(R HOST_SHADOW_DIR "/sim/driver/dev/nvidia0"), "a");

	struct manifest none;
	char err[512] = "";

	manifest_init(&none);
	cr_assert_eq(mkdir(F(R "/driver/dev"), 0755), 0);
	cr_assert_eq(gen_converge(&h, &none), 0);
	cr_assert_eq(gen_publish(&h, &none, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(lstat(F(R "/driver/dev"), &st), 0, "never ours: left alone");
}

/* imex's channel directory, a surface of its own inside gpudriver's dev:
 * imex publishes first into the live dev, gpudriver's Publish links it
 * into the new dev; a later imex generation swaps in place. */
Test(generation, a_nested_surface_published_first_survives_the_outer_swap)
{
	static const char *const imex_gens[] = { "/driver/dev/imex-channels", NULL };
	struct host x = h;
	struct manifest xown;
	char err[512] = "";

	manifest_init(&xown);
	x.own = &xown;
	cr_assert_eq(gen_prepare(&x, "imex", imex_gens, true), 0);
	for (int gen = 1; gen <= 3; gen++) {
		char c[8];

		snprintf(c, sizeof(c), "c%d", gen);
		stage("cfg", (const char *const[]){ "nvidia0", c, NULL });
		manifest_free(&xown);
		x.staging = true;
		cr_assert_eq(host_writef(&x, R "/driver/dev/imex-channels/channel0", 0644, "%s", c),
			     0);
		cr_assert_eq(host_writef(&x, R "/driver/dev/imex-channels/channel1", 0644, "%s", c),
			     0);
		x.staging = false;
		cr_assert_eq(gen_converge(&x, &xown), 0);
		cr_assert_eq(gen_publish(&x, &xown, err, sizeof(err)), 0, "%s", err);
		publish();
		cr_assert_str_eq(content(R "/driver/dev/nvidia0"), c);
		cr_assert_str_eq(content(R "/driver/dev/imex-channels/channel0"), c, "gen %d", gen);
		cr_assert_str_eq(content(R "/driver/dev/imex-channels/channel1"), c, "gen %d", gen);
	}
	manifest_free(&xown);
}
