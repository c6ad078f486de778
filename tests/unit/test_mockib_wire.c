/* mock-ib's pure wire code: the umad header at the kernel's byte offsets,
 * the relay's framing and routing header, the peers list. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "workers/ib/mockib/mockib_relay.h"
#include "workers/ib/mockib/mockib_umad.h"

/* ---- struct ib_user_mad ---- */

Test(umad, offsets_of_the_64_byte_header)
{
	struct mib_uhdr h = { .agent_id = 0x01020304, .status = 110, .timeout_ms = 1000,
			      .retries = 3, .length = 320, .qpn = 1, .qkey = 0x80010000,
			      .lid = 0x4201, .sl = 5, .path_bits = 6, .grh_present = 1,
			      .gid_index = 2, .hop_limit = 64, .tclass = 7, .flow_label = 0xabcde,
			      .pkey_index = 0x1234 };
	uint8_t b[64], host[4];
	struct mib_uhdr back;

	for (int i = 0; i < 16; i++)
		h.gid[i] = (uint8_t)(0xf0 + i);
	memset(b, 0xee, sizeof(b));
	mib_uhdr_build(b, 64, &h);
	/* host-endian u32s */
	memcpy(host, &h.agent_id, 4);
	cr_assert_arr_eq(b, host, 4);
	cr_assert_eq(*(uint32_t *)(void *)(b + 4), 110);
	cr_assert_eq(*(uint32_t *)(void *)(b + 8), 1000);
	cr_assert_eq(*(uint32_t *)(void *)(b + 12), 3);
	cr_assert_eq(*(uint32_t *)(void *)(b + 16), 320);
	/* network order */
	cr_assert_arr_eq(b + 20, ((uint8_t[]){ 0, 0, 0, 1 }), 4);
	cr_assert_arr_eq(b + 24, ((uint8_t[]){ 0x80, 0x01, 0, 0 }), 4);
	cr_assert_arr_eq(b + 28, ((uint8_t[]){ 0x42, 0x01 }), 2);
	cr_assert_arr_eq(b + 30, ((uint8_t[]){ 5, 6, 1, 2, 64, 7 }), 6);
	cr_assert_eq(b[36], 0xf0);
	cr_assert_eq(b[51], 0xff);
	cr_assert_arr_eq(b + 52, ((uint8_t[]){ 0, 0x0a, 0xbc, 0xde }), 4);
	cr_assert_eq(*(uint16_t *)(void *)(b + 56), 0x1234);
	for (int i = 58; i < 64; i++)
		cr_assert_eq(b[i], 0, "reserved byte %d", i);
	cr_assert_eq(mib_uhdr_parse(b, 64, 64, &back), 0);
	cr_assert_eq(memcmp(&back, &h, sizeof(h)), 0);
}

Test(umad, legacy_56_byte_header_has_no_pkey_index)
{
	struct mib_uhdr h = { .agent_id = 7, .lid = 0xffff, .pkey_index = 9 }, back;
	uint8_t b[64];

	memset(b, 0xee, sizeof(b));
	mib_uhdr_build(b, 56, &h);
	cr_assert_eq(b[56], 0xee, "a 56-byte header writes 56 bytes");
	cr_assert_eq(mib_uhdr_parse(b, 56, 56, &back), 0);
	cr_assert_eq(back.agent_id, 7);
	cr_assert_eq(back.lid, 0xffff);
	cr_assert_eq(back.pkey_index, 0);
}

Test(umad, refuses_short_buffers_and_odd_sizes)
{
	uint8_t b[64] = { 0 };
	struct mib_uhdr h;

	cr_assert_eq(mib_uhdr_parse(b, 63, 64, &h), -EINVAL);
	cr_assert_eq(mib_uhdr_parse(b, 55, 56, &h), -EINVAL);
	cr_assert_eq(mib_uhdr_parse(b, 64, 60, &h), -EINVAL);
}

Test(umad, mad_header_accessors)
{
	uint8_t m[24] = { 1, 0x32, 1, 0x81, 0, 0, 0, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };

	cr_assert_eq(mib_mad_class(m), 0x32);
	cr_assert_eq(mib_mad_version(m), 1);
	cr_assert(mib_method_is_response(mib_mad_method(m)));
	cr_assert_eq(mib_mad_tid(m), 0x1122334455667788ull);
	cr_assert(mib_class_has_oui(0x30) && mib_class_has_oui(0x4f));
	cr_assert(!mib_class_has_oui(0x2f) && !mib_class_has_oui(0x50));
}

