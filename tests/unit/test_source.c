/* File source: real files under a mkdtemp directory, the real loop driven
 * with bounded waits. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/loop.h"
#include "supervisor/source.h"

#define DEBOUNCE_MS 50
#define WAIT_MS 3000

static char tmp[64];
static struct loop *lp;
static struct source *src;

static struct {
	int updates, errors;
	char *prof, *topo;	/* copies; NULL as given */
	size_t plen, tlen;
	char err[2048];
	int stop_at;		/* source_stop from the update callback */
} rec;

static void on_update(void *arg, const char *p, size_t plen, const char *t, size_t tlen)
{
	free(rec.prof);
	free(rec.topo);
	rec.prof = p ? strndup(p, plen) : NULL;
	rec.topo = t ? strndup(t, tlen) : NULL;
	rec.plen = plen;
	rec.tlen = tlen;
	rec.updates++;
	if (rec.stop_at && rec.updates == rec.stop_at) {
		source_stop(src);
		src = NULL;
	}
}

static void on_error(void *arg, const char *msg)
{
	snprintf(rec.err, sizeof(rec.err), "%s", msg);
	rec.errors++;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/mokka-source-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp), "mkdtemp: %s", strerror(errno));
	lp = loop_new();
	cr_assert_not_null(lp);
	memset(&rec, 0, sizeof(rec));
	src = NULL;
}

