/*
 * libmockfs.so unit tests.  The shim only works preloaded, so each check
 * re-executes this binary (/proc/self/exe) with LD_PRELOAD set; a
 * constructor sees MOCKFS_PROBE and performs one libc call instead of
 * starting Criterion, printing "OK <data>" or "ERR <errno>".
 */
#undef _FORTIFY_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
char *__realpath_chk(const char *path, char *resolved, size_t len);
ssize_t __readlink_chk(const char *path, char *buf, size_t len, size_t blen);

#define BDF "0000:07:00.0"
#define DEV "/sys/bus/pci/devices/" BDF
#define MARKER "mock-tree\n"

/* ---- probe side (runs in the preloaded child) ------------------------- */

static void out_fd(int fd)
{
	char b[512];
	ssize_t n;

	if (fd < 0) {
		printf("ERR %d\n", errno);
		return;
	}
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n < 0) {
		printf("ERR %d\n", errno);
		return;
	}
	/* config is binary: report its first byte, else the text */
	if (n > 0 && (unsigned char)b[0] == 0xde)
		printf("OK de\n");
	else
		printf("OK %.*s", (int)n, b);
}

static void out_rc(long rc, const char *data)
{
	if (rc < 0)
		printf("ERR %d\n", errno);
	else
		printf("OK %s\n", data ? data : "");
}

static void out_stat(int rc, long long size, unsigned mode)
{
	char b[64];

	/* directory sizes depend on the filesystem: leave them out */
	if (S_ISDIR(mode))
		snprintf(b, sizeof(b), "dir");
	else
		snprintf(b, sizeof(b), "%lld %s", size,
			 S_ISLNK(mode) ? "lnk" : "reg");
	out_rc(rc, b);
}

static void *thread_open(void *arg)
{
	int fd = open((const char *)arg, O_RDONLY);

	if (fd >= 0)
		close(fd);
	return (void *)(long)(fd >= 0);
}

typedef int (*xstat_fn)(int, const char *, struct stat *);
typedef int (*fxstatat_fn)(int, int, const char *, struct stat *, int);

