/* Host-root helpers and ownership manifests, on a real temporary root. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "workers/host.h"
#include "workers/manifest.h"

#define R "/var/lib/nvml-mock"

static char tmp[256];
static struct host h;
static struct manifest own, prev;

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/mokka-test-host.XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	memset(&h, 0, sizeof(h));
	snprintf(h.root, sizeof(h.root), "%s", tmp);
	snprintf(h.mock_root, sizeof(h.mock_root), R);
	manifest_init(&own);
	manifest_init(&prev);
	h.own = &own;
	h.prev = NULL;
	umask(022);
}

static void teardown(void)
{
	manifest_free(&own);
	manifest_free(&prev);
	if (tmp[0])
		nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(host, .init = setup, .fini = teardown);
TestSuite(manifest, .init = setup, .fini = teardown);

/* Absolute path of host path p under the temporary root. */
static const char *F(const char *p)
{
	static char buf[4][4200];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s%s", tmp, p);
	return buf[i];
}

static char *slurp(const char *p)
{
	static char buf[8192];
	int fd = open(p, O_RDONLY);
	ssize_t n;

	cr_assert_geq(fd, 0, "open %s: %s", p, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	cr_assert_geq(n, 0);
	buf[n] = '\0';
	return buf;
}

static void put(const char *p, const char *content)
{
	int fd = open(F(p), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	cr_assert_geq(fd, 0, "create %s: %s", p, strerror(errno));
	cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

static void mkd(const char *p)
{
	cr_assert_eq(mkdir(F(p), 0755), 0, "mkdir %s: %s", p, strerror(errno));
}

static char kind_of(const struct manifest *m, const char *p)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->paths[i], p) == 0)
			return m->kinds[i];
	return 0;
}

static int exists(const char *p)
{
	struct stat st;

	return lstat(F(p), &st) == 0;
}

/* No temp file left in dir (host path). */
static void no_temp_left(const char *dir)
{
	DIR *d = opendir(F(dir));
	struct dirent *e;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		cr_assert_null(strstr(e->d_name, "mokka-tmp"), "left behind: %s", e->d_name);
	closedir(d);
}

/* ---- host_path ---- */

