/* The device state store (devstate/): the document format round-trips and
 * the strict decoder refuses what is not exactly a document; the store
 * saves atomically, bumps its counter, clears; and writers in separate
 * processes never lose an update under its lock. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devstate/devstate.h"

static const char *uuid = "GPU-20b0de10-0000-0000-0000-000000000000";

static struct ds_gpu sample(void)
{
	struct ds_gpu g = { 0 };
	struct ds_gi gi = { .id = 7, .profile = 0, .start = 0, .size = 1, .serial = 1 };
	struct ds_ci ci = { .id = 0, .profile = 0, .start = 0, .size = 1, .serial = 2 };

	g.set = DS_PM | DS_CM | DS_PL | DS_ECC | DS_MIG | DS_AC | DS_LGC;
	g.pm = 1, g.cm = 3, g.pl_mw = 300000, g.ecc_cur = 1, g.ecc_pend = 0;
	g.mig_cur = g.mig_pend = 1, g.ac_mem = 1215, g.ac_gr = 1410;
	g.lgc_min = 1000, g.lgc_max = 1200, g.next_serial = 2;
	cr_assert_eq(ds_gi_add(&g, &gi), 0);
	cr_assert_eq(ds_ci_add(ds_gi_find(&g, 7), &ci), 0);
	return g;
}

Test(devstate, round_trip)
{
	struct ds_gpu g = sample(), back;
	char buf[DS_MAX_DOC], why[160];
	int n = ds_encode(&g, buf, sizeof(buf));

	cr_assert_gt(n, 0);
	cr_assert_eq(ds_decode(buf, (size_t)n, &back, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(memcmp(&g, &back, sizeof(g)), 0);
}

Test(devstate, strict_decoder)
{
	static const char *const bad[] = {
		"",					/* empty */
		"mokka-devstate 2\nend\n",		/* another version */
		"mokka-devstate 1\n",			/* no end */
		"mokka-devstate 1\nend\nx",		/* bytes after end */
		"mokka-devstate 1\npm 1\npm 0\nend\n",	/* twice */
		"mokka-devstate 1\npm 2\nend\n",	/* out of range */
		"mokka-devstate 1\npm 01\nend\n",	/* not canonical */
		"mokka-devstate 1\npm  1\nend\n",	/* stray space */
		"mokka-devstate 1\nfoo 1\nend\n",	/* unknown key */
		"mokka-devstate 1\nci 7 0 0 0 1 1\nend\n",	/* ci without gi */
		"mokka-devstate 1\ngi 7 0 6 4 1\nend\n",	/* placement past 8 */
		"mokka-devstate 1\ngi 7 0 0 1 1\ngi 7 0 1 1 1\nend\n",	/* duplicate */
		"mokka-devstate 1\npm 1",		/* torn */
	};
	struct ds_gpu g;
	char why[160];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(ds_decode(bad[i], strlen(bad[i]), &g, why, sizeof(why)), -EINVAL,
			     "accepted case %zu", i);
		cr_assert_eq(g.set, 0);
		cr_assert_eq(g.ngi, 0);
	}
}

static char dir[64];

