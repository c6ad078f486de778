/* fileio_read: whole regular files only, bounded, never blocking. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "fileio/fileio.h"

static char dir[64], path[128], msg[256];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/mokka-test-fileio.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static const char *at(const char *name)
{
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

static void put(const char *name, const char *text, size_t len)
{
	FILE *f = fopen(at(name), "w");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

TestSuite(fileio, .init = setup, .fini = teardown);

Test(fileio, reads_a_whole_file_nul_terminated)
{
	char *buf;
	size_t len;

	put("f", "a\0b\n", 4);
	cr_assert_eq(fileio_read(at("f"), 4, &buf, &len, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(len, 4);
	cr_assert_eq(memcmp(buf, "a\0b\n", 5), 0);
	free(buf);
	put("empty", "", 0);
	cr_assert_eq(fileio_read(at("empty"), 4, &buf, &len, NULL, 0), 0);
	cr_assert_eq(len, 0);
	cr_assert_eq(buf[0], '\0');
	free(buf);
}

/* /proc files say size 0: the buffer grows while reading. */
Test(fileio, reads_files_whose_size_is_a_lie)
{
	char *buf;
	size_t len;

	cr_assert_eq(fileio_read("/proc/self/status", 1 << 20, &buf, &len, msg, sizeof(msg)), 0,
		     "%s", msg);
	cr_assert_gt(len, 0);
	cr_assert_eq(strlen(buf), len);
	cr_assert_not_null(strstr(buf, "Name:"));
	free(buf);
	cr_assert_eq(fileio_read("/proc/self/status", 8, &buf, &len, msg, sizeof(msg)), -EFBIG);
	cr_assert_null(buf);
}

Test(fileio, refuses_what_is_not_a_bounded_regular_file)
{
	char *buf = (char *)1;
	size_t len = 1;

	put("big", "12345", 5);
	cr_assert_eq(fileio_read(at("big"), 4, &buf, &len, msg, sizeof(msg)), -EFBIG);
	cr_assert(strstr(msg, "big") && strstr(msg, "4 byte limit"), "%s", msg);
	cr_assert_null(buf);
	cr_assert_eq(len, 0);
	cr_assert_eq(fileio_read(dir, 4, &buf, &len, msg, sizeof(msg)), -EISDIR);
	cr_assert(strstr(msg, "is a directory"), "%s", msg);
	/* A FIFO nobody writes to is refused, not waited on. */
	cr_assert_eq(mkfifo(at("fifo"), 0600), 0);
	cr_assert_eq(fileio_read(at("fifo"), 4, &buf, &len, msg, sizeof(msg)), -EINVAL);
	cr_assert(strstr(msg, "not a regular file"), "%s", msg);
	cr_assert_eq(fileio_read(at("none"), 4, &buf, &len, msg, sizeof(msg)), -ENOENT);
	cr_assert(strstr(msg, "none: open"), "%s", msg);
	cr_assert_eq(symlink("nowhere", at("dangling")), 0);
	cr_assert_eq(fileio_read(at("dangling"), 4, &buf, &len, msg, sizeof(msg)), -ENOENT);
	cr_assert(strstr(msg, "dangling symlink"), "%s", msg);
}

Test(fileio, nofollow_refuses_a_symlink)
{
	char *buf;
	size_t len;

	put("f", "x", 1);
	cr_assert_eq(symlink("f", at("link")), 0);
	cr_assert_eq(fileio_read(at("link"), 4, &buf, &len, NULL, 0), 0);
	cr_assert_str_eq(buf, "x");
	free(buf);
	cr_assert_eq(fileio_read_flags(at("link"), O_NOFOLLOW, 4, &buf, &len, NULL, 0), -ELOOP);
	cr_assert_eq(fileio_read_flags(at("f"), O_NOFOLLOW, 4, &buf, &len, NULL, 0), 0);
	free(buf);
}
