/* Mock NVML engine: the failure injector (NVML.md §6).  Counters are per
 * process: each nvidia-smi run starts from zero, as with the reference. */
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "engine_internal.h"

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
	return (double)(splitmix(s) >> 11) / 9007199254740992.0;	/* [0, 1) */
}

void eng_fault_configure(struct mdev *d, bool reset)
{
	const struct yl_node *fb = yl_get(d->eff, "failure");
	const char *mode = yl_text(yl_get(fb, "mode"));
	struct eng_fault *f = &d->fault;
	uint64_t seed = 0, xid = 0;
	double p = 0;

	f->mode = FAIL_HEALTHY;
	if (mode && !strcasecmp(mode, "lost"))
		f->mode = FAIL_LOST;
	else if (mode && !strcasecmp(mode, "fallen_off_bus"))
		f->mode = FAIL_FALLEN_OFF_BUS;
	else if (mode && !strcasecmp(mode, "ecc_uncorrectable"))
		f->mode = FAIL_ECC;
	else if (mode && *mode && strcasecmp(mode, "healthy"))
		eng_debug("device %u: unknown failure.mode '%s', treated as healthy",
			  d->prof_index, mode);
	f->after_calls = 0;
	yl_u64(yl_get(fb, "after_calls"), &f->after_calls);
	yl_double(yl_get(fb, "probability"), &p);
	f->probability = p < 0 ? 0 : p > 1 ? 1 : p;
	yl_u64(yl_path(fb, "xid.code"), &xid);
	f->xid = xid;
	/* An Xid alone (mode healthy) still follows the trigger rules, so it
	 * is delivered; it just does not break the device. */
	f->armed = f->mode != FAIL_HEALTHY || f->xid;
	if (!reset)
		return;
	f->calls = f->since_trip = 0;
	f->tripped = f->xid_taken = false;
	yl_u64(yl_get(fb, "seed"), &seed);
	if (seed) {
		f->rng = seed ^ ((uint64_t)d->prof_index + 1) * 0x9e3779b97f4a7c15ull;
	} else {	/* 0: time-based, as in the reference */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		f->rng = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 20 ^
			 (uint64_t)getpid() << 40 ^ d->prof_index;
	}
}

/* One guarded call: trip rules in the reference's order. */
static void tick(struct eng_fault *f)
{
	if (!f->armed)
		return;
	f->calls++;
	if (!f->tripped) {
		if (f->after_calls)
			f->tripped = f->calls >= f->after_calls;
		else if (f->probability > 0)
			f->tripped = uniform(&f->rng) < f->probability;
		else
			f->tripped = true;
	}
	if (f->tripped)
		f->since_trip++;
}

static bool is_lost(const struct eng_fault *f)
{
	return f->tripped && (f->mode == FAIL_LOST || f->mode == FAIL_FALLEN_OFF_BUS);
}

int mdev_guard(struct mdev *d)
{
	int rc;

	eng_lock();
	if (!eng.refs) {
		rc = ENG_ERROR_UNINITIALIZED;
	} else if (!eng_dev_ready(d)) {
		rc = ENG_ERROR_INVALID_ARGUMENT;
	} else {
		if (d->parent)	/* a MIG device fails with its GPU */
			d = d->parent;
		tick(&d->fault);
		rc = is_lost(&d->fault) ? ENG_ERROR_GPU_IS_LOST : ENG_SUCCESS;
	}
	eng_unlock();
	return rc;
}

int mdev_lost(struct mdev *d)
{
	int rc;

	eng_lock();
	if (!eng.refs)
		rc = ENG_ERROR_UNINITIALIZED;
	else if (!eng_dev_ready(d))
		rc = ENG_ERROR_INVALID_ARGUMENT;
	else	/* a MIG device fails with its GPU */
		rc = is_lost(&(d->parent ? d->parent : d)->fault) ? ENG_ERROR_GPU_IS_LOST : ENG_SUCCESS;
	eng_unlock();
	return rc;
}

uint64_t mdev_ecc_bump(struct mdev *d)
{
	uint64_t n = 0;

	eng_lock();
	if (eng_dev_ready(d) && d->fault.tripped && d->fault.mode == FAIL_ECC)
		n = d->fault.since_trip;
	eng_unlock();
	return n;
}

bool mdev_take_xid(struct mdev *d, unsigned long long *code)
{
	bool r = false;

	eng_lock();
	if (eng_dev_ready(d) && d->fault.tripped && d->fault.xid && !d->fault.xid_taken) {
		d->fault.xid_taken = true;
		*code = d->fault.xid;
		r = true;
	}
	eng_unlock();
	return r;
}
