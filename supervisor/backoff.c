#include <string.h>

#include "ipc/log.h"
#include "supervisor/backoff.h"

static uint64_t cap_ms = BACKOFF_CAP_MS;

void backoff_set_cap(uint64_t ms)
{
	cap_ms = ms ? ms : BACKOFF_CAP_MS;
}

uint64_t backoff_cap(void)
{
	return cap_ms;
}

void backoff_started(struct backoff *b, uint64_t now)
{
	b->last_start = now;
}

bool backoff_crashed(struct backoff *b, uint64_t now)
{
	if (b->last_crash && now - b->last_crash > BACKOFF_RESET_MS) {
		/* A quiet minute: the unit stayed up, start over. */
		b->attempt = 0;
		b->throttled = false;
	}
	b->last_crash = now;
	b->attempt++;
	b->crashes[b->ncrash++ % BACKOFF_BURST] = now;
	if (b->ncrash >= BACKOFF_BURST) {
		uint64_t oldest = b->crashes[b->ncrash % BACKOFF_BURST];
		if (now - oldest <= BACKOFF_RESET_MS)
			b->throttled = true;
	}
	return b->throttled;
}

static uint32_t next_rand(struct backoff *b)
{
	b->seed = b->seed * 1103515245u + 12345u;
	return b->seed >> 8;
}

uint64_t backoff_delay(struct backoff *b, uint64_t now)
{
	uint64_t d = 0, since;

	if (b->attempt > 0) {
		d = BACKOFF_FLOOR_MS;
		for (unsigned i = 1; i < b->attempt && d < cap_ms; i++)
			d *= 2;
		if (d > cap_ms || b->throttled)
			d = cap_ms;
		/* +-10 % so a fleet does not restart in lockstep */
		int64_t j = (int64_t)(d / 10);
		if (j > 0)
			d = (uint64_t)((int64_t)d - j + (int64_t)(next_rand(b) % (uint32_t)(2 * j + 1)));
		since = b->last_crash ? now - b->last_crash : d;
		d = since >= d ? 0 : d - since;
	}
	/* The 1 s floor between two starts holds regardless. */
	if (b->last_start && now - b->last_start < BACKOFF_FLOOR_MS) {
		uint64_t floor = BACKOFF_FLOOR_MS - (now - b->last_start);
		if (floor > d)
			d = floor;
	}
	return d;
}

uint64_t backoff_crash(struct backoff *b, uint64_t now, const char *what, const char *name)
{
	bool was = b->throttled;
	uint64_t d;

	backoff_crashed(b, now);
	d = backoff_delay(b, now);
	if (b->throttled && !was)
		log_error("%s %s: %d crashes within %d s; retrying every %llu s until it stays up",
			  what, name, BACKOFF_BURST, BACKOFF_RESET_MS / 1000,
			  (unsigned long long)(cap_ms / 1000));
	log_info("%s %s: restart in %llu ms", what, name, (unsigned long long)d);
	return d;
}

void backoff_reset(struct backoff *b)
{
	uint32_t seed = b->seed;
	uint64_t last = b->last_start;

	memset(b, 0, sizeof(*b));
	b->seed = seed;
	b->last_start = last;
}