/* A vendor range 2 MAD is only whole with its OUI (bytes 37..39): the
 * relay heap overread of issue 19 read it from a 34-byte MAD. */
Test(umad, a_vendor_mad_must_hold_its_oui)
{
	uint8_t m[40] = { 1, 0x32, 1, 0x01 };

	cr_assert(!mib_mad_fits(m, 23));
	cr_assert(!mib_mad_fits(m, 34) && !mib_mad_fits(m, 39));
	cr_assert(mib_mad_fits(m, 40));
	m[1] = 0x04;			/* PMA: the common header suffices */
	cr_assert(mib_mad_fits(m, 24));
}

/* ---- relay framing ---- */

Test(relay, frame_head_and_parse_round_trip)
{
	uint8_t buf[64], type;
	const uint8_t *p;
	size_t plen;

	cr_assert_eq(mib_relay_head(buf, MIB_RELAY_REPLY, 3), 0);
	cr_assert_arr_eq(buf, ((uint8_t[]){ 0, 0, 0, 4, MIB_RELAY_REPLY }), 5);
	memcpy(buf + 5, "abc", 3);
	memcpy(buf + 8, "tail", 4);
	/* Incomplete until all 8 bytes are there; the rest is the next frame. */
	for (size_t n = 0; n < 8; n++)
		cr_assert_eq(mib_relay_parse(buf, n, &type, &p, &plen), 0, "at %zu bytes", n);
	cr_assert_eq(mib_relay_parse(buf, 12, &type, &p, &plen), 8);
	cr_assert_eq(type, MIB_RELAY_REPLY);
	cr_assert_eq(plen, 3);
	cr_assert_eq(p, buf + 5);
}

Test(relay, zero_and_oversize_lengths_are_protocol_errors)
{
	uint8_t z[8] = { 0, 0, 0, 0, 1 }, big[8] = { 0, 0x10, 0, 1, 1 }, head[5], type;
	const uint8_t *p;
	size_t plen;

	cr_assert_eq(mib_relay_parse(z, sizeof(z), &type, &p, &plen), -EPROTO);
	cr_assert_eq(mib_relay_parse(big, sizeof(big), &type, &p, &plen), -EPROTO);
	/* The largest frame is fine to announce (1 MiB including the type). */
	cr_assert_eq(mib_relay_head(head, 1, MIB_RELAY_MAX - 1), 0);
	cr_assert_eq(mib_relay_parse(head, 5, &type, &p, &plen), 0);
	cr_assert_eq(mib_relay_head(head, 1, MIB_RELAY_MAX), -EMSGSIZE);
}

Test(relay, routing_header_round_trip)
{
	struct mib_relay_mad m = { .req_id = 0x0102030405060708ull, .src_guid = 0xa088c20300ab0001ull,
				   .dst_guid = 0xa088c20300cd0001ull, .slid = 0x4201,
				   .src_qpn = 1, .ingress_port = 7 }, back;
	uint8_t buf[MIB_RELAY_MADHDR + 256];

	snprintf(m.origin, sizeof(m.origin), "node-a");
	for (int i = 0; i < 256; i++)
		buf[MIB_RELAY_MADHDR + i] = (uint8_t)i;
	mib_relay_madhdr_put(buf, &m);
	cr_assert_arr_eq(buf, ((uint8_t[]){ 1, 2, 3, 4, 5, 6, 7, 8 }), 8, "req_id big-endian");
	cr_assert_eq(mib_relay_mad_parse(buf, sizeof(buf), &back), 0);
	cr_assert_eq(back.req_id, m.req_id);
	cr_assert_eq(back.src_guid, m.src_guid);
	cr_assert_eq(back.dst_guid, m.dst_guid);
	cr_assert_eq(back.slid, 0x4201);
	cr_assert_eq(back.src_qpn, 1);
	cr_assert_eq(back.ingress_port, 7);
	cr_assert_str_eq(back.origin, "node-a");
	cr_assert_eq(back.len, 256);
	cr_assert_eq(back.mad, buf + MIB_RELAY_MADHDR);
}

