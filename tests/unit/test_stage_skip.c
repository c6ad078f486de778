/* Incremental reconcile (workers/stage_skip.h, worker_ops.c): a Stage
 * whose state sections, other inputs and published output are what its
 * last publish left renders and swaps nothing; a change to any of them
 * (the state, an input file, a published file removed or rewritten by
 * someone else) re-renders; a failed Stage is never skipped after.  The
 * manifest is a hash set: membership over 100k paths. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "workers/manifest.h"
#include "workers/stage_skip.h"
#include "workers/worker.h"

#define R "/var/lib/nvml-mock"

static char tmp[256];
static int stages, fail_next, input_version;
static struct worker w;
static int sv[2] = { -1, -1 };

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static int fake_stage(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	stages++;
	if (fail_next) {
		fail_next = 0;
		sim_error(errs, "fake", "told to fail");
		return -EIO;
	}
	return host_writef(&ctx->host, R "/gen/a.txt", 0644, "stage %d\n", stages);
}

static void fake_inputs(struct sim_ctx *ctx, const struct state *s, struct skip_key *k)
{
	skip_key_bytes(k, &input_version, sizeof(input_version));
}

static const char *const fake_gens[] = { "/gen", NULL };
static const struct simulator fake = {
	.name = "fake", .roles = SIM_ROLE_STAGE, .stage = fake_stage,
	.gens = fake_gens, .inputs = fake_inputs,
};

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/mokka-test-skip.XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	umask(022);
	memset(&w, 0, sizeof(w));
	stages = fail_next = input_version = 0;
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	w.sim = &fake;
	w.sock = sv[0];		/* under a supervisor: Stage and Publish are two ops */
	w.ctx.name = "fake";
	snprintf(w.ctx.host.root, sizeof(w.ctx.host.root), "%s", tmp);
	snprintf(w.ctx.host.mock_root, sizeof(w.ctx.host.mock_root), R);
	snprintf(w.state.mock_root, sizeof(w.state.mock_root), R);
	w.have_state = true;
	w.state.generation = 1;
	w.state_key = 42;
	w.state_key_ok = true;
}

static void teardown(void)
{
	manifest_free(&w.own);
	close(sv[0]);
	close(sv[1]);
	if (tmp[0])
		nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(stage_skip, .init = setup, .fini = teardown);

static const char *F(const char *p)
{
	static char buf[4200];

	snprintf(buf, sizeof(buf), "%s%s", tmp, p);
	return buf;
}

/* One pass: Stage, then (when it succeeded) Publish. */
static int pass(void)
{
	struct sim_errors errs = { 0 };
	int r = worker_stage(&w, &errs);

	if (r == 0)
		r = worker_publish(&w, &errs);
	return r;
}

static ino_t ino(const char *p)
{
	struct stat st;

	return lstat(F(p), &st) == 0 ? st.st_ino : 0;
}

Test(stage_skip, noop_pass_renders_and_swaps_nothing)
{
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 1);
	ino_t dir = ino(R "/gen"), file = ino(R "/gen/a.txt");

	for (int i = 0; i < 3; i++) {
		cr_assert_eq(pass(), 0);
		cr_assert(w.published);
	}
	cr_assert_eq(stages, 1, "an unchanged pass rendered (%d stages)", stages);
	cr_assert_eq(ino(R "/gen"), dir, "an unchanged pass swapped the generation");
	cr_assert_eq(ino(R "/gen/a.txt"), file);
}

Test(stage_skip, state_or_input_change_renders)
{
	cr_assert_eq(pass(), 0);
	w.state_key = 43;
	w.state.generation = 2;
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 2);
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 2);
	input_version = 1;
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 3);
	w.state_key_ok = false;		/* a state that could not be digested */
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 4);
}

Test(stage_skip, published_output_touched_by_someone_else_is_repaired)
{
	cr_assert_eq(pass(), 0);
	cr_assert_eq(unlink(F(R "/gen/a.txt")), 0);
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 2, "a removed file was not re-rendered");
	cr_assert_eq(access(F(R "/gen/a.txt"), F_OK), 0);

	int fd = open(F(R "/gen/a.txt"), O_WRONLY | O_TRUNC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "x\n", 2), 2);
	close(fd);
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 3, "a rewritten file was not re-rendered");

	/* The manifest gone: everything is re-rendered (and recorded). */
	char file[PATH_MAX + 400];
	worker_manifest_file(&w, "stage", file, sizeof(file));
	cr_assert_eq(unlink(F(file)), 0);
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 4);
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 4);
}