static void teardown(void)
{
	source_stop(src);
	loop_free(lp);
	free(rec.prof);
	free(rec.topo);
	setfsuid(geteuid());
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(source, .init = setup, .fini = teardown);

static const char *at(const char *rel)
{
	static char bufs[4][512];
	static int i;
	char *b = bufs[i++ % 4];

	snprintf(b, 512, "%s/%s", tmp, rel);
	return b;
}

static void put(const char *rel, const char *content)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	cr_assert_geq(fd, 0, "open %s: %s", at(rel), strerror(errno));
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

static void put_big(const char *rel, size_t n)
{
	char *b = malloc(n);
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	cr_assert_not_null(b);
	cr_assert_geq(fd, 0);
	memset(b, 'x', n);
	cr_assert_eq(write(fd, b, n), (ssize_t)n);
	close(fd);
	free(b);
}

/* Editor-style save: write a temporary file, rename it over the target. */
static void save(const char *rel, const char *content)
{
	char t[256];

	snprintf(t, sizeof(t), "%s.swp", rel);
	put(t, content);
	cr_assert_eq(rename(at(t), at(rel)), 0, "rename: %s", strerror(errno));
}

static void link_at(const char *target, const char *rel)
{
	cr_assert_eq(symlink(target, at(rel)), 0, "symlink %s: %s", rel, strerror(errno));
}

/* Atomic symlink replacement, as kubelet swaps ..data. */
static void relink(const char *target, const char *rel)
{
	char t[256];

	snprintf(t, sizeof(t), "%s_tmp", rel);
	link_at(target, t);
	cr_assert_eq(rename(at(t), at(rel)), 0, "rename: %s", strerror(errno));
}

static void start(const char *prof, const char *topo, uint64_t resync_ms)
{
	char pbuf[512], tbuf[512];
	struct source_opts o = {
		.profile_path = prof ? strcpy(pbuf, at(prof)) : NULL,
		.topology_path = topo ? strcpy(tbuf, at(topo)) : NULL,
		.resync_ms = resync_ms,
		.debounce_ms = DEBOUNCE_MS,
	};
	int r = source_start(lp, &o, on_update, on_error, NULL, &src);

	cr_assert_eq(r, 0, "source_start: %s", strerror(-r));
	cr_assert_not_null(src);
}

/* Runs the loop until *counter moves past from, or ms pass. */
static bool run_until(const int *counter, int from, int ms)
{
	uint64_t end = loop_now_ms() + (uint64_t)ms;

	while (*counter == from && loop_now_ms() < end)
		cr_assert_geq(loop_run_once(lp, 20), 0);
	return *counter != from;
}

static void settle(int ms)
{
	uint64_t end = loop_now_ms() + (uint64_t)ms;

	while (loop_now_ms() < end)
		cr_assert_geq(loop_run_once(lp, 20), 0);
}

static void expect_update(const char *prof, const char *topo)
{
	int n = rec.updates;

	cr_assert(run_until(&rec.updates, n, WAIT_MS), "no update within %d ms", WAIT_MS);
	if (prof)
		cr_assert_str_eq(rec.prof, prof);
	if (topo)
		cr_assert_str_eq(rec.topo, topo);
	else
		cr_assert_null(rec.topo, "topology should be absent, got '%s'", rec.topo);
}

static void expect_error(const char *needle)
{
	uint64_t end = loop_now_ms() + WAIT_MS;

	/* Wait for the error that says why, not just any error. */
	while (!strstr(rec.err, needle) && loop_now_ms() < end)
		cr_assert_geq(loop_run_once(lp, 20), 0);
	cr_assert(strstr(rec.err, needle), "error '%s' lacks '%s'", rec.err, needle);
}

/* ---- source_read_file ---- */

static int read_at(const char *rel, char **b, size_t *n, char *msg)
{
	return source_read_file(at(rel), b, n, msg, 512);
}

Test(source, read_file_regular_and_empty)
{
	char *b, msg[512];
	size_t n;

	put("f", "abc");
	cr_assert_eq(read_at("f", &b, &n, msg), 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(b, "abc");
	free(b);
	put("e", "");
	cr_assert_eq(read_at("e", &b, &n, msg), 0, "an empty file is the compiler's business");
	cr_assert_eq(n, 0);
	cr_assert_not_null(b);
	cr_assert_eq(b[0], '\0');
	free(b);
}

Test(source, read_file_refusals)
{
	char *b = (char *)1, msg[512];
	size_t n = 7;

	cr_assert_eq(read_at("missing", &b, &n, msg), -ENOENT);
	cr_assert_null(b);
	cr_assert_eq(n, 0);
	cr_assert(strstr(msg, at("missing")) && strstr(msg, "No such file"), "%s", msg);

	cr_assert_eq(mkdir(at("d"), 0755), 0);
	cr_assert_eq(read_at("d", &b, &n, msg), -EISDIR);
	cr_assert(strstr(msg, "is a directory"), "%s", msg);

	link_at("nowhere", "dangling");
	cr_assert_eq(read_at("dangling", &b, &n, msg), -ENOENT);
	cr_assert(strstr(msg, "dangling symlink"), "%s", msg);

	/* A FIFO without a writer must neither block nor be read. */
	cr_assert_eq(mkfifo(at("fifo"), 0644), 0);
	cr_assert_eq(read_at("fifo", &b, &n, msg), -EINVAL);
	cr_assert(strstr(msg, "not a regular file"), "%s", msg);
}

Test(source, read_file_size_cap)
{
	char *b, msg[512];
	size_t n;

	put_big("max", SOURCE_MAX_FILE);
	cr_assert_eq(read_at("max", &b, &n, msg), 0, "%s", msg);
	cr_assert_eq(n, SOURCE_MAX_FILE);
	cr_assert_eq(b[n], '\0');
	free(b);
	put_big("over", SOURCE_MAX_FILE + 1);
	cr_assert_eq(read_at("over", &b, &n, msg), -EFBIG);
	cr_assert_null(b);
	cr_assert(strstr(msg, "limit") && strstr(msg, at("over")), "%s", msg);
}

Test(source, read_file_follows_symlinks)
{
	char *b, msg[512];
	size_t n;

	put("real", "r");
	link_at("real", "link");
	cr_assert_eq(read_at("link", &b, &n, msg), 0, "%s", msg);
	cr_assert_str_eq(b, "r");
	free(b);
}

/* ---- watching ---- */

Test(source, start_emits_both_files)
{
	put("p.yaml", "profile");
	put("t.yaml", "topo");
	start("p.yaml", "t.yaml", 0);
	cr_assert_eq(rec.updates, 1, "source_start must emit synchronously");
	cr_assert_str_eq(rec.prof, "profile");
	cr_assert_str_eq(rec.topo, "topo");
	cr_assert_eq(rec.plen, 7);
	cr_assert_eq(rec.errors, 0);
}

Test(source, builtin_profile_watches_topology_only)
{
	put("t.yaml", "t1");
	start(NULL, "t.yaml", 0);
	cr_assert_eq(rec.updates, 1);
	cr_assert_null(rec.prof);
	cr_assert_eq(rec.plen, 0);
	put("t.yaml", "t2");
	expect_update(NULL, "t2");
	cr_assert_null(rec.prof);
}

Test(source, quick_writes_debounce_to_one_update)
{
	put("p.yaml", "v0");
	start("p.yaml", NULL, 0);
	for (int i = 1; i <= 5; i++) {
		char v[8];
		snprintf(v, sizeof(v), "v%d", i);
		put("p.yaml", v);
		usleep(5000);
	}
	expect_update("v5", NULL);
	settle(4 * DEBOUNCE_MS);
	cr_assert_eq(rec.updates, 2, "one update for the burst, got %d", rec.updates - 1);
}

Test(source, identical_bytes_do_not_emit)
{
	put("p.yaml", "same");
	start("p.yaml", NULL, 0);
	put("p.yaml", "same");
	save("p.yaml", "same");
	settle(6 * DEBOUNCE_MS);
	cr_assert_eq(rec.updates, 1);
	put("p.yaml", "different");
	expect_update("different", NULL);
}

Test(source, editor_save_by_rename)
{
	put("p.yaml", "old");
	start("p.yaml", NULL, 0);
	save("p.yaml", "new");
	expect_update("new", NULL);
	/* The watch is on the directory, so the new inode is seen too. */
	save("p.yaml", "newer");
	expect_update("newer", NULL);
}

Test(source, configmap_data_swap)
{
	cr_assert_eq(mkdir(at("cm"), 0755), 0);
	cr_assert_eq(mkdir(at("cm/..2026_a"), 0755), 0);
	put("cm/..2026_a/config.yaml", "a");
	link_at("..2026_a", "cm/..data");
	link_at("..data/config.yaml", "cm/config.yaml");
	start("cm/config.yaml", NULL, 0);
	cr_assert_str_eq(rec.prof, "a");

	cr_assert_eq(mkdir(at("cm/..2026_b"), 0755), 0);
	put("cm/..2026_b/config.yaml", "b");
	relink("..2026_b", "cm/..data");
	expect_update("b", NULL);
	/* kubelet then removes the old payload: no news. */
	cr_assert_eq(unlink(at("cm/..2026_a/config.yaml")), 0);
	cr_assert_eq(rmdir(at("cm/..2026_a")), 0);
	settle(4 * DEBOUNCE_MS);
	cr_assert_eq(rec.updates, 2);

	/* The watch set followed the swap to the new target directory. */
	put("cm/..2026_b/config.yaml", "b2");
	expect_update("b2", NULL);
}

Test(source, symlink_target_in_other_directory)
{
	cr_assert_eq(mkdir(at("a"), 0755), 0);
	cr_assert_eq(mkdir(at("b"), 0755), 0);
	put("b/real.yaml", "one");
	put("b/other.yaml", "other");
	link_at("../b/real.yaml", "a/p.yaml");
	start("a/p.yaml", NULL, 0);
	cr_assert_str_eq(rec.prof, "one");

	put("b/real.yaml", "two");	/* only the far end changes */
	expect_update("two", NULL);
	relink("../b/other.yaml", "a/p.yaml");	/* the near end changes */
	expect_update("other", NULL);
	put("b/other.yaml", "other2");
	expect_update("other2", NULL);
}

Test(source, unrelated_names_do_not_read)
{
	put("p.yaml", "p");
	start("p.yaml", NULL, 0);
	/* A change elsewhere in the directory is not an update, and not an
	 * error either. */
	put("unrelated", "x");
	settle(4 * DEBOUNCE_MS);
	cr_assert_eq(rec.updates, 1);
	cr_assert_eq(rec.errors, 0);
}

Test(source, deleted_file_keeps_last_bytes_until_recreated)
{
	put("p.yaml", "keep");
	start("p.yaml", NULL, 0);
	cr_assert_eq(unlink(at("p.yaml")), 0);
	expect_error("No such file");
	cr_assert(strstr(rec.err, "profile") && strstr(rec.err, at("p.yaml")), "%s", rec.err);
	settle(4 * DEBOUNCE_MS);
	cr_assert_eq(rec.updates, 1, "an unreadable file is not an update");
	cr_assert_eq(rec.errors, 1, "one error per failure, not per event");

	/* Recreated unchanged: one update so consumers can clear the error. */
	put("p.yaml", "keep");
	expect_update("keep", NULL);
	put("p.yaml", "changed");
	expect_update("changed", NULL);
}

Test(source, file_replaced_by_directory)
{
	put("p.yaml", "p");
	start("p.yaml", NULL, 0);
	cr_assert_eq(unlink(at("p.yaml")), 0);
	cr_assert_eq(mkdir(at("p.yaml"), 0755), 0);
	expect_error("is a directory");
	cr_assert_eq(rec.updates, 1);
}

Test(source, dangling_symlink_is_an_error_until_fixed)
{
	link_at("target.yaml", "p.yaml");
	start("p.yaml", NULL, 0);
	cr_assert_eq(rec.updates, 0, "nothing good to emit yet");
	cr_assert_eq(rec.errors, 1);
	cr_assert(strstr(rec.err, "dangling symlink"), "%s", rec.err);
	put("target.yaml", "t");
	expect_update("t", NULL);
}

Test(source, oversized_profile_is_refused)
{
	put("p.yaml", "small");
	start("p.yaml", NULL, 0);
	put_big("p.yaml", SOURCE_MAX_FILE + 1);
	expect_error("limit");
	cr_assert_eq(rec.updates, 1);
	cr_assert_str_eq(rec.prof, "small");
}

Test(source, unreadable_profile_reports_permission)
{
	put("p.yaml", "p");
	cr_assert_eq(chmod(at("p.yaml"), 0), 0);
	cr_assert_eq(chmod(tmp, 0755), 0);
	/* Root reads anything; dropping the fs uid drops that power. */
	if (geteuid() == 0)
		setfsuid(65534);
	start("p.yaml", NULL, 0);
	cr_assert_eq(rec.updates, 0);
	cr_assert(strstr(rec.err, "Permission denied"), "%s", rec.err);
	setfsuid(geteuid());
	cr_assert_eq(chmod(at("p.yaml"), 0644), 0);
	expect_update("p", NULL);
}

Test(source, topology_absent_means_none)
{
	put("p.yaml", "p");
	start("p.yaml", "t.yaml", 0);
	cr_assert_eq(rec.updates, 1);
	cr_assert_eq(rec.errors, 0, "an absent topology is not an error");
	cr_assert_null(rec.topo);
	put("t.yaml", "t");
	expect_update("p", "t");
	cr_assert_eq(unlink(at("t.yaml")), 0);
	expect_update("p", NULL);
	cr_assert_eq(rec.errors, 0);
}

Test(source, topology_directory_removed_and_recreated)
{
	put("p.yaml", "p");
	cr_assert_eq(mkdir(at("topo"), 0755), 0);
	put("topo/t.yaml", "t1");
	start("p.yaml", "topo/t.yaml", 0);
	cr_assert_str_eq(rec.topo, "t1");
	cr_assert_eq(unlink(at("topo/t.yaml")), 0);
	cr_assert_eq(rmdir(at("topo")), 0);
	expect_update("p", NULL);
	/* The watch died with the directory; its parent now waits for it. */
	cr_assert_eq(mkdir(at("topo"), 0755), 0);
	settle(2 * DEBOUNCE_MS);
	put("topo/t.yaml", "t2");
	expect_update("p", "t2");
}

Test(source, dropped_watches_leave_changes_to_resync)
{
	put("p.yaml", "p1");
	start("p.yaml", NULL, 60000);
	source_test_drop_watches(src);
	put("p.yaml", "p2");
	settle(6 * DEBOUNCE_MS);
	cr_assert_eq(rec.updates, 1, "blind without inotify until the resync");
}

Test(source, resync_rereads_without_events)
{
	put("p.yaml", "p1");
	start("p.yaml", NULL, 300);
	source_test_drop_watches(src);
	settle(400);
	cr_assert_eq(rec.updates, 1, "a resync of unchanged bytes emits nothing");
	put("p.yaml", "p2");
	expect_update("p2", NULL);
}

Test(source, stop_from_update_callback)
{
	put("p.yaml", "p1");
	rec.stop_at = 2;
	start("p.yaml", NULL, 100);
	put("p.yaml", "p2");
	expect_update("p2", NULL);
	cr_assert_null(src);
	put("p.yaml", "p3");
	settle(300);
	cr_assert_eq(rec.updates, 2, "a stopped source is silent");
}
