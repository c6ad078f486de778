/* Fuzz the NRI plugin's decoders of the runtime's bytes (nri/wire.c,
 * nri/pb.c, nri/adjust.c): mux frames, ttrpc messages, requests and
 * responses, and a CreateContainerRequest turned into an adjustment.
 * Every slice handed out lies inside the input; a decoded request has
 * NUL-terminated names; the adjustment is well-formed protobuf. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nri/nri.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const uint8_t *p, size_t n, const uint8_t *lo, size_t size)
{
	if (n && (p < lo || n > (size_t)(lo + size - p)))
		abort();
}

static void walk(const uint8_t *p, size_t n, int depth)
{
	struct pb_reader r = { p, p + n };
	struct pb_field f;

	while (pb_next(&r, &f) > 0)
		if (f.type == PB_LEN && depth < 8) {
			inside(f.data, f.len, p, n);
			walk(f.data, f.len, depth + 1);
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct nri_config cf = { .host_root = "/nonexistent-mokka-fuzz",
		.mock_root = "/var/lib/nvml-mock", .container_root = "/opt/nvml-mock",
		.cdi_spec = "/var/run/cdi/nvml-mock-nri.yaml", .node_name = "n" };
	const uint8_t *p;
	size_t plen, off = 0;
	uint32_t conn;
	ssize_t used;
	struct ttrpc_msg m;
	struct ttrpc_request rq;
	struct pb_buf adj = { 0 };
	char why[256];
	int code;

	while ((used = nri_mux_frame(data + off, size - off, &conn, &p, &plen)) > 0) {
		inside(p, plen, data, size);
		off += (size_t)used;
	}
	if ((used = nri_ttrpc_msg(data, size, &m)) > 0) {
		inside(m.data, m.len, data, size);
		if (nri_ttrpc_request(m.data, m.len, &rq) == 0) {
			if (strnlen(rq.service, sizeof(rq.service)) == sizeof(rq.service) ||
			    strnlen(rq.method, sizeof(rq.method)) == sizeof(rq.method))
				abort();
			inside(rq.payload, rq.len, data, size);
		}
		if (nri_ttrpc_response(m.data, m.len, &code, why, sizeof(why), &p, &plen) == 0)
			inside(p, plen, data, size);
	}
	walk(data, size, 0);
	if (nri_adjust(&cf, data, size, &adj, why, sizeof(why)) == 0) {
		struct pb_reader r = { adj.b, adj.b + adj.n };
		struct pb_field f;
		int k;

		while ((k = pb_next(&r, &f)) > 0)
			;
		if (k < 0)
			abort();
	}
	pb_free(&adj);
	return 0;
}