Test(relay, routing_header_refuses_short_and_unterminated)
{
	struct mib_relay_mad m = { 0 }, back;
	uint8_t buf[MIB_RELAY_MADHDR + 24];

	mib_relay_madhdr_put(buf, &m);
	cr_assert_eq(mib_relay_mad_parse(buf, MIB_RELAY_MADHDR + 23, &back), -EINVAL);
	cr_assert_eq(mib_relay_mad_parse(buf, sizeof(buf), &back), 0);
	memset(buf + 36, 'x', MIB_RELAY_ORIGIN);
	cr_assert_eq(mib_relay_mad_parse(buf, sizeof(buf), &back), -EINVAL);
}

Test(relay, routing_header_refuses_a_vendor_mad_without_its_oui)
{
	struct mib_relay_mad m = { 0 }, back;
	uint8_t buf[MIB_RELAY_MADHDR + 40] = { 0 };

	mib_relay_madhdr_put(buf, &m);
	buf[MIB_RELAY_MADHDR] = 1;
	buf[MIB_RELAY_MADHDR + 1] = 0x32;
	cr_assert_eq(mib_relay_mad_parse(buf, MIB_RELAY_MADHDR + 34, &back), -EINVAL);
	cr_assert_eq(mib_relay_mad_parse(buf, sizeof(buf), &back), 0);
	cr_assert_eq(back.len, 40);
}

/* ---- peers ---- */

static char got[512];

static int collect(void *arg, const char *host, int port)
{
	snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s|%d;", host, port);
	return 0;
}

Test(relay, peers_list_forms)
{
	char err[128];

	got[0] = '\0';
	cr_assert_eq(mib_relay_peers_parse("10.0.0.1, node-b:19000,[fd00::1]:7,,fd00::2", 18515,
					   collect, NULL, err, sizeof(err)), 4);
	cr_assert_str_eq(got, "10.0.0.1|18515;node-b|19000;fd00::1|7;fd00::2|18515;");
	cr_assert_eq(mib_relay_peers_parse("", 1, collect, NULL, err, sizeof(err)), 0);
	cr_assert_eq(mib_relay_peers_parse(NULL, 1, collect, NULL, err, sizeof(err)), 0);
}

Test(relay, peers_list_errors_name_the_item)
{
	static const char *const bad[] = { "a:0", "a:65536", "a:x", "a:", "[fd00::1", "[]:1",
					   ":80", "[::1]x" };
	char err[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_eq(mib_relay_peers_parse(bad[i], 1, collect, NULL, err, sizeof(err)),
			     -EINVAL, "%s", bad[i]);
		cr_assert(strstr(err, bad[i]), "'%s' names '%s'", err, bad[i]);
	}
}

static struct sockaddr *v4(const char *a)
{
	static struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(40000);
	cr_assert_eq(inet_pton(AF_INET, a, &sin.sin_addr), 1);
	return (struct sockaddr *)&sin;
}

Test(relay, only_hosts_in_the_peers_list_may_connect)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };

	cr_assert(mib_relay_addr_is_peer("127.0.0.2,127.0.0.3:9000", v4("127.0.0.3")));
	cr_assert(mib_relay_addr_is_peer("10.0.0.1, 127.0.0.2", v4("127.0.0.2")));
	cr_assert_not(mib_relay_addr_is_peer("127.0.0.2,127.0.0.3:9000", v4("127.0.0.4")));
	cr_assert_not(mib_relay_addr_is_peer("", v4("127.0.0.1")));
	cr_assert_not(mib_relay_addr_is_peer("not a list[", v4("127.0.0.1")));
	/* An IPv4 peer seen on a dual-stack socket as ::ffff:a.b.c.d. */
	cr_assert_eq(inet_pton(AF_INET6, "::ffff:127.0.0.2", &sin6.sin6_addr), 1);
	cr_assert(mib_relay_addr_is_peer("127.0.0.2", (struct sockaddr *)&sin6));
	cr_assert_eq(inet_pton(AF_INET6, "::1", &sin6.sin6_addr), 1);
	cr_assert(mib_relay_addr_is_peer("[::1]:18515", (struct sockaddr *)&sin6));
	cr_assert_not(mib_relay_addr_is_peer("127.0.0.1", (struct sockaddr *)&sin6));
}