static void probe(const char *op, const char *p)
{
	struct stat st;
	struct stat64 st64;
	char b[PATH_MAX];
	ssize_t n;
	int rc;
	/* a dirfd that is not "/" proves absolute paths ignore it */
	int dfd = open("/tmp", O_RDONLY | O_DIRECTORY);

	if (!strcmp(op, "open")) {
		out_fd(open(p, O_RDONLY));
	} else if (!strcmp(op, "open64")) {
		out_fd(open64(p, O_RDONLY));
	} else if (!strcmp(op, "openat")) {
		out_fd(openat(dfd, p, O_RDONLY));
	} else if (!strcmp(op, "openat64")) {
		out_fd(openat64(dfd, p, O_RDONLY));
	} else if (!strcmp(op, "open_2")) {
		out_fd(__open_2(p, O_RDONLY));
	} else if (!strcmp(op, "open64_2")) {
		out_fd(__open64_2(p, O_RDONLY));
	} else if (!strcmp(op, "openat_2")) {
		out_fd(__openat_2(dfd, p, O_RDONLY));
	} else if (!strcmp(op, "openat64_2")) {
		out_fd(__openat64_2(dfd, p, O_RDONLY));
	} else if (!strcmp(op, "fopen") || !strcmp(op, "fopen64")) {
		FILE *f = op[5] ? fopen64(p, "r") : fopen(p, "r");
		out_fd(f ? dup(fileno(f)) : -1);
		if (f)
			fclose(f);
	} else if (!strcmp(op, "opendir")) {
		DIR *d = opendir(p);
		struct dirent *e;
		b[0] = '\0';
		while (d && (e = readdir(d)))
			if (e->d_name[0] != '.')
				strcat(strcat(b, e->d_name), " ");
		out_rc(d ? 0 : -1, b);
		if (d)
			closedir(d);
	} else if (!strcmp(op, "scandir")) {
		struct dirent **list;
		rc = scandir(p, &list, NULL, alphasort);
		snprintf(b, sizeof(b), "%d", rc);
		for (int i = 0; i < rc; i++)
			free(list[i]);
		if (rc >= 0)
			free(list);
		out_rc(rc, b);
	} else if (!strcmp(op, "scandir64")) {
		struct dirent64 **list;
		rc = scandir64(p, &list, NULL, alphasort64);
		snprintf(b, sizeof(b), "%d", rc);
		for (int i = 0; i < rc; i++)
			free(list[i]);
		if (rc >= 0)
			free(list);
		out_rc(rc, b);
	} else if (!strcmp(op, "stat")) {
		rc = stat(p, &st);
		out_stat(rc, st.st_size, st.st_mode);
	} else if (!strcmp(op, "stat64")) {
		rc = stat64(p, &st64);
		out_stat(rc, st64.st_size, st64.st_mode);
	} else if (!strcmp(op, "lstat")) {
		rc = lstat(p, &st);
		out_stat(rc, st.st_size, st.st_mode);
	} else if (!strcmp(op, "lstat64")) {
		rc = lstat64(p, &st64);
		out_stat(rc, st64.st_size, st64.st_mode);
	} else if (!strcmp(op, "fstatat")) {
		rc = fstatat(dfd, p, &st, AT_SYMLINK_NOFOLLOW);
		out_stat(rc, st.st_size, st.st_mode);
	} else if (!strcmp(op, "fstatat64")) {
		rc = fstatat64(dfd, p, &st64, 0);
		out_stat(rc, st64.st_size, st64.st_mode);
	} else if (!strcmp(op, "statx")) {
		struct statx sx;
		rc = statx(dfd, p, 0, STATX_SIZE | STATX_TYPE, &sx);
		out_stat(rc, (long long)sx.stx_size, sx.stx_mode);
	} else if (!strncmp(op, "__", 2)) {
		/* legacy __xstat family: look up whatever the process binds */
		void *fn = dlsym(RTLD_DEFAULT, op);
		if (!fn) {
			printf("OK nosym\n");
		} else if (strstr(op, "fxstatat")) {
			rc = ((fxstatat_fn)fn)(1, dfd, p, &st, 0);
			out_stat(rc, st.st_size, st.st_mode);
		} else {
			rc = ((xstat_fn)fn)(1, p, &st);
			out_stat(rc, st.st_size, st.st_mode);
		}
	} else if (!strcmp(op, "access")) {
		out_rc(access(p, R_OK), NULL);
	} else if (!strcmp(op, "euidaccess")) {
		out_rc(euidaccess(p, R_OK), NULL);
	} else if (!strcmp(op, "eaccess")) {
		out_rc(eaccess(p, R_OK), NULL);
	} else if (!strcmp(op, "faccessat")) {
		out_rc(faccessat(dfd, p, R_OK, AT_EACCESS), NULL);
	} else if (!strcmp(op, "readlink") || !strcmp(op, "readlinkat") ||
		   !strcmp(op, "readlink_chk")) {
		memset(b, 0, sizeof(b));
		n = op[8] == 'a' ? readlinkat(dfd, p, b, sizeof(b) - 1) :
		    op[8] == '_' ? __readlink_chk(p, b, sizeof(b) - 1,
						  sizeof(b)) :
		    readlink(p, b, sizeof(b) - 1);
		out_rc(n, b);
	} else if (!strcmp(op, "realpath")) {
		out_rc(realpath(p, b) ? 0 : -1, b);
	} else if (!strcmp(op, "realpath_alloc")) {
		char *r = realpath(p, NULL);
		out_rc(r ? 0 : -1, r);
		free(r);
	} else if (!strcmp(op, "realpath_chk")) {
		out_rc(__realpath_chk(p, b, sizeof(b)) ? 0 : -1, b);
	} else if (!strcmp(op, "errno")) {
		/* a successful first call must leave errno alone */
		errno = EDOM;
		rc = open(p, O_RDONLY);
		snprintf(b, sizeof(b), "%d", errno);
		out_rc(rc, b);
	} else if (!strcmp(op, "threads")) {
		pthread_t t[8];
		long ok = 0;
		for (int i = 0; i < 8; i++)
			pthread_create(&t[i], NULL, thread_open, (void *)p);
		for (int i = 0; i < 8; i++) {
			void *r;
			pthread_join(t[i], &r);
			ok += (long)r;
		}
		snprintf(b, sizeof(b), "%ld", ok);
		out_rc(0, b);
	} else {
		printf("BAD op\n");
	}
	fflush(stdout);
}

