/* mock-ib's member-list frames (MEMBERS, DIGEST: what another host sends)
 * and the peers list's networks (who may connect). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "workers/ib/mockib/mockib_relay.h"

static struct mib_gossip_entry got[8];
static int ngot;

static int collect(void *arg, const struct mib_gossip_entry *e)
{
	(void)arg;
	if (ngot >= 8)
		return -ENOSPC;
	got[ngot++] = *e;
	return 0;
}

static size_t two_entries(uint8_t *buf, size_t cap)
{
	struct mib_gossip_entry a = { .version = 0x0102030405060708ull, .port = 18515,
				      .node = "node001" };
	struct mib_gossip_entry b = { .version = 9, .port = 7, .host = "fd00::2", .node = "n2" };
	size_t off = 3;

	cr_assert_eq(mib_members_put(buf, cap, &off, &a), 0);
	cr_assert_eq(mib_members_put(buf, cap, &off, &b), 0);
	mib_members_head(buf, MIB_GOSSIP_WANT_LIST | MIB_GOSSIP_WHOLE, 2);
	return off;
}

Test(gossip, members_round_trip)
{
	uint8_t buf[512], flags = 0;
	size_t len = two_entries(buf, sizeof(buf));

	ngot = 0;
	cr_assert_eq(mib_members_parse(buf, len, &flags, collect, NULL), 2);
	cr_assert_eq(flags, MIB_GOSSIP_WANT_LIST | MIB_GOSSIP_WHOLE);
	cr_assert_eq(got[0].version, 0x0102030405060708ull);
	cr_assert_eq(got[0].port, 18515);
	cr_assert_str_eq(got[0].host, "");
	cr_assert_str_eq(got[0].node, "node001");
	cr_assert_str_eq(got[1].host, "fd00::2");
	cr_assert_str_eq(got[1].node, "n2");
	cr_assert_eq(got[1].port, 7);
}

Test(gossip, members_refuses_truncation_trailing_bytes_and_bad_fields)
{
	uint8_t buf[512], bad[512], flags;
	size_t len = two_entries(buf, sizeof(buf));

	for (size_t n = 0; n < len; n++)
		cr_assert_eq(mib_members_parse(buf, n, &flags, NULL, NULL), -EINVAL, "at %zu", n);
	memcpy(bad, buf, len);
	bad[len] = 0;
	cr_assert_eq(mib_members_parse(bad, len + 1, &flags, NULL, NULL), -EINVAL);
	/* port 0 */
	memcpy(bad, buf, len);
	bad[3 + 8] = bad[3 + 9] = 0;
	cr_assert_eq(mib_members_parse(bad, len, &flags, NULL, NULL), -EINVAL);
	/* a host byte that is no part of an address or name */
	memcpy(bad, buf, len);
	bad[len - 3 - 3] = '/';
	cr_assert_eq(mib_members_parse(bad, len, &flags, NULL, NULL), -EINVAL);
	/* ... a NUL among them (found by fuzz_mockib_relay) */
	bad[len - 3 - 3] = '\0';
	cr_assert_eq(mib_members_parse(bad, len, &flags, NULL, NULL), -EINVAL);
	/* an empty name, a control byte in a name */
	memcpy(bad, buf, len);
	bad[len - 1] = '\n';
	cr_assert_eq(mib_members_parse(bad, len, &flags, NULL, NULL), -EINVAL);
	/* more entries than a list may hold */
	mib_members_head(bad, 0, MIB_GOSSIP_MAX + 1);
	cr_assert_eq(mib_members_parse(bad, 3, &flags, NULL, NULL), -EINVAL);
}

Test(gossip, members_put_refuses_what_cannot_be_sent)
{
	uint8_t buf[64];
	size_t off = 3;
	struct mib_gossip_entry e = { .version = 1, .port = 1, .node = "x" };

	cr_assert_eq(mib_members_put(buf, 14, &off, &e), -ENOSPC);
	cr_assert_eq(off, 3);
	e.port = 0;
	cr_assert_eq(mib_members_put(buf, sizeof(buf), &off, &e), -EINVAL);
	e.port = 1;
	e.node[0] = '\0';
	cr_assert_eq(mib_members_put(buf, sizeof(buf), &off, &e), -EINVAL);
}

Test(gossip, digest_round_trip_and_order_free_hash)
{
	uint8_t buf[MIB_DIGEST_LEN];
	uint32_t n;
	uint64_t h, a = mib_digest_term("a", 1), b = mib_digest_term("b", 2);

	mib_digest_put(buf, 3, 0xfedcba9876543210ull);
	cr_assert_eq(mib_digest_parse(buf, sizeof(buf), &n, &h), 0);
	cr_assert_eq(n, 3);
	cr_assert_eq(h, 0xfedcba9876543210ull);
	cr_assert_eq(mib_digest_parse(buf, sizeof(buf) - 1, &n, &h), -EINVAL);
	cr_assert_eq(a + b, b + a);
	cr_assert_neq(mib_digest_term("a", 1), mib_digest_term("a", 2));
	cr_assert_neq(mib_digest_term("ab", 1), mib_digest_term("a", 1));
}

static char list[512];

static int collect_peer(void *arg, const char *host, int port)
{
	(void)arg;
	snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s|%d;", host, port);
	return 0;
}

Test(gossip, peers_networks_are_accepted_never_dialed)
{
	char err[128];

	list[0] = '\0';
	cr_assert_eq(mib_relay_peers_parse("10.78.0.1,10.78.0.0/16,fd00::/64", 18515, collect_peer,
					   NULL, err, sizeof(err)), 3);
	cr_assert_str_eq(list, "10.78.0.1|18515;10.78.0.0/16|0;fd00::/64|0;");
	for (const char *const *b = (const char *const[]){ "10.0.0.0/33", "10.0.0.0/", "x/8",
							  "fd00::/129", "10.0.0.0/8:1", NULL };
	     *b; b++)
		cr_assert_eq(mib_relay_peers_parse(*b, 1, NULL, NULL, err, sizeof(err)), -EINVAL,
			     "%s", *b);
}

static struct sockaddr *v4(const char *a)
{
	static struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	cr_assert_eq(inet_pton(AF_INET, a, &sin.sin_addr), 1);
	return (struct sockaddr *)&sin;
}

Test(gossip, a_network_lets_its_hosts_connect)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };

	cr_assert(mib_relay_addr_is_peer("10.78.0.0/16", v4("10.78.3.4")));
	cr_assert_not(mib_relay_addr_is_peer("10.78.0.0/16", v4("10.79.0.1")));
	cr_assert(mib_relay_addr_is_peer("10.78.0.1,10.78.0.0/23", v4("10.78.1.255")));
	cr_assert_not(mib_relay_addr_is_peer("10.78.0.0/23", v4("10.78.2.0")));
	cr_assert(mib_relay_addr_is_peer("0.0.0.0/0", v4("192.0.2.1")));
	cr_assert_eq(inet_pton(AF_INET6, "fd00::1:2", &s6.sin6_addr), 1);
	cr_assert(mib_relay_addr_is_peer("fd00::/64", (struct sockaddr *)&s6));
	cr_assert_not(mib_relay_addr_is_peer("fd01::/64", (struct sockaddr *)&s6));
	cr_assert_eq(inet_pton(AF_INET6, "::ffff:10.78.9.9", &s6.sin6_addr), 1);
	cr_assert(mib_relay_addr_is_peer("10.78.0.0/16", (struct sockaddr *)&s6));
}