Test(stage_skip, failed_stage_or_unpublished_pass_is_never_skipped)
{
	struct sim_errors errs = { 0 };

	cr_assert_eq(pass(), 0);
	w.state_key = 2;	/* a change, whose Stage fails */
	fail_next = 1;
	cr_assert_neq(pass(), 0);
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 3, "the pass after a failed Stage was skipped");
	/* Staged, never published (another simulator failed the barrier). */
	w.state_key = 7;
	cr_assert_eq(worker_stage(&w, &errs), 0);
	cr_assert_eq(stages, 4);
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 5, "a generation staged but never published was skipped");
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 5);
}

Test(stage_skip, stand_alone_always_renders)
{
	w.sock = -1;
	cr_assert_eq(pass(), 0);
	cr_assert_eq(pass(), 0);
	cr_assert_eq(stages, 2);
}

Test(stage_skip, state_key_ignores_generation_and_listed_members)
{
	static const char *const ign[] = { "ib", NULL };
	const char *a = "{\"generation\":1,\"mock_root\":\"/m\",\"ib\":{\"n\":1},\"pci\":[1]}";
	const char *b = "{\"generation\":2,\"mock_root\":\"/m\",\"ib\":{\"n\":2},\"pci\":[1]}";
	const char *c = "{\"generation\":2,\"mock_root\":\"/m\",\"ib\":{\"n\":2},\"pci\":[2]}";
	uint64_t ka, kb, kc, kb_all;

	cr_assert_eq(skip_state_key(a, strlen(a), ign, &ka), 0);
	cr_assert_eq(skip_state_key(b, strlen(b), ign, &kb), 0);
	cr_assert_eq(skip_state_key(c, strlen(c), ign, &kc), 0);
	cr_assert_eq(skip_state_key(b, strlen(b), NULL, &kb_all), 0);
	cr_assert_eq(ka, kb);
	cr_assert_neq(kb, kc);
	cr_assert_neq(kb, kb_all);
	cr_assert_eq(skip_state_key("[1]", 3, NULL, &ka), -EINVAL);
	cr_assert_eq(skip_state_key("{", 1, NULL, &ka), -EINVAL);
}

Test(stage_skip, input_digests_see_changes)
{
	struct skip_key k1, k2;
	char path[300];

	snprintf(path, sizeof(path), "%s/in", tmp);
	skip_key_init(&k1);
	skip_key_stat(&k1, path);	/* absent */
	cr_assert_eq(close(open(path, O_CREAT | O_WRONLY, 0644)), 0);
	skip_key_init(&k2);
	skip_key_stat(&k2, path);
	cr_assert_neq(k1.h, k2.h);
	skip_key_init(&k1);
	skip_key_dir(&k1, tmp, 1 << 16);
	skip_key_init(&k2);
	skip_key_dir(&k2, tmp, 1 << 16);
	cr_assert_eq(k1.h, k2.h);
	cr_assert_eq(unlink(path), 0);
	skip_key_init(&k2);
	skip_key_dir(&k2, tmp, 1 << 16);
	cr_assert_neq(k1.h, k2.h);
	skip_key_init(&k1);
	skip_key_file(&k1, "/proc/self/stat", 1 << 16);	/* readable, some content */
	cr_assert_neq(k1.h, 0);
}

Test(stage_skip, manifest_is_a_hash_set)
{
	struct manifest m, back;
	char p[64], file[300];

	manifest_init(&m);
	for (int i = 0; i < 100000; i++) {
		snprintf(p, sizeof(p), "/sys/devices/pci0000:00/%06d", i);
		cr_assert_eq(manifest_add(&m, p, i % 7 ? 'f' : 'd'), 0);
		cr_assert_eq(manifest_add(&m, p, 'f'), 0);	/* no duplicate */
	}
	cr_assert_eq(m.n, 100000);
	cr_assert(manifest_has(&m, "/sys/devices/pci0000:00/099999"));
	cr_assert_not(manifest_has(&m, "/sys/devices/pci0000:00/100000"));
	snprintf(file, sizeof(file), "%s/m.manifest", tmp);
	cr_assert_eq(manifest_save(&m, file), 0);
	cr_assert_eq(manifest_load(&back, file), 0);
	cr_assert_eq(back.n, m.n);
	for (size_t i = 0; i < m.n; i += 997)
		cr_assert(manifest_has(&back, m.paths[i]));
	manifest_free(&m);
	manifest_free(&back);
}
