/* Which hosts may talk to the relay: the ones in ib.peers. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "workers/ib/mockib/mockib_relay.h"

/* An address as IPv6 (IPv4 mapped), so v4 and v4-mapped peers compare. */
static bool addr_v6(const struct sockaddr *sa, struct in6_addr *out)
{
	if (sa->sa_family == AF_INET6) {
		*out = ((const struct sockaddr_in6 *)sa)->sin6_addr;
		return true;
	}
	if (sa->sa_family != AF_INET)
		return false;
	memset(out, 0, sizeof(*out));
	out->s6_addr[10] = out->s6_addr[11] = 0xff;
	memcpy(&out->s6_addr[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	return true;
}

/* mib_relay_peers_parse callback: -EEXIST (stop) when host is the address. */
static int match_host(void *arg, const char *host, int port)
{
	const struct in6_addr *want = arg;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	struct in6_addr got;
	bool hit = false;

	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return 0;		/* unresolvable now: not this one */
	for (const struct addrinfo *ai = res; ai && !hit; ai = ai->ai_next)
		hit = addr_v6(ai->ai_addr, &got) && !memcmp(&got, want, sizeof(got));
	freeaddrinfo(res);
	return hit ? -EEXIST : 0;
}

bool mib_relay_addr_is_peer(const char *peers, const struct sockaddr *sa)
{
	struct in6_addr want;
	char err[128];

	if (!addr_v6(sa, &want))
		return false;
	return mib_relay_peers_parse(peers, 1, match_host, &want, err, sizeof(err)) == -EEXIST;
}
