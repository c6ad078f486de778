/* Event sets.  The only event ever raised is an injected Xid
 * (failure.xid.code), delivered once per process after the device trips;
 * waits otherwise sleep in steps of at most 100 ms until the timeout. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shims/nvml/nvml_types.h"

#define EVENT_SET_MAGIC 0x6e766576u	/* "nvev" */
#define SUPPORTED_EVENTS (NVML_EVENT_SINGLE_BIT_ECC | NVML_EVENT_DOUBLE_BIT_ECC | \
			  NVML_EVENT_PSTATE | NVML_EVENT_XID_CRITICAL | NVML_EVENT_CLOCK)

struct nvml_event_set {
	unsigned magic;
	pthread_mutex_t lock;
	unsigned long long types[ENG_MAX_DEVICES];	/* registered, by device index */
};

NVML_API(nvmlEventSetCreate, nvmlEventSet_t *set)
{
	struct nvml_event_set *s;
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!set)
		return NVML_ERROR_INVALID_ARGUMENT;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NVML_ERROR_MEMORY;
	s->magic = EVENT_SET_MAGIC;
	pthread_mutex_init(&s->lock, NULL);
	*set = s;
	return NVML_SUCCESS;
}

NVML_API(nvmlEventSetFree, nvmlEventSet_t set)
{
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!set || set->magic != EVENT_SET_MAGIC)
		return NVML_ERROR_INVALID_ARGUMENT;
	set->magic = 0;
	pthread_mutex_destroy(&set->lock);
	free(set);
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetSupportedEventTypes, nvmlDevice_t device,
	 unsigned long long *types)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!types)
		return NVML_ERROR_INVALID_ARGUMENT;
	*types = SUPPORTED_EVENTS;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceRegisterEvents, nvmlDevice_t device, unsigned long long types,
	 nvmlEventSet_t set)
{
	struct mdev *d;
	unsigned i;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!set || set->magic != EVENT_SET_MAGIC)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (types & ~SUPPORTED_EVENTS)
		return NVML_ERROR_NOT_SUPPORTED;
	i = mdev_index(d);
	if (i >= ENG_MAX_DEVICES)
		return NVML_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&set->lock);
	set->types[i] |= types;
	pthread_mutex_unlock(&set->lock);
	return NVML_SUCCESS;
}

/* A pending Xid on any device registered for Xids. */
static bool take_event(nvmlEventSet_t set, nvmlEventData_t *ev)
{
	unsigned long long code;
	bool found = false;

	pthread_mutex_lock(&set->lock);
	for (unsigned i = 0; i < engine_device_count() && i < ENG_MAX_DEVICES && !found; i++) {
		struct mdev *d = engine_device(i);

		if (!d || !(set->types[i] & NVML_EVENT_XID_CRITICAL))
			continue;
		/* Each wait step polls the device like a guarded call would, so a
		 * process that only waits for events (a device plugin's health
		 * loop) still trips an injected failure and gets its Xid. */
		(void)mdev_guard(d);
		if (!mdev_take_xid(d, &code))
			continue;
		*ev = (nvmlEventData_t){
			.device = d, .eventType = NVML_EVENT_XID_CRITICAL, .eventData = code,
			.gpuInstanceId = 0xffffffffu, .computeInstanceId = 0xffffffffu,
		};
		found = true;
	}
	pthread_mutex_unlock(&set->lock);
	return found;
}

static nvmlReturn_t wait_event(nvmlEventSet_t set, nvmlEventData_t *ev, unsigned timeout_ms)
{
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!set || set->magic != EVENT_SET_MAGIC || !ev)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (;;) {
		unsigned step = timeout_ms < 100 ? timeout_ms : 100;

		if (take_event(set, ev))
			return NVML_SUCCESS;
		if (step == 0)
			return NVML_ERROR_TIMEOUT;
		nanosleep(&(struct timespec){ 0, (long)step * 1000000L }, NULL);
		timeout_ms -= step;
	}
}

NVML_API(nvmlEventSetWait_v2, nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeout_ms)
{
	return wait_event(set, data, timeout_ms);
}

/* v1 data ends after eventData (no GPU/compute instance ids). */
NVML_API(nvmlEventSetWait, nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeout_ms)
{
	nvmlEventData_t ev;
	nvmlReturn_t rc;

	if (!data)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	rc = wait_event(set, &ev, timeout_ms);
	if (rc == NVML_SUCCESS)
		memcpy(data, &ev, offsetof(nvmlEventData_t, gpuInstanceId));
	return rc;
}
NVML_ALIAS(nvmlEventSetWait_v1, nvmlEventSetWait);