static void mkstore(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test-devstate-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void rmstore(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(devstate, save_load_clear, .init = mkstore, .fini = rmstore)
{
	struct ds_store st, other;
	struct ds_gpu g = sample(), back;
	uint64_t seq;

	cr_assert_eq(ds_open(&other, dir, false), -ENOENT);	/* no .lock yet */
	cr_assert_eq(ds_open(&st, dir, true), 0);
	cr_assert_eq(ds_open(&other, dir, false), 0);
	cr_assert_eq(ds_load(&st, uuid, &back), -ENOENT);
	seq = ds_seq(&other);
	cr_assert_eq(ds_lock(&st), 0);
	cr_assert_eq(ds_save(&st, uuid, &g), 0);
	ds_unlock(&st);
	cr_assert_gt(ds_seq(&other), seq, "a reader sees the counter move");
	cr_assert_eq(ds_load(&other, uuid, &back), 0);
	cr_assert_eq(memcmp(&g, &back, sizeof(g)), 0);
	cr_assert_eq(ds_load(&st, "../etc/passwd", &back), -EINVAL);
	cr_assert_eq(ds_clear(&st), 0);
	cr_assert_eq(ds_load(&other, uuid, &back), -ENOENT);
	ds_close(&other);
	ds_close(&st);
}

/* N processes each add M GPU instances' worth of serials under the lock. */
Test(devstate, concurrent_writers, .init = mkstore, .fini = rmstore)
{
	enum { PROCS = 4, ROUNDS = 50 };
	struct ds_store st;
	struct ds_gpu g;

	for (int p = 0; p < PROCS; p++) {
		if (fork() == 0) {
			struct ds_store s;

			if (ds_open(&s, dir, true) < 0)
				_exit(1);
			for (int r = 0; r < ROUNDS; r++) {
				struct ds_gpu x;

				if (ds_lock(&s) < 0)
					_exit(2);
				ds_load(&s, uuid, &x);
				x.next_serial++;
				if (ds_save(&s, uuid, &x) < 0)
					_exit(3);
				ds_unlock(&s);
			}
			_exit(0);
		}
	}
	for (int p = 0; p < PROCS; p++) {
		int status;

		cr_assert_gt(wait(&status), 0);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	cr_assert_eq(ds_open(&st, dir, false), 0);
	cr_assert_eq(ds_load(&st, uuid, &g), 0);
	cr_assert_eq(g.next_serial, PROCS * ROUNDS, "lost updates: %u", g.next_serial);
	ds_close(&st);
}

/* A link planted at .seq or .lock is refused, not followed: the store
 * would grow and count in the link's target.  A name planted at the temp
 * document (a hard link to another file) is replaced, not written
 * through.  The outside file keeps its bytes. */
Test(devstate, planted_links_refused, .init = mkstore, .fini = rmstore)
{
	static const char *const own[] = { ".seq", ".lock" };
	char out[128], at[128], tmp[256], buf[16] = "";
	struct ds_store st;
	struct ds_gpu g = sample();
	FILE *f;

	snprintf(out, sizeof(out), "%s/outside", dir);
	for (size_t i = 0; i < 2; i++) {
		cr_assert_not_null(f = fopen(out, "w"));
		fputs("abc", f);
		fclose(f);
		snprintf(at, sizeof(at), "%s/state", dir);
		mkdir(at, 0755);
		snprintf(at, sizeof(at), "%s/state/%s", dir, own[i]);
		unlink(at);
		cr_assert_eq(symlink(out, at), 0);
		snprintf(at, sizeof(at), "%s/state", dir);
		cr_assert_eq(ds_open(&st, at, true), -ELOOP, "%s followed", own[i]);
		cr_assert_not_null(f = fopen(out, "r"));
		cr_assert_eq(fread(buf, 1, sizeof(buf), f), 3, "%s: outside file changed", own[i]);
		fclose(f);
		snprintf(at, sizeof(at), "%s/state/%s", dir, own[i]);
		cr_assert_eq(unlink(at), 0);
	}
	snprintf(at, sizeof(at), "%s/state", dir);
	cr_assert_eq(ds_open(&st, at, true), 0);
	snprintf(tmp, sizeof(tmp), "%s/state/.%s.state.%ld.tmp", dir, uuid, (long)getpid());
	cr_assert_eq(link(out, tmp), 0);
	cr_assert_eq(ds_save(&st, uuid, &g), 0);
	cr_assert_not_null(f = fopen(out, "r"));
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(fread(buf, 1, sizeof(buf), f), 3);
	cr_assert_str_eq(buf, "abc", "written through a planted temp name");
	fclose(f);
	ds_close(&st);
}
