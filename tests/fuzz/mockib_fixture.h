/* The in-process mock-ib both mock-ib fuzz targets start from: node fz-a
 * (2 HCAs) plus the given members, one umad session on mlx5_0 over a
 * socketpair with its hello done.  *peer is the client's end. */
#ifndef MOKKA_TESTS_FUZZ_MOCKIB_FIXTURE_H
#define MOKKA_TESTS_FUZZ_MOCKIB_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tests/unit/ib_mad_fixture.h"
#include "workers/ib/mockib/mockib.h"

static inline struct mib_session *fx_mockib_session(struct mockib *d,
						    struct mib_member *members, int *peer)
{
	struct mockib_hello h = { .kind = MOCKIB_KIND_UMAD, .index = 0, .pid = 1 };
	struct mib_session *s;
	int sv[2];

	d->epfd = -1;
	d->listen_w.fd = -1;
	snprintf(d->node, sizeof(d->node), "fz-a");
	d->ib = fx_ib("fz-a", 2, 0x101, 0xa088c20300ab0000ull, 2, 1);
	d->members = members;
	if (mib_fabric_rebuild(d) < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0)
		abort();
	if (!(s = calloc(1, sizeof(*s))))
		abort();
	s->w.fd = sv[0];
	s->d = d;
	s->id = 1;
	s->hdr_len = MOCKIB_UMAD_HDR_LEGACY;
	d->sessions = s;
	d->nsessions = 1;
	*peer = sv[1];
	memcpy(h.magic, MOCKIB_HELLO_MAGIC, 8);
	mib_session_input(s, (const uint8_t *)&h, sizeof(h));
	return s;
}

#endif
