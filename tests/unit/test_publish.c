/* The publish step of a reconcile pass (supervisor/reconcile.c) over fake
 * workers: only a pass whose every Stage succeeded sends publish, to the
 * ROLE_PUBLISH simulators alone, after the barrier and before the daemons,
 * a stage-first publisher's to completion before the others'; a failed
 * publish fails the pass (no daemons, no Apply). */
#include <errno.h>

#include <criterion/criterion.h>

#include "fake_workers_fixture.h"

enum { FIRST, PUB, DAEMON, PLAIN, NDEFS };

static const struct sim_def defs[NDEFS] = {
	[FIRST] = { .name = "first", .binary = "w-first", .caps = no_caps,
		    .roles = ROLE_SIM | ROLE_APPLY | ROLE_STAGE_FIRST | ROLE_PUBLISH },
	[PUB] = { .name = "pub", .binary = "w-pub", .caps = no_caps,
		  .roles = ROLE_SIM | ROLE_APPLY | ROLE_PUBLISH },
	[DAEMON] = { .name = "daemon", .binary = "w-daemon", .caps = no_caps,
		     .roles = ROLE_SIM | ROLE_DAEMON },
	[PLAIN] = { .name = "plain", .binary = "w-plain", .caps = no_caps, .roles = ROLE_SIM },
};

static void setup(void)
{
	fake_setup(defs, NDEFS);
	fake_boot();
}

TestSuite(publish, .init = setup, .fini = fake_teardown);

Test(publish, follows_the_barrier_and_precedes_the_daemons)
{
	int mark;

	fake_new_state(1);
	fake_reply(FIRST, true, "");
	cr_assert_eq(fk.s.phase, PASS_STAGE);
	fake_reply(PUB, true, "");
	fake_reply(DAEMON, true, "");
	cr_assert_eq(fake_count(IPC_OP_PUBLISH, 0), 0, "publish before the barrier");
	mark = fk.nsent;
	fake_reply(PLAIN, true, "");
	/* the stage-first publisher alone, to completion */
	cr_assert_eq(fk.s.phase, PASS_PUBLISH_FIRST);
	cr_assert_eq(fake_last_op(FIRST, mark), IPC_OP_PUBLISH);
	cr_assert_eq(fake_count(IPC_OP_PUBLISH, mark), 1);
	mark = fk.nsent;
	fake_reply(FIRST, true, "");
	cr_assert_eq(fk.s.phase, PASS_PUBLISH);
	cr_assert_eq(fake_last_op(PUB, mark), IPC_OP_PUBLISH);
	cr_assert_eq(fake_count(IPC_OP_PUBLISH, mark), 1, "publish to ROLE_PUBLISH only");
	cr_assert_eq(fake_count(IPC_OP_RUN, 0), 0, "daemons before the publish");
	fake_reply(PUB, true, "");
	cr_assert_eq(fk.s.phase, PASS_DAEMONS);
	fake_reply(DAEMON, true, "");
	cr_assert_eq(fk.s.phase, PASS_APPLY);
	fake_reply(FIRST, true, "");
	fake_reply(PUB, true, "");
	cr_assert_eq(fk.s.phase, PASS_IDLE);
	cr_assert_eq(fk.s.applied_gen, fk.s.state.generation);
}

Test(publish, a_failed_first_publish_stops_the_others)
{
	fake_new_state(1);
	for (int i = 0; i < NDEFS; i++)
		fake_reply(i, true, "");
	cr_assert_eq(fk.s.phase, PASS_PUBLISH_FIRST);
	fake_reply(FIRST, false, "cdi: withdraw: Read-only file system");
	cr_assert_eq(fk.s.phase, PASS_IDLE);
	cr_assert_eq(fake_count(IPC_OP_PUBLISH, 0), 1, "the others never published");
	cr_assert_eq(fake_count(IPC_OP_RUN, 0) + fake_count(IPC_OP_APPLY, 0), 0);
	cr_assert_eq(fk.s.status.passes_failed, 1u);
}

Test(publish, a_failed_stage_publishes_nothing)
{
	fake_new_state(1);
	fake_reply(FIRST, true, "");
	fake_reply(PUB, true, "");
	fake_reply(DAEMON, true, "");
	fake_reply(PLAIN, false, "sys: mkdir: Not a directory");
	cr_assert_eq(fk.s.phase, PASS_IDLE);
	cr_assert_eq(fake_count(IPC_OP_PUBLISH, 0), 0);
	cr_assert_eq(fake_count(IPC_OP_RUN, 0) + fake_count(IPC_OP_APPLY, 0), 0);
	cr_assert_eq(fk.s.status.passes_failed, 1u);
	cr_assert_eq(fk.s.applied_gen, 0u);
}

Test(publish, a_failed_publish_fails_the_pass)
{
	fake_new_state(1);
	for (int i = 0; i < NDEFS; i++)
		fake_reply(i, true, "");
	fake_reply(FIRST, true, "");
	cr_assert_eq(fk.s.phase, PASS_PUBLISH);
	fake_reply(PUB, false, "publish: /driver/dev: swap: Invalid cross-device link");
	cr_assert_eq(fk.s.phase, PASS_IDLE);
	cr_assert_eq(fake_count(IPC_OP_RUN, 0) + fake_count(IPC_OP_APPLY, 0), 0);
	cr_assert_eq(fk.s.status.passes_failed, 1u);
	cr_assert_eq(fk.s.applied_gen, 0u);
}
