/* Fuzz the request-head parser, and route whatever it accepts.  Aborts
 * when a result breaks the parser's contract. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/health.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct node_status st = { .have_state = true, .last_stage_ok = true };
	char method[16], path[256], *body = NULL;
	const char *ctype;
	int r = http_parse_request((const char *)data, size, method, sizeof(method),
				   path, sizeof(path));

	if (r != 1 && r != 0 && r != -EINVAL && r != -E2BIG)
		abort();
	if (r == 0 && size >= HTTP_MAX_REQUEST)
		abort();	/* the cap must hold */
	if (r != 1)
		return 0;
	if (!method[0] || strlen(method) >= sizeof(method) || path[0] != '/' ||
	    strlen(path) >= sizeof(path) || strpbrk(path, "?# \r\n"))
		abort();
	/* A complete head has an empty line inside the cap. */
	if (!memmem(data, size < HTTP_MAX_REQUEST ? size : HTTP_MAX_REQUEST, "\n\n", 2) &&
	    !memmem(data, size < HTTP_MAX_REQUEST ? size : HTTP_MAX_REQUEST, "\n\r\n", 3))
		abort();
	health_route(&st, path, &body, &ctype);
	free(body);
	return 0;
}
