/* Fuzz the IMEXDownload HTTP decoders (workers/imex/http_parse.c): a
 * response from the network (head, Content-Length, chunked and
 * close-delimited bodies) and a URL (a Location header becomes one).  The
 * body handed out lies inside the input or in a buffer the parser owns,
 * never over the cap; a parsed URL has a host, a port and a path without
 * spaces. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "workers/imex/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_response r;
	struct http_url u;
	char err[256], *text;
	const size_t cap = 4096;

	if (http_parse_response(data, size, cap, &r, err, sizeof(err)) == 0) {
		if (r.status < 100 || r.status > 599 || r.body_len > cap)
			abort();
		if (!r.owned && r.body_len &&
		    (r.body < data || r.body_len > (size_t)(data + size - r.body)))
			abort();
		if (r.body_len)
			(void)((volatile const uint8_t *)r.body)[r.body_len - 1];
		free(r.owned);
	}
	if (!(text = malloc(size + 1)))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (http_parse_url(text, &u, err, sizeof(err)) == 0 &&
	    (!u.host[0] || !u.port[0] || u.path[0] != '/' || strpbrk(u.path, " \r\n") ||
	     atoi(u.port) < 1 || atoi(u.port) > 65535))
		abort();
	free(text);
	return 0;
}