__attribute__((constructor)) static void probe_main(void)
{
	const char *op = getenv("MOCKFS_PROBE");

	if (!op)
		return;
	probe(op, getenv("MOCKFS_PATH"));
	_exit(0);
}

/* ---- test side -------------------------------------------------------- */

static char tmp[] = "/tmp/mokka-mockfs-XXXXXX";
static bool made;		/* mkdtemp succeeded: teardown removes tmp */
static char root[PATH_MAX];
static char shim[PATH_MAX];

static void put(const char *rel, const void *data, size_t n)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	f = fopen(p, "w");
	cr_assert_not_null(f, "create %s", p);
	cr_assert_eq(fwrite(data, 1, n, f), n);
	fclose(f);
}

static void mk(const char *rel)
{
	char p[PATH_MAX], *s;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	for (s = p + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	}
	cr_assert(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s", p);
}

static void lnk(const char *target, const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	cr_assert_eq(symlink(target, p), 0, "symlink %s", p);
}

/* A small tree shaped like the pcibus worker's output. */
static void setup(void)
{
	const char *b = getenv("MOKKA_BUILDDIR");
	unsigned char cfg[256] = { 0xde, 0x10, 0x30, 0x23 };
	char dev[] = "/sys/devices/pci0000:00/" BDF;

	cr_assert_not_null(b, "MOKKA_BUILDDIR must point at the build tree");
	snprintf(shim, sizeof(shim), "%s/.libs/libmockfs.so", b);
	cr_assert_eq(access(shim, R_OK), 0, "missing %s", shim);
	cr_assert_not_null(mkdtemp(tmp));
	made = true;
	snprintf(root, sizeof(root), "%s/var/lib/nvml-mock", tmp);
	mk("");
	mk(dev);
	mk("/sys/bus/pci/devices");
	mk("/sys/bus/pci/drivers/nvidia");
	mk("/proc/bus/pci/07");
	lnk("../../../devices/pci0000:00/" BDF, DEV);
	lnk("../../../bus/pci/drivers/nvidia", "/sys/devices/pci0000:00/" BDF
	    "/driver");
	put("/sys/devices/pci0000:00/" BDF "/config", cfg, sizeof(cfg));
	put("/sys/devices/pci0000:00/" BDF "/marker", MARKER, 10);
	put("/sys/devices/pci0000:00/" BDF "/numa_node", "1\n", 2);
	put("/proc/bus/pci/devices", "0700\t10de2330\t0\n", 16);
	put("/proc/bus/pci/07/00.0", cfg, sizeof(cfg));
}

static int rm_rf(const char *p)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
	return system(cmd);
}

static void teardown(void)
{
	if (made)
		rm_rf(tmp);
}

/*
 * Runs one probe with LD_PRELOAD=shim and MOCK_PCI_ROOT=mroot (NULL:
 * unset).  Returns the probe's single output line.
 */
