/* What the supervisor knows about the node; health.c and metrics render it. */
#ifndef MOKKA_SUPERVISOR_STATUS_H
#define MOKKA_SUPERVISOR_STATUS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct sim_status {
	char name[32];
	pid_t pid;			/* worker pid, 0 when not running */
	time_t down_since;		/* wall clock it stopped running, 0 = running
					 * (or never started); not_ready_reason says why */
	time_t next_try;		/* wall clock of the next restart, 0 = none */
	bool throttled;			/* 5 crashes in 60 s: retried at the longest
					 * backoff until it stays up */
	bool stage_ok;			/* last Stage of this simulator */
	char stage_error[512];		/* first error of the last failed Stage */
	time_t failing_since;		/* wall clock, 0 when ok */
	bool ready;
	char not_ready_reason[256];
	bool failed;			/* held down until the desired state changes:
					 * only a protocol violation does that */
	bool violation;			/* set with failed: not_ready_reason says which */
	unsigned restarts;
	unsigned stage_failures, apply_failures;
	double last_stage_seconds, last_apply_seconds;
};

struct daemon_status {
	char name[32];			/* "mokka-fabricmanager" */
	pid_t pid;
	bool wanted;			/* the state calls for it: down is not ready */
	time_t down_since;		/* wall clock it went down, 0 = running */
	time_t next_try;		/* wall clock of the next start, 0 = none */
	char last_exit[64];		/* "died on signal 9", "exec ...: ..." */
	unsigned restarts;
	bool throttled;			/* 5 crashes in 60 s: longest backoff */
};

struct node_status {
	uint64_t generation;		/* of the state in force */
	uint64_t passes_total, passes_failed;
	bool have_state;		/* a good state was ever compiled */
	bool last_stage_ok;
	time_t stage_failing_since;
	bool shutting_down;
	int nsims;
	struct sim_status *sims;
	int ndaemons;
	struct daemon_status *daemons;
	char source_error[1024];	/* last source/compile error, "" if none */
	time_t source_error_time;
	uint64_t source_errors_total;
	uint64_t reloads_total;
	/* The NRI staging gate (staging_gate.c, /stagedz). */
	bool staging;			/* a pass is between Stage and its end */
	uint64_t staged_generation;	/* the last pass that published, 0 = none */
};

#endif