Test(host, path_joins_root)
{
	char buf[4200];

	cr_assert_eq(host_path(&h, "/etc/x", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, F("/etc/x"));
	struct host slash = { .root = "" };
	cr_assert_eq(host_path(&slash, "/etc/x", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "/etc/x");
	/* ".." inside a name is not a component */
	cr_assert_eq(host_path(&h, "/a..b/..c/d..", buf, sizeof(buf)), 0);
	cr_assert_eq(host_path(&h, "/...", buf, sizeof(buf)), 0);
}

Test(host, path_refuses_relative_and_dotdot)
{
	char buf[4200];

	cr_assert_eq(host_path(&h, "etc/x", buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(host_path(&h, "", buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(host_path(&h, NULL, buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(host_path(&h, "./x", buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(host_path(&h, "/..", buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(host_path(&h, "/../etc", buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(host_path(&h, "/a/../../etc", buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(host_path(&h, "/a/..", buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(host_path(&h, "/a..b/../c", buf, sizeof(buf)), -EINVAL);
}

Test(host, path_too_long)
{
	char buf[4200], *big = malloc(5000);

	cr_assert_eq(host_path(&h, "/etc/x", buf, strlen(tmp) + 6), -ENAMETOOLONG);
	cr_assert_eq(host_path(&h, "/etc/x", buf, strlen(tmp) + 7), 0);
	big[0] = '/';
	memset(big + 1, 'a', 4998);
	big[4999] = '\0';
	cr_assert_eq(host_path(&h, big, buf, sizeof(buf)), -ENAMETOOLONG);
	cr_assert_eq(host_write(&h, big, "x", 1, 0644), -ENAMETOOLONG);
	free(big);
}

Test(host, operations_refuse_escapes)
{
	cr_assert_eq(host_write(&h, "/a/../../escape", "x", 1, 0644), -EINVAL);
	cr_assert_eq(host_write(&h, "relative", "x", 1, 0644), -EINVAL);
	cr_assert_eq(host_symlink(&h, "/x", "/../escape"), -EINVAL);
	cr_assert_eq(host_mkdirs(&h, "/a/../../b", 0755), -EINVAL);
	cr_assert_eq(own.n, 0, "nothing recorded");
}

/* ---- host_write ---- */

Test(host, write_creates_parents_and_records)
{
	struct stat st;

	cr_assert_eq(host_write(&h, "/etc/mokka/sub/file.conf", "hello\n", 6, 0640), 0);
	cr_assert_str_eq(slurp(F("/etc/mokka/sub/file.conf")), "hello\n");
	cr_assert_eq(stat(F("/etc/mokka/sub/file.conf"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(kind_of(&own, "/etc/mokka/sub/file.conf"), 'f');
	cr_assert_eq(kind_of(&own, "/etc"), 'd');
	cr_assert_eq(kind_of(&own, "/etc/mokka"), 'd');
	cr_assert_eq(kind_of(&own, "/etc/mokka/sub"), 'd');
	cr_assert_eq(own.n, 4);
	no_temp_left("/etc/mokka/sub");
}

Test(host, write_honours_mode_despite_umask)
{
	struct stat st;

	umask(077);
	cr_assert_eq(host_write(&h, "/bin-tool", "#!/bin/sh\n", 10, 0755), 0);
	cr_assert_eq(stat(F("/bin-tool"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0755);
	/* same content, different mode: rewritten with the new mode */
	cr_assert_eq(host_write(&h, "/bin-tool", "#!/bin/sh\n", 10, 0600), 0);
	cr_assert_eq(stat(F("/bin-tool"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600);
	umask(022);
}

Test(host, write_is_atomic_replacement)
{
	struct stat before, after;
	char buf[32] = { 0 };
	int fd;

	cr_assert_eq(host_write(&h, "/data/f", "old content", 11, 0644), 0);
	cr_assert_eq(stat(F("/data/f"), &before), 0);
	fd = open(F("/data/f"), O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(host_write(&h, "/data/f", "new", 3, 0644), 0);
	cr_assert_eq(stat(F("/data/f"), &after), 0);
	/* a new inode renamed over the old one, never truncated in place */
	cr_assert_neq(before.st_ino, after.st_ino);
	cr_assert_eq(pread(fd, buf, sizeof(buf) - 1, 0), 11);
	cr_assert_str_eq(buf, "old content");
	close(fd);
	cr_assert_str_eq(slurp(F("/data/f")), "new");
	no_temp_left("/data");
	/* never writes through a symlink someone planted, nor replaces it:
	 * refused (issue 19), both left as they were */
	put("/target", "precious");
	cr_assert_eq(symlink(F("/target"), F("/data/link")), 0);
	cr_assert_eq(host_write(&h, "/data/link", "mine", 4, 0644), -ELOOP);
	cr_assert_str_eq(slurp(F("/target")), "precious");
	cr_assert_eq(lstat(F("/data/link"), &after), 0);
	cr_assert(S_ISLNK(after.st_mode));
}

Test(host, write_skips_identical_content)
{
	struct stat st;
	struct timespec old[2] = { { .tv_sec = 1000000 }, { .tv_sec = 1000000 } };

	cr_assert_eq(host_write(&h, "/x/y", "same", 4, 0644), 0);
	cr_assert_eq(utimensat(AT_FDCWD, F("/x/y"), old, 0), 0);
	cr_assert_eq(host_write(&h, "/x/y", "same", 4, 0644), 0);
	cr_assert_eq(stat(F("/x/y"), &st), 0);
	cr_assert_eq(st.st_mtim.tv_sec, 1000000, "identical write touched the file");
	/* different content of the same length is written */
	cr_assert_eq(host_write(&h, "/x/y", "diff", 4, 0644), 0);
	cr_assert_eq(stat(F("/x/y"), &st), 0);
	cr_assert_neq(st.st_mtim.tv_sec, 1000000);
	cr_assert_str_eq(slurp(F("/x/y")), "diff");
	/* a prefix of the old content is written too */
	cr_assert_eq(host_write(&h, "/x/y", "di", 2, 0644), 0);
	cr_assert_str_eq(slurp(F("/x/y")), "di");
	cr_assert_eq(kind_of(&own, "/x/y"), 'f');
}

Test(host, write_large_content)
{
	size_t n = 200000;
	char *big = malloc(n), *back = malloc(n);
	int fd;

	for (size_t i = 0; i < n; i++)
		big[i] = (char)('a' + i % 26);
	cr_assert_eq(host_write(&h, "/big", big, n, 0644), 0);
	big[n - 1] = '!';	/* differs only in the last chunk */
	cr_assert_eq(host_write(&h, "/big", big, n, 0644), 0);
	fd = open(F("/big"), O_RDONLY);
	cr_assert_eq(read(fd, back, n), (ssize_t)n);
	close(fd);
	cr_assert_eq(memcmp(big, back, n), 0);
	free(big);
	free(back);
}

Test(host, writef)
{
	cr_assert_eq(host_writef(&h, "/proc-like/value", 0444, "%d:%s\n", 42, "ok"), 0);
	cr_assert_str_eq(slurp(F("/proc-like/value")), "42:ok\n");
}

Test(host, mkdirs_records_each_created_dir)
{
	struct stat st;

	cr_assert_eq(host_mkdirs(&h, "/a/b/c/", 0750), 0);
	cr_assert_eq(stat(F("/a/b/c"), &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(kind_of(&own, "/a"), 'd');
	cr_assert_eq(kind_of(&own, "/a/b"), 'd');
	cr_assert_eq(kind_of(&own, "/a/b/c"), 'd');
	cr_assert_eq(own.n, 3);
	/* a file in the way */
	put("/a/file", "x");
	cr_assert_eq(host_mkdirs(&h, "/a/file/sub", 0755), -ENOTDIR);
}

/* ---- ownership of pre-existing paths ---- */

Test(host, preexisting_outside_mock_root_not_recorded)
{
	mkd("/opt");
	mkd("/opt/vendor");
	put("/opt/vendor/lib.so", "theirs");
	cr_assert_eq(host_write(&h, "/opt/vendor/lib.so", "ours", 4, 0644), 0);
	cr_assert_eq(host_write(&h, "/opt/vendor/new.so", "ours", 4, 0644), 0);
	cr_assert_eq(host_symlink(&h, "new.so", "/opt/vendor/lib.so"), 0);
	cr_assert_eq(kind_of(&own, "/opt"), 0);
	cr_assert_eq(kind_of(&own, "/opt/vendor"), 0);
	cr_assert_eq(kind_of(&own, "/opt/vendor/lib.so"), 0, "pre-existing file recorded");
	cr_assert_eq(kind_of(&own, "/opt/vendor/new.so"), 'f');
	cr_assert_eq(own.n, 1);
}

Test(host, preexisting_under_mock_root_recorded)
{
	mkd("/var");
	mkd("/var/lib");
	mkd(R);
	mkd(R "/sub");
	put(R "/sub/file", "old");
	cr_assert_eq(host_write(&h, R "/sub/file", "new", 3, 0644), 0);
	cr_assert_eq(kind_of(&own, R "/sub/file"), 'f');
	cr_assert_eq(kind_of(&own, R "/sub"), 'd');
	/* R itself and its parents are not strictly under R */
	cr_assert_eq(kind_of(&own, R), 0);
	cr_assert_eq(kind_of(&own, "/var/lib"), 0);
	cr_assert_eq(kind_of(&own, "/var"), 0);
	/* a sibling sharing R's prefix is not under R */
	mkd(R "-other");
	put(R "-other/f", "x");
	cr_assert_eq(host_write(&h, R "-other/f", "y", 1, 0644), 0);
	cr_assert_eq(kind_of(&own, R "-other/f"), 0);
	cr_assert_eq(kind_of(&own, R "-other"), 0);
}

Test(host, preexisting_listed_in_prev_recorded)
{
	mkd("/etc");
	put("/etc/ours", "v1");
	put("/etc/theirs", "v1");
	cr_assert_eq(manifest_add(&prev, "/etc/ours", 'f'), 0);
	h.prev = &prev;
	cr_assert_eq(host_write(&h, "/etc/ours", "v2", 2, 0644), 0);
	cr_assert_eq(host_write(&h, "/etc/theirs", "v2", 2, 0644), 0);
	cr_assert_eq(kind_of(&own, "/etc/ours"), 'f');
	cr_assert_eq(kind_of(&own, "/etc/theirs"), 0);
	cr_assert_eq(kind_of(&own, "/etc"), 0);
}

Test(host, no_manifest_records_nothing)
{
	h.own = NULL;
	cr_assert_eq(host_write(&h, "/q/r", "x", 1, 0644), 0);
	cr_assert_str_eq(slurp(F("/q/r")), "x");
}

/* ---- symlinks and device nodes ---- */

Test(host, symlink_create_and_swap)
{
	char buf[256];
	ssize_t n;
	struct stat st1, st2;

	cr_assert_eq(host_symlink(&h, "libnvidia-ml.so.550.54.15", "/usr/lib/libnvidia-ml.so.1"), 0);
	n = readlink(F("/usr/lib/libnvidia-ml.so.1"), buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	cr_assert_str_eq(buf, "libnvidia-ml.so.550.54.15");
	cr_assert_eq(kind_of(&own, "/usr/lib/libnvidia-ml.so.1"), 'f');
	cr_assert_eq(kind_of(&own, "/usr/lib"), 'd');
	cr_assert_eq(lstat(F("/usr/lib/libnvidia-ml.so.1"), &st1), 0);
	/* same target: untouched */
	cr_assert_eq(host_symlink(&h, "libnvidia-ml.so.550.54.15", "/usr/lib/libnvidia-ml.so.1"), 0);
	cr_assert_eq(lstat(F("/usr/lib/libnvidia-ml.so.1"), &st2), 0);
	cr_assert_eq(st1.st_ino, st2.st_ino);
	/* new target: swapped */
	cr_assert_eq(host_symlink(&h, "/abs/libnvidia-ml.so.560.1", "/usr/lib/libnvidia-ml.so.1"), 0);
	n = readlink(F("/usr/lib/libnvidia-ml.so.1"), buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	cr_assert_str_eq(buf, "/abs/libnvidia-ml.so.560.1");
	no_temp_left("/usr/lib");
	/* a regular file is replaced by the link */
	cr_assert_eq(host_write(&h, "/usr/lib/plain", "x", 1, 0644), 0);
	cr_assert_eq(host_symlink(&h, "elsewhere", "/usr/lib/plain"), 0);
	cr_assert_eq(lstat(F("/usr/lib/plain"), &st1), 0);
	cr_assert(S_ISLNK(st1.st_mode));
}

Test(host, mknod_chr_remade_when_dev_differs)
{
	struct stat st1, st2;
	int r = host_mknod_chr(&h, "/dev/nvidia0", 0666, 195, 0);

	if (r == -EPERM)
		cr_skip_test("mknod not permitted here");
	cr_assert_eq(r, 0, "%s", strerror(-r));
	cr_assert_eq(lstat(F("/dev/nvidia0"), &st1), 0);
	cr_assert(S_ISCHR(st1.st_mode));
	cr_assert_eq(major(st1.st_rdev), 195);
	cr_assert_eq(minor(st1.st_rdev), 0);
	cr_assert_eq(st1.st_mode & 07777, 0666);
	cr_assert_eq(kind_of(&own, "/dev/nvidia0"), 'f');
	cr_assert_eq(kind_of(&own, "/dev"), 'd');
	/* identical: left alone */
	cr_assert_eq(host_mknod_chr(&h, "/dev/nvidia0", 0666, 195, 0), 0);
	cr_assert_eq(lstat(F("/dev/nvidia0"), &st2), 0);
	cr_assert_eq(st1.st_ino, st2.st_ino);
	/* different minor: re-made */
	cr_assert_eq(host_mknod_chr(&h, "/dev/nvidia0", 0666, 195, 1), 0);
	cr_assert_eq(lstat(F("/dev/nvidia0"), &st2), 0);
	cr_assert(S_ISCHR(st2.st_mode));
	cr_assert_eq(minor(st2.st_rdev), 1);
	/* different major: re-made */
	cr_assert_eq(host_mknod_chr(&h, "/dev/nvidia0", 0666, 507, 1), 0);
	cr_assert_eq(lstat(F("/dev/nvidia0"), &st2), 0);
	cr_assert_eq(major(st2.st_rdev), 507);
	/* different mode: re-made */
	cr_assert_eq(host_mknod_chr(&h, "/dev/nvidia0", 0600, 507, 1), 0);
	cr_assert_eq(lstat(F("/dev/nvidia0"), &st2), 0);
	cr_assert_eq(st2.st_mode & 07777, 0600);
	/* a regular file in its place is replaced */
	put("/dev/nvidiactl", "file");
	cr_assert_eq(host_mknod_chr(&h, "/dev/nvidiactl", 0666, 195, 255), 0);
	cr_assert_eq(lstat(F("/dev/nvidiactl"), &st2), 0);
	cr_assert(S_ISCHR(st2.st_mode));
	no_temp_left("/dev");
}

Test(host, unlink_and_copy_in)
{
	char src[300];

	cr_assert_eq(host_write(&h, "/gone", "x", 1, 0644), 0);
	cr_assert_eq(host_unlink(&h, "/gone"), 0);
	cr_assert_not(exists("/gone"));
	cr_assert_eq(host_unlink(&h, "/gone"), 0, "ENOENT is success");
	cr_assert_eq(host_unlink(&h, "/../gone"), -EINVAL);
	snprintf(src, sizeof(src), "%s/source-file", tmp);
	put("/source-file", "copied bytes");
	cr_assert_eq(host_copy_in(&h, src, "/dst/copy", 0600), 0);
	cr_assert_str_eq(slurp(F("/dst/copy")), "copied bytes");
	cr_assert_eq(host_copy_in(&h, tmp, "/dst/dir", 0600), -EINVAL, "a directory is not a file");
	cr_assert_lt(host_copy_in(&h, "/nonexistent/mokka", "/dst/none", 0600), 0);
}

Test(host, fopen_reads_beneath_the_root_only)
{
	char line[64], outside[300];
	FILE *f;

	put("/in", "inside\n");
	cr_assert_not_null(f = host_fopen(&h, "/in"));
	cr_assert_not_null(fgets(line, sizeof(line), f));
	cr_assert_str_eq(line, "inside\n");
	fclose(f);
	errno = 0;
	cr_assert_null(host_fopen(&h, "/none"));
	cr_assert_eq(errno, ENOENT);
	/* A link at the leaf or on the way, even to a file inside: refused. */
	snprintf(outside, sizeof(outside), "%s/in", tmp);
	cr_assert_eq(symlink(outside, F("/leaf")), 0);
	cr_assert_null(host_fopen(&h, "/leaf"));
	cr_assert_eq(errno, ELOOP);
	cr_assert_eq(symlink(tmp, F("/way")), 0);
	cr_assert_null(host_fopen(&h, "/way/in"));
	cr_assert_eq(errno, ELOOP);
	/* Not a regular file (a directory, a FIFO that would block): refused. */
	mkd("/dir");
	cr_assert_null(host_fopen(&h, "/dir"));
	cr_assert_eq(mkfifo(F("/fifo"), 0600), 0);
	cr_assert_null(host_fopen(&h, "/fifo"));
	cr_assert_null(host_fopen(&h, "/../in"));
}

Test(host, mock_path_joins_the_mock_root)
{
	char buf[32];

	cr_assert_eq(host_mock_path(R, buf, sizeof(buf), "/ib/%s", "x.json"), 0);
	cr_assert_str_eq(buf, R "/ib/x.json");
	cr_assert_eq(host_mock_path(R, buf, sizeof(buf), "/%s", "a-suffix-too-long"),
		     -ENAMETOOLONG);
	cr_assert_eq(host_mock_path("/a-root-longer-than-the-buffer!!", buf, sizeof(buf), "/x"),
		     -ENAMETOOLONG);
}

/* ---- manifests ---- */

Test(manifest, add_has_dedup)
{
	cr_assert_eq(manifest_add(&own, "/a", 'f'), 0);
	cr_assert_eq(manifest_add(&own, "/a", 'f'), 0);
	cr_assert_eq(own.n, 1);
	cr_assert(manifest_has(&own, "/a"));
	cr_assert_not(manifest_has(&own, "/b"));
	cr_assert_eq(manifest_add(&own, "relative", 'f'), -EINVAL);
	cr_assert_eq(manifest_add(&own, "/new\nline", 'f'), -EINVAL);
	for (int i = 0; i < 300; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/p/%d", i);
		cr_assert_eq(manifest_add(&own, p, i % 2 ? 'd' : 'f'), 0);
	}
	cr_assert_eq(own.n, 301);
	cr_assert(manifest_has(&own, "/p/299"));
}

Test(manifest, save_load_round_trip)
{
	struct manifest back;
	char file[300];

	snprintf(file, sizeof(file), "%s/pcibus.manifest", tmp);
	cr_assert_eq(manifest_add(&own, "/etc/x", 'f'), 0);
	cr_assert_eq(manifest_add(&own, "/etc", 'd'), 0);
	cr_assert_eq(manifest_add(&own, "/with space/and\ttab", 'f'), 0);
	cr_assert_eq(manifest_save(&own, file), 0);
	cr_assert_eq(manifest_load(&back, file), 0);
	cr_assert_eq(back.n, 3);
	cr_assert_eq(kind_of(&back, "/etc/x"), 'f');
	cr_assert_eq(kind_of(&back, "/etc"), 'd');
	cr_assert_eq(kind_of(&back, "/with space/and\ttab"), 'f');
	manifest_free(&back);
	/* no temp file remains next to it */
	DIR *d = opendir(tmp);
	struct dirent *e;
	int count = 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			count++;
	closedir(d);
	cr_assert_eq(count, 1);
	/* an empty manifest round-trips too */
	manifest_free(&own);
	cr_assert_eq(manifest_save(&own, file), 0);
	cr_assert_eq(manifest_load(&back, file), 0);
	cr_assert_eq(back.n, 0);
	manifest_free(&back);
}

Test(manifest, missing_file_is_empty)
{
	struct manifest m;
	char file[300];

	snprintf(file, sizeof(file), "%s/none.manifest", tmp);
	cr_assert_eq(manifest_load(&m, file), 0);
	cr_assert_eq(m.n, 0);
	manifest_free(&m);
	snprintf(file, sizeof(file), "%s/no-such-dir/x.manifest", tmp);
	cr_assert_lt(manifest_save(&own, file), 0);
}

Test(manifest, garbage_and_torn_lines_ignored)
{
	struct manifest m;
	char file[300];

	put("/m", "f /good/file\n"
		  "garbage line\n"
		  "x /bad/kind\n"
		  "f relative/path\n"
		  "\n"
		  "f\n"
		  "d /good/dir\n"
		  "f  /two-spaces\n"
		  "d /torn/at/the/e");	/* a cut-off final line names a prefix */
	snprintf(file, sizeof(file), "%s/m", tmp);
	cr_assert_eq(manifest_load(&m, file), 0);
	cr_assert_eq(kind_of(&m, "/good/file"), 'f');
	cr_assert_eq(kind_of(&m, "/good/dir"), 'd');
	cr_assert_not(manifest_has(&m, "/bad/kind"));
	cr_assert_not(manifest_has(&m, "/torn/at/the/e"), "torn last line accepted");
	cr_assert_eq(m.n, 2);
	manifest_free(&m);
}

Test(manifest, remove_stale)
{
	struct manifest keep;

	/* what the old pass created */
	cr_assert_eq(host_write(&h, "/a/b/c/deep", "1", 1, 0644), 0);
	cr_assert_eq(host_write(&h, "/a/b/file", "2", 1, 0644), 0);
	cr_assert_eq(host_write(&h, "/shared/ours", "3", 1, 0644), 0);
	cr_assert_eq(host_write(&h, "/kept/file", "4", 1, 0644), 0);
	cr_assert_eq(host_symlink(&h, "deep", "/a/b/c/link"), 0);
	cr_assert_eq(host_mkdirs(&h, "/empty/x/y", 0755), 0);
	/* someone else's file lands in one of our dirs */
	put("/shared/foreign", "not ours");
	/* and one of ours was already removed by hand */
	cr_assert_eq(unlink(F("/a/b/file")), 0);

	manifest_init(&keep);
	cr_assert_eq(manifest_add(&keep, "/kept", 'd'), 0);
	cr_assert_eq(manifest_add(&keep, "/kept/file", 'f'), 0);
	cr_assert_eq(manifest_remove_stale(tmp, &own, &keep), 0);
	manifest_free(&keep);

	cr_assert_not(exists("/a/b/c/deep"));
	cr_assert_not(exists("/a/b/c/link"));
	cr_assert_not(exists("/a/b/c"));
	cr_assert_not(exists("/a/b"));
	cr_assert_not(exists("/a"));
	cr_assert_not(exists("/empty/x/y"));
	cr_assert_not(exists("/empty"));
	cr_assert_not(exists("/shared/ours"));
	cr_assert(exists("/shared/foreign"));
	cr_assert(exists("/shared"), "non-empty dir removed");
	cr_assert(exists("/kept/file"));
	cr_assert(exists("/kept"));
	cr_assert_str_eq(slurp(F("/kept/file")), "4");
	/* the link's target was not followed */
	cr_assert(exists("/shared/foreign"));

	/* keep == NULL removes all */
	cr_assert_eq(manifest_remove_stale(tmp, &own, NULL), 0);
	cr_assert_not(exists("/kept/file"));
	cr_assert_not(exists("/kept"));
	cr_assert(exists("/shared/foreign"));
}

Test(manifest, remove_stale_deepest_first_whatever_the_order)
{
	struct manifest m;

	mkd("/d1");
	mkd("/d1/d2");
	mkd("/d1/d2/d3");
	put("/d1/d2/d3/f", "x");
	manifest_init(&m);
	/* shallowest first, file last: still converges in one call */
	cr_assert_eq(manifest_add(&m, "/d1", 'd'), 0);
	cr_assert_eq(manifest_add(&m, "/d1/d2", 'd'), 0);
	cr_assert_eq(manifest_add(&m, "/d1/d2/d3", 'd'), 0);
	cr_assert_eq(manifest_add(&m, "/d1/d2/d3/f", 'f'), 0);
	cr_assert_eq(manifest_remove_stale(tmp, &m, NULL), 0);
	cr_assert_not(exists("/d1"));
	manifest_free(&m);
}

Test(manifest, save_then_discard_end_to_end)
{
	struct manifest loaded;
	char file[300];

	cr_assert_eq(host_write(&h, R "/state/x", "1", 1, 0644), 0);
	cr_assert_eq(host_write(&h, "/run/nvidia/y", "2", 1, 0644), 0);
	snprintf(file, sizeof(file), "%s/saved.manifest", tmp);
	cr_assert_eq(manifest_save(&own, file), 0);
	cr_assert_eq(manifest_load(&loaded, file), 0);
	cr_assert_eq(manifest_remove_stale(tmp, &loaded, NULL), 0);
	manifest_free(&loaded);
	cr_assert_not(exists("/run"));
	cr_assert_not(exists("/var"));
	cr_assert(exists("/saved.manifest"));
}
