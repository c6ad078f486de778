/* Shared by the profile-compiler tests: a fresh state per test, compile
 * helpers, and where the shipped profiles are. */
#ifndef MOKKA_TESTS_COMPILE_FIXTURE_H
#define MOKKA_TESTS_COMPILE_FIXTURE_H

#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ipc/log.h"
#include "ipc/state.h"
#include "profile/compile.h"

static struct state st;
static char err[512];

static inline void setup(void)
{
	state_init(&st);
	err[0] = '\0';
	log_setup("test_compile", LOG_LVL_DEBUG, LOG_FMT_TEXT);
}

static inline void teardown(void)
{
	state_free(&st);
}

TestSuite(compile, .init = setup, .fini = teardown);

static inline int compile_str(const char *name, const char *yaml,
		       const struct compile_opts *o)
{
	return compile_profile(name, yaml, strlen(yaml), NULL, NULL, 0, o, &st,
			       err, sizeof(err));
}

static inline void expect_error(const char *name, const char *yaml, const char *want)
{
	int rc = compile_str(name, yaml, NULL);

	cr_assert_eq(rc, -EINVAL, "compiled although it should fail with: %s", want);
	cr_assert_eq(strncmp(err, want, strlen(want)), 0,
		     "error\n  got:  %s\n  want: %s...", err, want);
}

static inline char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert_not_null(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static inline void profile_path(char *buf, size_t size, const char *name)
{
	const char *src = getenv("MOKKA_SRCDIR");

	snprintf(buf, size, "%s/etc/profiles/%s.yaml", src ? src : ".", name);
	if (!src && access(buf, R_OK) != 0)	/* run from tests/ or the build dir */
		snprintf(buf, size, "../etc/profiles/%s.yaml", name);
}

/* A small valid profile; tails below start at line 14. */
#define HEAD \
	"version: \"1.0\"\n"				/* 1 */ \
	"system:\n"					/* 2 */ \
	"  driver_version: \"550.163.01\"\n"		/* 3 */ \
	"device_defaults:\n"				/* 4 */ \
	"  name: \"NVIDIA H100 80GB HBM3\"\n"		/* 5 */ \
	"  memory:\n"					/* 6 */ \
	"    total_bytes: 85899345920\n"		/* 7 */ \
	"  pci:\n"					/* 8 */ \
	"    device_id: 0x233010DE\n"			/* 9 */ \
	"    subsystem_id: 0x16C10000\n"		/* 10 */ \
	"  pcie:\n"					/* 11 */ \
	"    max_link_gen: 5\n"				/* 12 */ \
	"    max_link_width: 16\n"			/* 13 */

#define TWO_DEVICES \
	"devices:\n"					/* 14 */ \
	"  - index: 0\n"				/* 15 */ \
	"    pci: {bus_id: \"0000:1A:00.0\"}\n"		/* 16 */ \
	"  - index: 1\n"				/* 17 */ \
	"    pci: {bus_id: \"0000:9a:00.0\"}\n"		/* 18 */

#define TWO_ROOTS \
	"pcie_topology:\n"				/* 19 */ \
	"  root_complexes:\n"				/* 20 */ \
	"    - id: \"pci0000:00\"\n"			/* 21 */ \
	"      numa_node: 0\n"				/* 22 */ \
	"      devices: [\"0000:1a:00.0\"]\n"		/* 23 */ \
	"    - id: \"pci0000:80\"\n"			/* 24 */ \
	"      numa_node: 1\n"				/* 25 */ \
	"      devices: [\"0000:9a:00.0\"]\n"		/* 26 */

static inline void capture_stderr(int *saved, char *path)
{
	int fd;

	fflush(stderr);
	*saved = dup(2);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	dup2(fd, 2);
	close(fd);
}

static inline void restore_stderr(int saved)
{
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
}

#endif
