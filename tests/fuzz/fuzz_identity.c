/* Fuzz the node identity rewrite (profile/identity.c): any bytes as a
 * profile, derived for a node.  Aborts when the contract breaks: only 0,
 * -EINVAL (with the file named) or -ENOMEM; a rewritten profile says
 * `node_identity: pinned`, so rewriting it again changes nothing. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/identity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256], *out = NULL, *again = NULL;
	size_t olen = 0, alen = 0;
	int rc = identity_apply("fuzz.yaml", (const char *)data, size, "node-a", true, &out, &olen,
				err, sizeof(err));

	if (rc != 0 && rc != -EINVAL && rc != -ENOMEM)
		abort();
	if (rc == -EINVAL && strncmp(err, "fuzz.yaml:", 10))
		abort();
	if (rc == 0 && out) {
		if (identity_apply("fuzz.yaml", out, olen, "node-b", true, &again, &alen, err,
				   sizeof(err)) != 0 || again)
			abort();
	}
	free(out);
	return 0;
}
