/* Restart policy: start floor, exponential delays with jitter, the crash
 * burst limit (a throttle to the longest backoff, never a give-up) and its
 * reset.  Time is simulated (ms). */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "supervisor/backoff.h"

#define T0 1000000ull	/* a "now" far from 0 (0 means never) */

static void init(struct backoff *b, uint32_t seed)
{
	memset(b, 0, sizeof(*b));
	b->seed = seed;
}

Test(backoff, first_start_is_immediate)
{
	struct backoff b;

	init(&b, 1);
	cr_assert_eq(backoff_delay(&b, T0), 0);
	cr_assert_not(b.throttled);
}

Test(backoff, one_second_floor_between_starts)
{
	struct backoff b;

	init(&b, 1);
	backoff_started(&b, T0);
	cr_assert_eq(backoff_delay(&b, T0), 1000);
	cr_assert_eq(backoff_delay(&b, T0 + 1), 999);
	cr_assert_eq(backoff_delay(&b, T0 + 400), 600);
	cr_assert_eq(backoff_delay(&b, T0 + 999), 1);
	cr_assert_eq(backoff_delay(&b, T0 + 1000), 0);
	cr_assert_eq(backoff_delay(&b, T0 + 50000), 0);
}

Test(backoff, floor_applies_even_after_crash_delay_elapsed)
{
	struct backoff b;

	init(&b, 7);
	/* started, crashed at once: the crash delay (~1 s) and the floor
	 * both apply; whichever is longer wins */
	backoff_started(&b, T0);
	backoff_crashed(&b, T0 + 10);
	uint64_t d = backoff_delay(&b, T0 + 10);
	cr_assert_geq(d, 990);
	cr_assert_leq(d, 1100 + 10);
}

static uint64_t expected_ms(unsigned attempt)
{
	uint64_t d = 1000;

	for (unsigned i = 1; i < attempt && d < 30000; i++)
		d *= 2;
	return d > 30000 ? 30000 : d;
}

Test(backoff, exponential_with_cap_and_jitter)
{
	static const uint64_t want[] = { 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000 };

	for (uint32_t seed = 1; seed < 200; seed++) {
		struct backoff b;
		uint64_t now = T0;

		init(&b, seed);
		for (unsigned k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
			/* crashes spaced so the burst limit never trips: each
			 * start waits out the delay, then the unit runs 20 s
			 * (< 60 s, so the attempt count keeps growing) */
			backoff_started(&b, now);
			now += 20000;
			backoff_crashed(&b, now);
			uint64_t d = backoff_delay(&b, now);
			cr_assert_eq(expected_ms(k + 1), want[k]);
			cr_assert_geq(d, want[k] - want[k] / 10, "seed %u crash %u: %lu", seed, k + 1,
				      (unsigned long)d);
			cr_assert_leq(d, want[k] + want[k] / 10, "seed %u crash %u: %lu", seed, k + 1,
				      (unsigned long)d);
			/* waiting counts down (each call may re-roll the jitter) */
			uint64_t half = want[k] / 2, d2 = backoff_delay(&b, now + half);
			cr_assert_geq(d2, want[k] - want[k] / 10 - half);
			cr_assert_leq(d2, want[k] + want[k] / 10 - half);
			cr_assert_eq(backoff_delay(&b, now + want[k] + want[k] / 10), 0);
			now += d;
		}
	}
}

Test(backoff, jitter_actually_varies)
{
	uint64_t seen_lo = UINT64_MAX, seen_hi = 0;

	for (uint32_t seed = 1; seed < 100; seed++) {
		struct backoff b;
		init(&b, seed);
		for (int k = 0; k < 6; k++)
			backoff_crashed(&b, T0 + (uint64_t)k * 40000);
		uint64_t d = backoff_delay(&b, T0 + 5 * 40000);
		if (d < seen_lo)
			seen_lo = d;
		if (d > seen_hi)
			seen_hi = d;
	}
	cr_assert_lt(seen_lo, seen_hi, "no jitter at all");
	cr_assert_geq(seen_lo, 27000);
	cr_assert_leq(seen_hi, 33000);
}

Test(backoff, elapsed_time_since_crash_counts)
{
	struct backoff b;

	init(&b, 3);
	backoff_crashed(&b, T0);
	backoff_crashed(&b, T0 + 5000);
	backoff_crashed(&b, T0 + 10000);	/* third: ~4 s */
	uint64_t d = backoff_delay(&b, T0 + 10000);
	cr_assert_geq(d, 3600);
	cr_assert_leq(d, 4400);
	cr_assert_eq(backoff_delay(&b, T0 + 10000 + 4400), 0);
	uint64_t later = backoff_delay(&b, T0 + 10000 + 3000);
	cr_assert_leq(later, 1400);
}

/* Issue 19: the burst limit used to fail a unit for good ("stays failed"
 * was asserted here); now it throttles, and a quiet minute ends that. */
