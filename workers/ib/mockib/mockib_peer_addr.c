/* Which hosts may talk to the relay: the ones in ib.peers, hosts or
 * networks. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
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

/* Whether want lies in the network "addr/len" (parsed by peers_parse). */
static bool in_network(const char *net, const struct in6_addr *want)
{
	char a[128];
	const char *slash = strchr(net, '/');
	struct in6_addr n;
	struct in_addr v4;
	int len;

	if (!slash || (size_t)(slash - net) >= sizeof(a))
		return false;
	memcpy(a, net, (size_t)(slash - net));
	a[slash - net] = '\0';
	len = atoi(slash + 1);
	if (inet_pton(AF_INET, a, &v4) == 1) {	/* as v4-mapped v6 */
		memset(&n, 0, sizeof(n));
		n.s6_addr[10] = n.s6_addr[11] = 0xff;
		memcpy(&n.s6_addr[12], &v4, 4);
		len += 96;
	} else if (inet_pton(AF_INET6, a, &n) != 1) {
		return false;
	}
	for (int i = 0; i < 16 && len > 0; i++, len -= 8) {
		uint8_t mask = len >= 8 ? 0xff : (uint8_t)(0xff << (8 - len));

		if ((n.s6_addr[i] ^ want->s6_addr[i]) & mask)
			return false;
	}
	return true;
}

/* mib_relay_peers_parse callback: -EEXIST (stop) when host is the address
 * or a network holding it. */
static int match_host(void *arg, const char *host, int port)
{
	const struct in6_addr *want = arg;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	struct in6_addr got;
	bool hit = false;

	if (strchr(host, '/'))
		return in_network(host, want) ? -EEXIST : 0;
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
