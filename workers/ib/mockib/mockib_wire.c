/* The relay's framing and routing header (see mockib_relay.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/ib/mockib/mockib_relay.h"
#include "workers/ib/mockib/mockib_umad.h"

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int mib_relay_head(uint8_t head[5], uint8_t type, size_t plen)
{
	if (plen + 1 > MIB_RELAY_MAX)
		return -EMSGSIZE;
	put_be32(head, (uint32_t)(plen + 1));
	head[4] = type;
	return 0;
}

long mib_relay_parse(const uint8_t *buf, size_t len, uint8_t *type, const uint8_t **payload,
		     size_t *plen)
{
	uint32_t l;

	if (len < 4)
		return 0;
	l = be32(buf);
	if (l == 0 || l > MIB_RELAY_MAX)
		return -EPROTO;
	if (len < 4 + (size_t)l)
		return 0;
	*type = buf[4];
	*payload = buf + 5;
	*plen = l - 1;
	return 4 + (long)l;
}

void mib_relay_madhdr_put(uint8_t *buf, const struct mib_relay_mad *m)
{
	memset(buf, 0, MIB_RELAY_MADHDR);
	mib_put_be64(buf, m->req_id);
	mib_put_be64(buf + 8, m->src_guid);
	mib_put_be64(buf + 16, m->dst_guid);
	put_be32(buf + 24, m->slid);
	put_be32(buf + 28, m->src_qpn);
	buf[32] = m->ingress_port;
	memcpy(buf + 36, m->origin, strnlen(m->origin, MIB_RELAY_ORIGIN - 1));
}

int mib_relay_mad_parse(const uint8_t *p, size_t len, struct mib_relay_mad *m)
{
	const uint8_t *o = p + 36;

	if (len < MIB_RELAY_MADHDR + MIB_MAD_HDR ||
	    !mib_mad_fits(p + MIB_RELAY_MADHDR, len - MIB_RELAY_MADHDR))
		return -EINVAL;
	if (!memchr(o, '\0', MIB_RELAY_ORIGIN))
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	m->req_id = mib_be64(p);
	m->src_guid = mib_be64(p + 8);
	m->dst_guid = mib_be64(p + 16);
	m->slid = be32(p + 24);
	m->src_qpn = be32(p + 28);
	m->ingress_port = p[32];
	memcpy(m->origin, o, MIB_RELAY_ORIGIN);
	m->mad = p + MIB_RELAY_MADHDR;
	m->len = len - MIB_RELAY_MADHDR;
	return 0;
}

static int parse_item(char *item, int default_port, char **host, int *port)
{
	char *colon, *end;
	long v;

	*port = default_port;
	if ((colon = strchr(item, '/'))) {	/* addr/len: a network, no port */
		unsigned char a[16];
		int v6 = strchr(item, ':') != NULL;

		*colon = '\0';
		errno = 0;
		v = strtol(colon + 1, &end, 10);
		if (errno || *end || end == colon + 1 || v < 0 || v > (v6 ? 128 : 32) ||
		    inet_pton(v6 ? AF_INET6 : AF_INET, item, a) != 1)
			return -EINVAL;
		*colon = '/';
		*host = item;
		*port = 0;
		return 0;
	}
	if (item[0] == '[') {			/* [v6]:port */
		char *rb = strchr(item, ']');

		if (!rb || rb == item + 1)
			return -EINVAL;
		*rb = '\0';
		*host = item + 1;
		colon = rb[1] == ':' ? rb + 1 : NULL;
		if (!colon && rb[1])
			return -EINVAL;
	} else {
		*host = item;
		colon = strchr(item, ':');
		if (colon && strchr(colon + 1, ':'))	/* bare v6, no port */
			colon = NULL;
	}
	if (colon) {
		*colon = '\0';
		errno = 0;
		v = strtol(colon + 1, &end, 10);
		if (errno || *end || end == colon + 1 || v < 1 || v > 65535)
			return -EINVAL;
		*port = (int)v;
	}
	return **host ? 0 : -EINVAL;
}

int mib_relay_peers_parse(const char *list, int default_port,
			  int (*fn)(void *arg, const char *host, int port), void *arg,
			  char *err, size_t errlen)
{
	char *copy = strdup(list ? list : ""), *save = NULL, *tok;
	int n = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		char item[300], *host;
		int port, r;

		if (snprintf(item, sizeof(item), "%s", tok) >= (int)sizeof(item) ||
		    parse_item(item, default_port, &host, &port) < 0) {
			snprintf(err, errlen, "peer '%.64s': want host, host:port, [v6]:port "
				 "or a network addr/len", tok);
			free(copy);
			return -EINVAL;
		}
		if (fn && (r = fn(arg, host, port)) < 0) {
			free(copy);
			return r;
		}
		n++;
	}
	free(copy);
	return n;
}