Test(backoff, five_crashes_within_a_minute_throttle)
{
	struct backoff b;

	init(&b, 1);
	for (int k = 0; k < 4; k++) {
		cr_assert_not(backoff_crashed(&b, T0 + (uint64_t)k * 14000), "crash %d", k + 1);
		cr_assert_not(b.throttled);
	}
	/* fifth at +56 s: five within 60 s */
	cr_assert(backoff_crashed(&b, T0 + 56000));
	cr_assert(b.throttled);
	/* crashes that keep coming keep it throttled, even spaced 59 s */
	cr_assert(backoff_crashed(&b, T0 + 115000));
	cr_assert(backoff_crashed(&b, T0 + 174000));
	/* a minute without a crash: a fresh start */
	cr_assert_not(backoff_crashed(&b, T0 + 500000));
	cr_assert_not(b.throttled);
	uint64_t d = backoff_delay(&b, T0 + 500000);
	cr_assert_geq(d, 900);
	cr_assert_leq(d, 1100);
}

Test(backoff, throttled_waits_the_longest_backoff)
{
	for (uint32_t seed = 1; seed < 50; seed++) {
		struct backoff b;

		init(&b, seed);
		/* five quick crashes: the attempt count alone would say ~16 s */
		for (int k = 0; k < BACKOFF_BURST; k++)
			backoff_crashed(&b, T0 + (uint64_t)k * 100);
		cr_assert(b.throttled);
		uint64_t d = backoff_delay(&b, T0 + 400);
		cr_assert_geq(d, 27000, "seed %u: %lu", seed, (unsigned long)d);
		cr_assert_leq(d, 33000, "seed %u: %lu", seed, (unsigned long)d);
		/* and it is a delay, not a refusal: it runs down to 0 */
		cr_assert_eq(backoff_delay(&b, T0 + 400 + 33000), 0);
	}
}

Test(backoff, cap_is_injectable_for_tests)
{
	struct backoff b;

	init(&b, 3);
	backoff_set_cap(2000);
	cr_assert_eq(backoff_cap(), 2000);
	for (int k = 0; k < BACKOFF_BURST; k++)
		backoff_crashed(&b, T0 + (uint64_t)k * 100);
	uint64_t d = backoff_delay(&b, T0 + 400);
	cr_assert_geq(d, 1800);
	cr_assert_leq(d, 2200);
	backoff_set_cap(0);	/* back to the default */
	cr_assert_eq(backoff_cap(), BACKOFF_CAP_MS);
}

Test(backoff, five_crashes_just_over_a_minute_do_not_fail)
{
	struct backoff b;

	init(&b, 1);
	for (int k = 0; k < 5; k++)
		cr_assert_not(backoff_crashed(&b, T0 + (uint64_t)k * 15001), "crash %d", k + 1);
	cr_assert_not(b.throttled);
	/* but a quick sixth makes the last five span < 60 s */
	cr_assert(backoff_crashed(&b, T0 + 60010));
}

Test(backoff, sliding_window)
{
	struct backoff b;

	init(&b, 1);
	/* 4 quick crashes, a long pause, then 4 more quick ones: no 5 of
	 * them fall within any 60 s window */
	for (int k = 0; k < 4; k++)
		cr_assert_not(backoff_crashed(&b, T0 + (uint64_t)k * 1000));
	for (int k = 0; k < 4; k++)
		cr_assert_not(backoff_crashed(&b, T0 + 120000 + (uint64_t)k * 1000), "crash %d", k + 5);
	cr_assert(backoff_crashed(&b, T0 + 125000));
}

Test(backoff, spaced_crashes_reset_and_never_fail)
{
	struct backoff b;
	uint64_t now = T0;

	init(&b, 9);
	for (int k = 0; k < 50; k++) {
		now += 60001 + (uint64_t)k * 100;
		backoff_started(&b, now - 60000);
		cr_assert_not(backoff_crashed(&b, now), "crash %d", k);
		uint64_t d = backoff_delay(&b, now);
		/* attempt counter reset: back to ~1 s every time */
		cr_assert_geq(d, 900, "crash %d: %lu", k, (unsigned long)d);
		cr_assert_leq(d, 1100, "crash %d: %lu", k, (unsigned long)d);
	}
	cr_assert_not(b.throttled);
}

Test(backoff, reset_clears_failed)
{
	struct backoff b;

	init(&b, 5);
	backoff_started(&b, T0 + 4000);
	for (int k = 0; k < 5; k++)
		backoff_crashed(&b, T0 + (uint64_t)k * 1000);
	cr_assert(b.throttled);
	backoff_reset(&b);
	cr_assert_not(b.throttled);
	cr_assert_eq(b.attempt, 0);
	cr_assert_eq(b.seed, 5, "seed kept");
	/* the start floor still holds after a reset */
	cr_assert_eq(backoff_delay(&b, T0 + 4500), 500);
	cr_assert_eq(backoff_delay(&b, T0 + 5000), 0);
	/* a fresh burst budget: four more crashes do not fail it */
	for (int k = 0; k < 4; k++)
		cr_assert_not(backoff_crashed(&b, T0 + 6000 + (uint64_t)k * 1000), "crash %d", k);
	uint64_t d = backoff_delay(&b, T0 + 9000);
	cr_assert_geq(d, 7200);
	cr_assert_leq(d, 8800);
}