static char *probe_run(const char *mroot, const char *op, const char *path)
{
	static char out[4096];
	int pfd[2];
	pid_t pid;
	ssize_t n, len = 0;
	int status;

	cr_assert_eq(pipe(pfd), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		setenv("LD_PRELOAD", shim, 1);
		/* ASan builds: our shim sits before the runtime on purpose */
		setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
		if (mroot)
			setenv("MOCK_PCI_ROOT", mroot, 1);
		else
			unsetenv("MOCK_PCI_ROOT");
		setenv("MOCKFS_PROBE", op, 1);
		setenv("MOCKFS_PATH", path, 1);
		execl("/proc/self/exe", "test_mockfs", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += n;
	close(pfd[0]);
	out[len] = '\0';
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "probe %s %s died (status %d)", op, path, status);
	return out;
}

#define expect(mroot, op, path, want)					\
	do {								\
		const char *got_ = probe_run(mroot, op, path);		\
		cr_expect_str_eq(got_, want, "%s(%s)", op, path);	\
	} while (0)

static char *err(int e)
{
	static char b[32];

	snprintf(b, sizeof(b), "ERR %d\n", e);
	return b;
}

TestSuite(mockfs, .init = setup, .fini = teardown);

Test(mockfs, open_family_reads_mock_files)
{
	static const char *ops[] = { "open", "open64", "openat", "openat64",
		"open_2", "open64_2", "openat_2", "openat64_2", "fopen",
		"fopen64" };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		expect(root, ops[i], DEV "/config", "OK de\n");
		expect(root, ops[i], DEV "/marker", "OK " MARKER);
		expect(root, ops[i], DEV "/nonexistent", err(ENOENT));
	}
}

Test(mockfs, sys_devices_and_proc_are_redirected)
{
	expect(root, "open", "/sys/devices/pci0000:00/" BDF "/marker",
	       "OK " MARKER);
	expect(root, "open", "/sys/devices/pci0000:00/" BDF "/numa_node",
	       "OK 1\n");
	expect(root, "open", "/proc/bus/pci/devices", "OK 0700\t10de2330\t0\n");
	expect(root, "open", "/proc/bus/pci/07/00.0", "OK de\n");
	expect(root, "opendir", "/proc/bus/pci", "OK 07 devices \n");
	expect(root, "opendir", "/sys/bus/pci/drivers", "OK nvidia \n");
}

Test(mockfs, mock_tree_replaces_host_view)
{
	/* only the mock device is listed, whatever the host has */
	expect(root, "opendir", "/sys/bus/pci/devices", "OK " BDF " \n");
	expect(root, "scandir", "/sys/bus/pci/devices", "OK 3\n");
	expect(root, "scandir64", "/sys/bus/pci/devices", "OK 3\n");
	/* a host-only PCI path is ENOENT, never the host's */
	expect(root, "access", "/sys/bus/pci/slots", err(ENOENT));
	expect(root, "opendir", "/sys/devices/pci0000:ff", err(ENOENT));
}

Test(mockfs, stat_family)
{
	static const char *ops[] = { "stat", "stat64", "fstatat64", "statx",
		"__xstat", "__xstat64", "__fxstatat", "__fxstatat64" };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		const char *got = probe_run(root, ops[i], DEV "/config");
		if (strcmp(got, "OK nosym\n") == 0)
			continue;	/* libc without the legacy entry */
		cr_expect_str_eq(got, "OK 256 reg\n", "%s", ops[i]);
		expect(root, ops[i], DEV, "OK dir\n");
		expect(root, ops[i], DEV "/nope", err(ENOENT));
	}
	/* lstat does not follow the device symlink (size = target length) */
	char lnk_want[64];
	snprintf(lnk_want, sizeof(lnk_want), "OK %zu lnk\n",
		 strlen("../../../devices/pci0000:00/" BDF));
	expect(root, "lstat", DEV, lnk_want);
	expect(root, "lstat64", DEV, lnk_want);
	expect(root, "fstatat", DEV, lnk_want);
	if (strcmp(probe_run(root, "__lxstat", DEV), "OK nosym\n") != 0) {
		expect(root, "__lxstat", DEV, lnk_want);
		expect(root, "__lxstat64", DEV, lnk_want);
	}
}

