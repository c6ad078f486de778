/* Restart policy for workers and daemons (ARCHITECTURE.md §5): no two
 * starts within 1 s; then 1, 2, 4 ... capped at 30 s with +-10 % jitter;
 * reset after 60 s without a crash.  5 crashes within 60 s throttle the
 * unit: every retry waits the longest backoff until 60 s pass without a
 * crash.  Nothing is given up for good (s6, systemd's Restart= throttle
 * too), so a node recovers on its own once the cause goes away. */
#ifndef MOKKA_SUPERVISOR_BACKOFF_H
#define MOKKA_SUPERVISOR_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

#define BACKOFF_FLOOR_MS 1000
#define BACKOFF_CAP_MS 30000
#define BACKOFF_RESET_MS 60000
#define BACKOFF_BURST 5

struct backoff {
	uint64_t last_start;		/* 0 = never */
	uint64_t last_crash;
	uint64_t crashes[BACKOFF_BURST];	/* ring of crash times */
	unsigned ncrash;		/* total recorded, for the ring */
	unsigned attempt;		/* consecutive crashes */
	bool throttled;			/* burst seen: retries wait the cap */
	uint32_t seed;
};

void backoff_started(struct backoff *b, uint64_t now);
/* Record a crash; returns true while the unit is throttled (the burst
 * limit was reached and 60 s have not passed without a crash since). */
bool backoff_crashed(struct backoff *b, uint64_t now);
/* Milliseconds to wait before the next start (0 = now). */
uint64_t backoff_delay(struct backoff *b, uint64_t now);
/* backoff_crashed + backoff_delay for the unit named "<what> <name>",
 * logged: the delay, and the start of a throttle. */
uint64_t backoff_crash(struct backoff *b, uint64_t now, const char *what, const char *name);
/* Desired state changed: a fresh start, the burst budget renewed. */
void backoff_reset(struct backoff *b);

/* The longest backoff (default BACKOFF_CAP_MS), process-wide.  Only the
 * integration tests lower it (main.c, from a build-tree run), so a
 * throttled worker comes back within seconds. */
void backoff_set_cap(uint64_t ms);
uint64_t backoff_cap(void);

#endif
