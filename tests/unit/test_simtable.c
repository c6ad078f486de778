/* The daemon-row check: a worker's daemon spec runs only when its row
 * lists that binary, the env keys and no more arguments than allowed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "supervisor/simtable.h"

static char err[512];

static const struct sim_def *row(const char *name)
{
	for (size_t i = 0; i < sim_table_len; i++)
		if (strcmp(sim_table[i].name, name) == 0)
			return &sim_table[i];
	cr_assert_fail("no row %s", name);
	return NULL;
}

static void spec(struct ipc_daemon_spec *d, const char *name, int nargs, const char *env)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	cr_assert_eq(ipc_daemon_spec_add_arg(d, name), 0);
	for (int i = 1; i < nargs; i++)
		cr_assert_eq(ipc_daemon_spec_add_arg(d, "--x"), 0);
	if (env)
		cr_assert_eq(ipc_daemon_spec_add_env(d, env), 0);
}

Test(simtable, legit_specs_accepted)
{
	static const char *const pairs[][2] = { { "fabricmanager", "mokka-fabricmanager" },
						{ "ib", "mock-ib" },
						{ "kernellog", "mokka-kernellog" } };
	struct ipc_daemon_spec d;

	for (size_t i = 0; i < 3; i++) {
		spec(&d, pairs[i][1], 5, "MOKKA_LOG_LEVEL=debug");
		const struct daemon_def *dd = simtable_check_daemon(row(pairs[i][0]), &d, err,
								     sizeof(err));
		cr_assert_not_null(dd, "%s: %s", pairs[i][0], err);
		cr_expect_str_eq(dd->name, pairs[i][1]);
		cr_expect_not_null(dd->caps);
		ipc_daemon_spec_free(&d);
	}
}

Test(simtable, forged_binary_rejected)
{
	struct ipc_daemon_spec d;

	/* another row's daemon, an unknown one, and any daemon from a row
	 * that has none */
	spec(&d, "mokka-kernellog", 1, NULL);
	cr_expect_null(simtable_check_daemon(row("fabricmanager"), &d, err, sizeof(err)));
	cr_expect(strstr(err, "not one simulator fabricmanager may start"), "%s", err);
	ipc_daemon_spec_free(&d);
	spec(&d, "sh", 1, NULL);
	cr_expect_null(simtable_check_daemon(row("ib"), &d, err, sizeof(err)));
	ipc_daemon_spec_free(&d);
	spec(&d, "mokka-fabricmanager", 1, NULL);
	cr_expect_null(simtable_check_daemon(row("gpudriver"), &d, err, sizeof(err)));
	ipc_daemon_spec_free(&d);
}

Test(simtable, path_traversal_rejected)
{
	static const char *const names[] = { "../mokka-fabricmanager", "/bin/sh",
					     "sub/mokka-fabricmanager", "..", ".hidden" };
	struct ipc_daemon_spec d;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		memset(&d, 0, sizeof(d));
		snprintf(d.name, sizeof(d.name), "%s", names[i]);
		cr_assert_eq(ipc_daemon_spec_add_arg(&d, "x"), 0);
		cr_expect_null(simtable_check_daemon(row("fabricmanager"), &d, err, sizeof(err)),
			       "%s accepted", names[i]);
		cr_expect(strstr(err, "name"), "%s: %s", names[i], err);
		ipc_daemon_spec_free(&d);
	}
}

Test(simtable, foreign_env_key_rejected)
{
	struct ipc_daemon_spec d;

	spec(&d, "mock-ib", 3, "LD_PRELOAD=/tmp/evil.so");
	cr_expect_null(simtable_check_daemon(row("ib"), &d, err, sizeof(err)));
	cr_expect(strstr(err, "LD_PRELOAD"), "%s", err);
	ipc_daemon_spec_free(&d);
	/* a key that only starts like an allowed one */
	spec(&d, "mock-ib", 3, "MOKKA_LOG_LEVELX=1");
	cr_expect_null(simtable_check_daemon(row("ib"), &d, err, sizeof(err)));
	ipc_daemon_spec_free(&d);
}

Test(simtable, too_many_args_rejected)
{
	struct ipc_daemon_spec d;
	const struct sim_def *fm = row("fabricmanager");

	spec(&d, "mokka-fabricmanager", fm->daemons[0].max_args, NULL);
	cr_expect_not_null(simtable_check_daemon(fm, &d, err, sizeof(err)), "%s", err);
	cr_assert_eq(ipc_daemon_spec_add_arg(&d, "--one-more"), 0);
	cr_expect_null(simtable_check_daemon(fm, &d, err, sizeof(err)));
	cr_expect(strstr(err, "arguments"), "%s", err);
	ipc_daemon_spec_free(&d);
}

Test(simtable, every_row_is_bounded)
{
	for (size_t i = 0; i < sim_table_len; i++) {
		cr_expect_not_null(sim_table[i].caps, "%s has no capability list", sim_table[i].name);
		for (const struct daemon_def *d = sim_table[i].daemons; d && d->name; d++) {
			cr_expect_not_null(d->caps, "%s", d->name);
			cr_expect_null(strchr(d->name, '/'), "%s", d->name);
			cr_expect_leq(d->max_args, IPC_DAEMON_MAX_ARGS);
		}
	}
}
