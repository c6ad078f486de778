/* Fuzz the device state document decoder (devstate/devstate_codec.c): it
 * must never crash, must leave nothing set when it refuses, and whatever
 * it accepts must encode to a document that decodes to the same state. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devstate/devstate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ds_gpu g, back;
	char why[160], buf[DS_MAX_DOC];
	int n;

	if (ds_decode((const char *)data, size, &g, why, sizeof(why)) < 0) {
		if (g.set || g.ngi || g.next_serial)
			abort();
		return 0;
	}
	n = ds_encode(&g, buf, sizeof(buf));
	if (n < 0 || ds_decode(buf, (size_t)n, &back, why, sizeof(why)) < 0 ||
	    memcmp(&g, &back, sizeof(g)) != 0)
		abort();
	return 0;
}