Test(mockfs, access_and_links)
{
	expect(root, "access", "/sys/bus/pci", "OK \n");
	expect(root, "faccessat", DEV "/marker", "OK \n");
	expect(root, "euidaccess", DEV "/marker", "OK \n");
	expect(root, "eaccess", DEV "/nope", err(ENOENT));
	expect(root, "faccessat", DEV "/nope", err(ENOENT));
	expect(root, "readlink", DEV, "OK ../../../devices/pci0000:00/" BDF "\n");
	expect(root, "readlinkat", DEV,
	       "OK ../../../devices/pci0000:00/" BDF "\n");
	expect(root, "readlink_chk", DEV "/driver",
	       "OK ../../../bus/pci/drivers/nvidia\n");
}

Test(mockfs, realpath_hides_the_root)
{
	expect(root, "realpath", DEV, "OK /sys/devices/pci0000:00/" BDF "\n");
	expect(root, "realpath_alloc", DEV "/driver",
	       "OK /sys/bus/pci/drivers/nvidia\n");
	expect(root, "realpath_chk", DEV "/../../../bus/pci/drivers/nvidia",
	       "OK /sys/bus/pci/drivers/nvidia\n");
	expect(root, "realpath", DEV "/nope", err(ENOENT));
	/* a root given with a trailing slash and through a symlink */
	char alias[PATH_MAX + 32];
	snprintf(alias, sizeof(alias), "%s/alias", tmp);
	cr_assert_eq(symlink(root, alias), 0);
	strcat(alias, "/");
	expect(alias, "realpath", DEV, "OK /sys/devices/pci0000:00/" BDF "\n");
	expect(alias, "open", DEV "/marker", "OK " MARKER);
}

Test(mockfs, unset_or_empty_root_is_pass_through)
{
	expect(NULL, "open", DEV "/marker", err(ENOENT));
	expect("", "open", DEV "/marker", err(ENOENT));
	expect(NULL, "stat", tmp, "OK dir\n");
}

Test(mockfs, other_paths_untouched)
{
	char p[2 * PATH_MAX];

	/* the real file under R, by its own name, still opens */
	snprintf(p, sizeof(p), "%s%s/marker", root,
		 "/sys/devices/pci0000:00/" BDF);
	expect(root, "open", p, "OK " MARKER);
	/* near misses of the prefixes are not rewritten */
	expect(root, "access", "/sys/bus/pcix", err(ENOENT));
	expect(root, "access", "/proc/bus/pcix", err(ENOENT));
	/* relative paths are not rewritten: cwd is not R */
	expect(root, "open", "sys/bus/pci/devices/" BDF "/marker", err(ENOENT));
}

Test(mockfs, overflow_is_enametoolong)
{
	char *big = malloc(4096);

	cr_assert_not_null(big);
	memset(big, 'a', 4090);
	big[0] = '/';
	big[4090] = '\0';
	expect(big, "open", DEV "/config", err(ENAMETOOLONG));
	expect(big, "fopen", DEV "/config", err(ENAMETOOLONG));
	expect(big, "opendir", "/sys/bus/pci/devices", err(ENAMETOOLONG));
	expect(big, "realpath", DEV, err(ENAMETOOLONG));
	/* no fallback to the host, and non-PCI paths keep working */
	expect(big, "stat", tmp, "OK dir\n");
	free(big);
}

Test(mockfs, errno_preserved_and_threads)
{
	char want[32];

	snprintf(want, sizeof(want), "OK %d\n", EDOM);
	expect(root, "errno", DEV "/marker", want);
	expect(root, "threads", DEV "/marker", "OK 8\n");
}

Test(mockfs, coreutils_see_the_mock)
{
	char cmd[3 * PATH_MAX];
	FILE *f;
	char line[256] = "";

	snprintf(cmd, sizeof(cmd),
		 "LD_PRELOAD='%s' MOCK_PCI_ROOT='%s' sh -c 'cat " DEV
		 "/marker; ls /sys/bus/pci/devices; readlink " DEV "/driver'",
		 shim, root);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	size_t n = fread(line, 1, sizeof(line) - 1, f);
	line[n] = '\0';
	cr_assert_eq(pclose(f), 0);
	cr_expect_str_eq(line, MARKER BDF "\n../../../bus/pci/drivers/nvidia\n");
}
