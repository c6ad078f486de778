/* mock-ib: command line, start-up and teardown.  See mockib.h. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/ib/mockib/mockib.h"

static const char usage[] =
	"Usage: mock-ib --config FILE [--host-root DIR] [--socket-group GROUP]\n"
	"               [--log-level LEVEL] [--log-format FMT]\n"
	"Mokka's InfiniBand daemon: answers the IB shims' UMAD and NETLINK_RDMA sessions\n"
	"on host_root + ib.socket and joins its peers' fabric over TCP (ib.listen,\n"
	"ib.tcp_port, ib.peers).  FILE (under --host-root) is the JSON the ib worker writes.\n"
	"  --config FILE       mock-ib.json (state_ib_encode)\n"
	"  --host-root DIR     root that host paths live under (default /)\n"
	"  --socket-group GROUP  group (name or number) of the socket, mode 0660 and owner\n"
	"                      root like /dev/infiniband/umad*: only root and GROUP may\n"
	"                      connect (default $MOCK_IB_SOCKET_GROUP, else root)\n"
	"  --log-level LEVEL   error|warn|info|debug (default info,\n"
	"                      or $MOKKA_LOG_LEVEL)\n"
	"  --log-format FMT    text|json (default text, or $MOKKA_LOG_FORMAT)\n"
	"  --help, --version\n"
	"Signals: SIGHUP re-reads FILE (sessions kept, fabric rebuilt); SIGUSR1 logs the relay's\n"
	"traffic counters; SIGTERM/SIGINT exit 0.\n";

static void cleanup(struct mockib *d)
{
	mib_sessions_close_all(d);
	mib_listen_close(d);
	mib_relay_free(d);
	while (d->pending) {
		struct mib_pending *p = d->pending;

		d->pending = p->next;
		free(p);
	}
	if (d->fab_ok)
		ib_fabric_free(&d->fab);
	free(d->fab_members);
	for (struct mib_member *lists[2] = { d->members, d->retired }, **l = lists; l < lists + 2;
	     l++)
		while (*l) {
			struct mib_member *m = *l;

			*l = m->next;
			free(m->ib);
			free(m->json);
			free(m);
		}
	free(d->ib);
	free(d->reg_json);
	if (d->sig_w.fd >= 0)
		close(d->sig_w.fd);
	if (d->timer_w.fd >= 0)
		close(d->timer_w.fd);
	if (d->epfd >= 0)
		close(d->epfd);
}

struct args {
	const char *conf;
	enum log_level lvl;
	enum log_format fmt;
};

/* --host-root: absolute, without trailing '/'.  0 or the exit status. */
static int set_host_root(struct mockib *d, const char *v)
{
	if (v[0] != '/') {
		fprintf(stderr, "mock-ib: --host-root: '%s' is not an absolute path\n", v);
		return 2;
	}
	snprintf(d->host_root, sizeof(d->host_root), "%s", v);
	for (size_t n = strlen(d->host_root); n > 0 && d->host_root[n - 1] == '/'; n--)
		d->host_root[n - 1] = '\0';
	return 0;
}

/* --socket-group / $MOCK_IB_SOCKET_GROUP: a group name or number.  0 or
 * the exit status. */
static int set_socket_group(struct mockib *d, const char *v)
{
	char *end;
	unsigned long n;
	struct group *g;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (v[0] && !*end && !errno && n < (gid_t)-1) {
		d->sock_gid = (gid_t)n;
		return 0;
	}
	if (!(g = getgrnam(v))) {
		fprintf(stderr, "mock-ib: --socket-group: no group '%s'\n", v);
		return 2;
	}
	d->sock_gid = g->gr_gid;
	return 0;
}

/* The command line: -1 to go on, else the exit status (--help, --version,
 * a usage error). */
static int parse_args(int argc, char **argv, struct mockib *d, struct args *a)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "host-root", required_argument, NULL, 'r' },
		{ "socket-group", required_argument, NULL, 'g' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "log-format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *group = getenv("MOCK_IB_SOCKET_GROUP");
	int o;

	while ((o = getopt_long(argc, argv, "c:r:g:l:f:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c':
			a->conf = optarg;
			break;
		case 'r':
			if (set_host_root(d, optarg))
				return 2;
			break;
		case 'g':
			group = optarg;
			break;
		case 'l':
			if (log_parse_level(optarg, &a->lvl) < 0) {
				fprintf(stderr, "mock-ib: --log-level: want error|warn|info|debug, "
					"got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'f':
			if (log_parse_format(optarg, &a->fmt) < 0) {
				fprintf(stderr, "mock-ib: --log-format: want text|json, got '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			printf("mock-ib %s\n", MOKKA_VERSION);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!a->conf || optind != argc) {
		fputs(usage, stderr);
		return 2;
	}
	return group && group[0] && set_socket_group(d, group) ? 2 : -1;
}

/* Config, fabric, sockets and relay up: 0, or -1 after logging why. */
static int start(struct mockib *d, const char *conf)
{
	struct rlimit rl;
	char err[512];

	/* One fd per emulated umad/netlink fd of every client process. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	snprintf(d->conf_path, sizeof(d->conf_path), "%s", conf);
	/* Relay request ids differ from a previous run's, whose late replies
	 * may still be on the way. */
	d->next_req_id = (uint64_t)time(NULL) << 24;
	if (!(d->ib = calloc(1, sizeof(*d->ib)))) {
		log_error("out of memory");
		return -1;
	}
	if (mib_config_load(d->host_root, d->conf_path, d->node, d->ib, &d->reg_json, &d->reg_len,
			    err, sizeof(err)) < 0) {
		log_error("%s", err);
		return -1;
	}
	if ((d->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		log_error("epoll_create1: %s", strerror(errno));
		return -1;
	}
	if (mib_fabric_rebuild(d) < 0 || mib_listen_open(d) < 0)
		return -1;
	/* A relay that cannot listen is logged; the local node still serves. */
	mib_relay_start(d);
	return 0;
}

int main(int argc, char **argv)
{
	static struct mockib d;
	struct args a = { NULL, LOG_LVL_INFO, LOG_FMT_TEXT };
	int rc;

	prctl(PR_SET_NAME, "mock-ib");
	d.epfd = d.sig_w.fd = d.timer_w.fd = d.listen_w.fd = -1;
	log_env(&a.lvl, &a.fmt);	/* the flags win */
	if ((rc = parse_args(argc, argv, &d, &a)) >= 0)
		return rc;
	log_setup("mock-ib", a.lvl, a.fmt);
	if (start(&d, a.conf) < 0) {
		cleanup(&d);
		return 1;
	}
	log_info("serving node %s: %d HCA(s), pid %d", d.node, d.ib->enabled ? d.ib->num_hcas : 0,
		 (int)getpid());
	rc = mib_run(&d);
	log_info("stopped: %llu MADs in, %llu out, %llu timeouts, %llu dropped",
		 (unsigned long long)d.mads_in, (unsigned long long)d.mads_out,
		 (unsigned long long)d.timeouts, (unsigned long long)d.drops);
	mib_relay_counters(&d);
	cleanup(&d);
	return rc;
}
