/* Path safety (issue 19): every host.c write, manifest removal and
 * generation walk refuses a link planted below the root and never
 * follows it; a killed writer's temporary files are swept. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "fileio/beneath.h"
#include "workers/generation.h"
#include "workers/host.h"
#include "workers/manifest.h"

#define R "/var/lib/nvml-mock"

static char tmp[256], root[300], out[300];
static struct host h;
static struct manifest own;

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/mokka-test-beneath.XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(root, sizeof(root), "%s/root", tmp);
	snprintf(out, sizeof(out), "%s/outside", tmp);
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(mkdir(out, 0755), 0);
	memset(&h, 0, sizeof(h));
	snprintf(h.root, sizeof(h.root), "%s", root);
	snprintf(h.mock_root, sizeof(h.mock_root), R);
	manifest_init(&own);
	h.own = &own;
}

static void teardown(void)
{
	manifest_free(&own);
	if (tmp[0])
		nftw(tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(beneath, .init = setup, .fini = teardown);

static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static int entries(const char *dir)
{
	char cmd[600], buf[64] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "find '%s' | wc -l", dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(buf, sizeof(buf), p));
	pclose(p);
	return atoi(buf);
}

/* A link at any level of a write's path: refused (-ELOOP), nothing made
 * outside. */
Test(beneath, writes_refuse_links_at_every_level)
{
	static const char *const levels[] = { "/var", R, R "/sys", R "/sys/bus" };
	int base = entries(out);

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		sh("rm -rf '%s'/* && mkdir -p \"$(dirname '%s%s')\" && ln -s '%s' '%s%s'", root, root,
		   levels[i], out, root, levels[i]);
		cr_expect_eq(host_write(&h, R "/sys/bus/pci/x", "1", 1, 0644), -ELOOP, "%s",
			     levels[i]);
		cr_expect_eq(host_mkdirs(&h, R "/sys/bus/pci", 0755), -ELOOP, "%s", levels[i]);
		cr_expect_eq(host_symlink(&h, "t", R "/sys/bus/l"), -ELOOP, "%s", levels[i]);
		cr_expect_eq(host_mknod_chr(&h, R "/sys/bus/n", 0600, 1, 3), -ELOOP, "%s",
			     levels[i]);
		cr_expect_eq(host_create(&h, R "/sys/bus/e", 0644), -ELOOP, "%s", levels[i]);
		cr_expect_eq(host_unlink(&h, R "/sys/bus/u"), -ELOOP, "%s", levels[i]);
		cr_expect_eq(entries(out), base, "something was made through %s", levels[i]);
	}
}

/* A leaf that is a link someone planted: the write is refused (-ELOOP),
 * the link and its target left as they are; a link an earlier pass made
 * (in the previous manifest) is replaced. */
Test(beneath, leaf_link_refused_not_followed)
{
	char target[400];
	struct manifest prev;

	snprintf(target, sizeof(target), "%s/victim", out);
	sh("echo keep > '%s' && mkdir -p '%s" R "' && ln -s '%s' '%s" R "/f'", target, root,
	   target, root);
	cr_expect_eq(host_write(&h, R "/f", "new", 3, 0644), -ELOOP);
	cr_expect_eq(host_mknod_chr(&h, R "/f", 0600, 1, 3), -ELOOP);
	cr_expect_eq(host_create(&h, R "/f", 0644), -ELOOP);
	cr_expect_eq(host_symlink(&h, "elsewhere", R "/f"), -ELOOP);
	cr_expect_eq(host_symlink(&h, target, R "/f"), 0, "the same link: nothing to do");
	sh("grep -qx keep '%s'", target);
	sh("test -L '%s" R "/f'", root);
	manifest_init(&prev);
	manifest_add(&prev, R "/f", 'f');
	h.prev = &prev;
	cr_expect_eq(host_write(&h, R "/f", "new", 3, 0644), 0);
	h.prev = NULL;
	manifest_free(&prev);
	sh("grep -qx keep '%s'", target);
	sh("test ! -L '%s" R "/f' && grep -qx new '%s" R "/f'", root, root);
}

/* Teardown through a link that replaced an owned directory: refused,
 * the outside left alone. */
Test(beneath, remove_refuses_links)
{
	struct manifest none;

	cr_assert_eq(host_write(&h, R "/d/e/f", "x", 1, 0644), 0);
	sh("mv '%s" R "/d/e' '%s/e' && ln -s '%s/e' '%s" R "/d/e'", root, out, out, root);
	cr_expect_lt(manifest_remove_stale(root, &own, NULL), 0);
	sh("test -f '%s/e/f'", out);
	manifest_init(&none);
	cr_expect_eq(manifest_load_at(&none, root, R "/d/e/f"), -ELOOP);
	cr_expect_eq(manifest_save_at(&own, root, R "/d/e/m"), -ELOOP);
	sh("test ! -e '%s/e/m'", out);
	manifest_free(&none);
}

/* The generation walks (converge, teardown) never leave through a link. */
Test(beneath, generations_refuse_links)
{
	static const char *const gens[] = { "/sys/devices", NULL };

	cr_assert_eq(gen_prepare(&h, "pcibus", gens, true), 0);
	h.staging = true;
	cr_assert_eq(host_write(&h, R "/sys/devices/a/b", "x", 1, 0644), 0);
	h.staging = false;
	/* The shadow's directory swapped for a link to outside. */
	sh("cp -a '%s" R "/.staged/pcibus/sys/devices' '%s/dev' && rm -rf '%s" R
	   "/.staged/pcibus/sys/devices' && ln -s '%s/dev' '%s" R "/.staged/pcibus/sys/devices'",
	   root, out, root, out, root);
	manifest_free(&own);
	manifest_init(&own);
	cr_expect_eq(gen_converge(&h, &own), -ELOOP);
	cr_expect_lt(gen_remove_all(&h), 0);
	sh("test -f '%s/dev/a/b'", out);
}

/* A killed writer's temporary file: stale once its pid is gone. */
Test(beneath, stale_temporaries_swept)
{
	char name[64], live[64];
	pid_t pid = fork();
	int dfd;

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	snprintf(name, sizeof(name), "config" BENEATH_TMP "%d", (int)pid);
	snprintf(live, sizeof(live), "config" BENEATH_TMP "%d", (int)getppid());
	cr_expect(beneath_stale_tmp(name));
	cr_expect(!beneath_stale_tmp(live));
	cr_expect(!beneath_stale_tmp("config"));
	cr_expect(!beneath_stale_tmp("config" BENEATH_TMP "x1"));
	sh("mkdir -p '%s/d' && touch '%s/d/%s' '%s/d/%s' '%s/d/keep'", root, root, name, root,
	   live, root);
	dfd = open(root, O_PATH | O_DIRECTORY);
	cr_assert_geq(dfd, 0);
	int d = beneath_open(dfd, "d", O_PATH | O_DIRECTORY, 0);
	cr_assert_geq(d, 0);
	cr_expect_eq(beneath_sweep_tmp(d), 1);
	close(d);
	close(dfd);
	sh("test ! -e '%s/d/%s' && test -e '%s/d/%s' && test -e '%s/d/keep'", root, name, root,
	   live, root);
}

/* An owned directory left holding only a killed writer's temporary file
 * is removed whole at teardown. */
Test(beneath, teardown_takes_stale_temporaries)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	cr_assert_eq(host_write(&h, R "/x/y/z", "1", 1, 0644), 0);
	sh("touch '%s" R "/x/y/z" BENEATH_TMP "%d'", root, (int)pid);
	cr_expect_eq(manifest_remove_stale(root, &own, NULL), 0);
	sh("test ! -e '%s" R "/x'", root);
}

/* fileio/beneath_ops.c: mkdir -p and the atomic replace refuse links (the
 * leaf's included), never make or write anything through one. */
Test(beneath, ops_refuse_links)
{
	char victim[400], fdpath[64];
	int rootfd = beneath_root(root), dfd, base = entries(out);

	cr_assert_geq(rootfd, 0);
	cr_expect_eq(beneath_mkdirs(rootfd, "/a/b/c", 0755), 0);
	cr_expect_eq(beneath_mkdirs(rootfd, "a/b/c/", 0755), 0);	/* there already */
	sh("ln -s '%s' '%s/a/b/l'", out, root);
	cr_expect_eq(beneath_mkdirs(rootfd, "/a/b/l/d", 0755), -ELOOP);
	cr_expect_eq(beneath_unlink(rootfd, "/a/b/l/x", 0), -ELOOP);
	dfd = beneath_open(rootfd, "/a/b", O_PATH | O_DIRECTORY, 0);
	cr_assert_geq(dfd, 0);
	snprintf(victim, sizeof(victim), "%s/victim", out);
	sh("echo keep > '%s' && ln -s '%s' '%s/a/b/f'", victim, victim, root);
	cr_expect_eq(beneath_replace(dfd, "f", "new", 3, 0644, 0), -ELOOP);
	sh("grep -qx keep '%s' && test -L '%s/a/b/f'", victim, root);
	cr_expect_eq(beneath_replace(dfd, "f", "new", 3, 0644, BENEATH_REPLACE_LINK), 0);
	sh("grep -qx keep '%s' && test ! -L '%s/a/b/f' && grep -qx new '%s/a/b/f'", victim, root,
	   root);
	cr_expect_eq(beneath_replace(dfd, "g", "x", 1, 0600, BENEATH_REPLACE_SYNC), 0);
	sh("test \"$(stat -c %%a '%s/a/b/g')\" = 600", root);
	sh("! ls -a '%s/a/b' | grep -q mokka-tmp", root);
	cr_expect_eq(beneath_fdpath(dfd, "g", fdpath, sizeof(fdpath)), 0);
	{	/* this process's fd: opened here, not in a shell */
		char c = 0;
		int fd = open(fdpath, O_RDONLY | O_CLOEXEC);

		cr_expect(fd >= 0 && read(fd, &c, 1) == 1 && c == 'x', "%s", fdpath);
		if (fd >= 0)
			close(fd);
	}
	cr_expect_eq(entries(out), base + 1, "only the victim was made outside");
	close(dfd);
	close(rootfd);
}

/* beneath_open_in_root: a link is followed as a chroot would, an absolute
 * target or "../.." stays inside the root. */
Test(beneath, in_root_stays_inside)
{
	int rootfd = beneath_root(root), fd;
	struct stat a, b;
	char p[400];

	cr_assert_geq(rootfd, 0);
	sh("mkdir -p '%s/run/cdi' '%s/var' '%s/cdi' && ln -s /run '%s/var/run' && "
	   "ln -s ../../../../../../../../cdi '%s/var/up'", root, root, out, root, root);
	fd = beneath_open_in_root(rootfd, "/var/run/cdi", O_PATH | O_DIRECTORY, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &a), 0);
	close(fd);
	sh("test -d '%s/run/cdi'", root);
	snprintf(p, sizeof(p), "%s/run/cdi", root);
	cr_assert_eq(stat(p, &b), 0);
	cr_expect(a.st_ino == b.st_ino, "resolved inside the root");
	fd = beneath_open_in_root(rootfd, "/var/up", O_PATH | O_DIRECTORY, 0);
	cr_expect_eq(fd, -ENOENT, "../.. climbs no higher than the root (no %s/cdi)", root);
	if (fd >= 0)
		close(fd);
	close(rootfd);
}
