/* mokka-kernellog: every second, and at once on SIGHUP (the supervisor's
 * Reload when the overrides document or the device map changed), announces
 * on the kernel log each injection not yet announced: every line of
 * mokka-ctl's Xid journal, and a document Xid no journal line carries (a
 * hand edit).  Exactly once: a pass takes a flock on R/kernellog, re-reads
 * the announced state there, and records each announcement (write, fsync,
 * rename) before the next, so neither a restart nor a second daemon on the
 * same root repeats one; without the device map (teardown) a pass does
 * nothing at all, so an orphan never writes into a torn-down root.
 *
 * The log is opened per announcement O_WRONLY|O_APPEND|O_NONBLOCK, never
 * created: a missing log is a quiet no-op (nothing to announce to), a FIFO
 * without a reader or another error is retried next tick (warned once per
 * injection).  Each line is its own write(): /dev/kmsg takes one record per
 * write. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "fileio/fileio.h"
#include "overrides/overrides.h"
#include "ipc/log.h"
#include "workers/kernellog/kernellog.h"

#define TICK_MS 1000
#define MAX_FILE (4u << 20)

struct kl {
	char devices[PATH_MAX], overrides[PATH_MAX], xids[PATH_MAX], state[PATH_MAX];
	char dir[PATH_MAX];			/* R/kernellog: the lock */
	char root[PATH_MAX];			/* --host-root ("" for /): the above start with it */
	const char *kernel_log;
	int ndev;
	struct klog_dev dev[KLOG_MAX_DEVICES];
	struct klog_announced ann;		/* as on disk, this pass */
	struct ovr_xid_event *ev;		/* the journal, this pass */
	size_t nev;
	/* warned once per failing injection; last document error reported */
	uint64_t warned_code[KLOG_MAX_DEVICES], warned_seq[KLOG_MAX_DEVICES];
	char doc_error[512];
	bool idle;				/* no device map: said once */
	struct yl_node *doc;			/* last good document */
};

static int slurp(const char *path, char **out, size_t *len)
{
	return fileio_read(path, MAX_FILE, out, len, NULL, 0);
}

/* Atomically replace rel (a host path) beneath root, never through a
 * link (fileio/beneath.h); the temporary is named as host.c names its,
 * so a killed daemon's is swept by the next Stage and by teardown. */
static int write_atomic(const char *root, const char *rel, const char *text)
{
	char tmp[NAME_MAX + 1];
	const char *name;
	size_t len = strlen(text);
	int rootfd = beneath_root(root), dfd, fd, r = 0;

	if (rootfd < 0)
		return rootfd;
	dfd = beneath_parent(rootfd, rel, &name);
	close(rootfd);
	if (dfd < 0)
		return dfd;
	if (snprintf(tmp, sizeof(tmp), "%s" BENEATH_TMP "%d", name, (int)getpid()) >=
	    (int)sizeof(tmp)) {
		close(dfd);
		return -ENAMETOOLONG;
	}
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		r = -errno;
		close(dfd);
		return r;
	}
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		r = errno ? -errno : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dfd, tmp, 0);
	close(dfd);
	return r;
}

static void warn_line(const char *msg)
{
	log_warn("%s", msg);
}

/* The device map (at start and on SIGHUP). */
static void load_devices(struct kl *k)
{
	struct klog_dev dev[KLOG_MAX_DEVICES];
	char *text;
	size_t len;
	int r = slurp(k->devices, &text, &len), n;

	if (r < 0) {
		if (r != -ENOENT)
			log_warn("%s: %s (keeping %d devices)", k->devices, strerror(-r), k->ndev);
		return;
	}
	n = klog_devices_parse(text, dev, KLOG_MAX_DEVICES, warn_line);
	free(text);
	for (int j = 0; j < n; j++)
		k->warned_code[j] = k->warned_seq[j] = 0;
	memcpy(k->dev, dev, sizeof(dev));
	k->ndev = n;
}

/* The state as on disk; entries of GPUs that left or moved are forgotten
 * (a moved GPU says who it is again). */
static void load_state(struct kl *k)
{
	char *text = NULL;
	size_t len;

	if (slurp(k->state, &text, &len) < 0)
		text = NULL;
	klog_announced_parse(text ? text : "", &k->ann);
	free(text);
	for (int i = 0; i < k->ann.n; i++) {
		bool same = false;
		for (int j = 0; j < k->ndev; j++)
			same |= k->dev[j].index == k->ann.e[i].index &&
				!strcmp(k->dev[j].bdf, k->ann.e[i].bdf);
		if (!same) {
			log_info("GPU %u (%s) left or moved: forgetting what was announced for it",
				 k->ann.e[i].index, k->ann.e[i].bdf);
			klog_announced_drop(&k->ann, k->ann.e[i--].index);
		}
	}
}

/* The journal as on disk (missing = empty). */
static void load_journal(struct kl *k)
{
	char *text = NULL;
	size_t len = 0;
	int r = slurp(k->xids, &text, &len);

	free(k->ev);
	k->ev = NULL;
	k->nev = 0;
	if (r < 0 && r != -ENOENT)
		log_warn("%s: %s (journal injections wait)", k->xids, strerror(-r));
	if (r == 0 && ovr_xids_parse(text, len, &k->ev, &k->nev) < 0)
		log_warn("%s: out of memory (journal injections wait)", k->xids);
	free(text);
}

static void save_state(struct kl *k)
{
	char *text = klog_announced_render(&k->ann);
	int r = text ? write_atomic(k->root, k->state + strlen(k->root), text) : -ENOMEM;

	if (r < 0)
		log_warn("%s: %s (an Xid may be announced again after a restart)", k->state,
			 strerror(-r));
	free(text);
}

/* The document in force: a bad one keeps the last good one, as the
 * engine does; each distinct error is logged once. */
static void load_doc(struct kl *k)
{
	char *text = NULL, why[400], msg[512];
	size_t len = 0;
	struct yl_node *doc = NULL;
	int r = slurp(k->overrides, &text, &len);

	if (r == -ENOENT) {
		doc = ovr_parse("", 0, why, sizeof(why));
		msg[0] = '\0';
	} else if (r < 0) {
		snprintf(msg, sizeof(msg), "%s: %s", k->overrides, strerror(-r));
	} else if (!(doc = ovr_parse(text, len, why, sizeof(why))) ||
		   ovr_check_shape(doc, why, sizeof(why)) < 0) {
		snprintf(msg, sizeof(msg), "%s:%s", k->overrides, why);
		yl_free(doc);
		doc = NULL;
	} else {
		msg[0] = '\0';
	}
	free(text);
	if (msg[0] && strcmp(msg, k->doc_error))
		log_warn("%s (keeping the previous overrides)", msg);
	snprintf(k->doc_error, sizeof(k->doc_error), "%s", msg);
	if (doc) {
		yl_free(k->doc);
		k->doc = doc;
	}
}

static int write_line(int fd, const char *line)
{
	size_t len = strlen(line);
	ssize_t w;

	do
		w = write(fd, line, len);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)len ? 0 : w < 0 ? -errno : -EIO;
}

/* Device i's lines for code, recorded in e before the next announcement.
 * 0 when announced (or nothing to announce to), else -errno (warned once
 * per injection). */
static int announce(struct kl *k, int i, struct klog_entry *e, uint64_t code, uint64_t seq)
{
	char lines[KLOG_MAX_LINES][KLOG_LINE_MAX];
	const struct klog_dev *d = &k->dev[i];
	int n = klog_render(d, code, !e->identified, lines), fd, r = 0;

	fd = open(k->kernel_log, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		r = -errno;
	for (int l = 0; l < n && r == 0; l++)
		r = write_line(fd, lines[l]);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		if (k->warned_code[i] != code || k->warned_seq[i] != seq)
			log_warn("%s: announcing Xid %llu for GPU %u (%s): %s; retrying",
				 k->kernel_log, (unsigned long long)code, d->index, d->bdf,
				 strerror(-r));
		k->warned_code[i] = code;
		k->warned_seq[i] = seq;
		return r;
	}
	e->identified = true;
	log_info("GPU %u (%s): Xid %llu (seq %llu) announced on %s", d->index, d->bdf,
		 (unsigned long long)code, (unsigned long long)seq, k->kernel_log);
	return 0;
}

/* Every journal line after the recorded one, on each GPU it names that has
 * not had it (an earlier pass may have stopped midway through "all"). */
static int announce_journal(struct kl *k)
{
	uint64_t was = k->ann.journal;

	for (size_t j = 0; j < k->nev; j++) {
		const struct ovr_xid_event *x = &k->ev[j];

		if (x->seq <= k->ann.journal)
			continue;
		for (int i = 0; i < k->ndev; i++) {
			struct klog_entry *e;

			if (x->index >= 0 && (unsigned)x->index != k->dev[i].index)
				continue;
			if (!(e = klog_announced_get(&k->ann, k->dev[i].index, k->dev[i].bdf)))
				return -ENOSPC;
			/* seq == e->seq: the document's copy was announced already. */
			if (e->jseq >= x->seq || e->seq == x->seq)
				continue;
			if (announce(k, i, e, x->code, x->seq) < 0)
				return -EAGAIN;
			e->jseq = x->seq;
			save_state(k);
		}
		k->ann.journal = x->seq;
	}
	if (k->ann.journal != was)
		save_state(k);
	return 0;
}

static bool in_journal(const struct kl *k, uint64_t seq)
{
	for (size_t j = 0; seq && j < k->nev; j++)
		if (k->ev[j].seq == seq)
			return true;
	return false;
}

/* Document Xids no journal line carries (hand edits); code 0 forgets. */
static void announce_doc(struct kl *k)
{
	bool dirty = false;

	for (int i = 0; i < k->ndev && k->doc; i++) {
		const struct klog_dev *d = &k->dev[i];
		struct klog_entry *e = klog_announced_find(&k->ann, d->index);
		uint64_t code, seq;

		ovr_xid(k->doc, d->index, &code, &seq);
		if (!code) {
			/* Cleared: the same code injected again is a new event. */
			if (e && (e->code || e->seq)) {
				e->code = e->seq = 0;
				dirty = true;
			}
			continue;
		}
		if (e && e->code == code && e->seq == seq)
			continue;
		if (!(e = klog_announced_get(&k->ann, d->index, d->bdf)))
			continue;
		/* mokka-ctl's: its journal line is the announcement; noted here
		 * once made, so the line may leave the journal. */
		if (in_journal(k, seq)) {
			if (seq <= e->jseq || seq <= k->ann.journal) {
				e->code = code;
				e->seq = seq;
				dirty = true;
			}
			continue;
		}
		if (announce(k, i, e, code, seq) < 0)
			continue;
		e->code = code;
		e->seq = seq;
		save_state(k);
	}
	if (dirty)
		save_state(k);
}

/* One pass under the lock; nothing at all without the device map. */
static void tick(struct kl *k)
{
	int rootfd = beneath_root(k->root), dfd = -1;

	/* The lock directory, reached without a link (fileio/beneath.h). */
	if (rootfd >= 0) {
		dfd = beneath_open(rootfd, k->dir + strlen(k->root), O_RDONLY | O_DIRECTORY, 0);
		close(rootfd);
	}

	if (dfd >= 0) {
		while (flock(dfd, LOCK_EX) < 0 && errno == EINTR)
			;
		if (faccessat(dfd, "devices", F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
			close(dfd);
			dfd = -1;
		}
	}
	if (dfd < 0) {
		if (!k->idle)
			log_info("%s: no device map (torn down?): announcing nothing", k->devices);
		k->idle = true;
		return;
	}
	if (k->idle || !k->ndev)	/* the map came (back) since we last read it */
		load_devices(k);
	k->idle = false;
	/* The document before the journal: mokka-ctl writes the journal line
	 * first, so every seq read here in the document is in the journal. */
	load_doc(k);
	load_journal(k);
	load_state(k);
	if (announce_journal(k) == -ENOSPC)
		log_warn("announced state full (%d GPUs)", KLOG_MAX_DEVICES);
	announce_doc(k);
	close(dfd);		/* the lock goes with it */
}

static const char usage[] =
	"Usage: mokka-kernellog --mock-root PATH [--host-root DIR] [--kernel-log PATH]\n"
	"Announces the Xids injected through the overrides document on the kernel log\n"
	"(default /dev/kmsg, a real path, not under the host root).\n\n"
	"  --mock-root PATH    host path of the mock tree (the overrides document's)\n"
	"  --host-root DIR     root that host paths live under (default /)\n"
	"  --kernel-log PATH   where announcements go (default /dev/kmsg)\n"
	"  --help, --version\n";

int main(int argc, char **argv)
{
	static struct kl k;
	const char *host_root = "", *mock_root = NULL;
	sigset_t mask;
	int sfd;

	prctl(PR_SET_NAME, "mokka-kernellog");
	log_setup_env("mokka-kernellog");
	k.kernel_log = "/dev/kmsg";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--host-root") && i + 1 < argc)
			host_root = strcmp(argv[++i], "/") ? argv[i] : "";
		else if (!strcmp(argv[i], "--mock-root") && i + 1 < argc)
			mock_root = argv[++i];
		else if (!strcmp(argv[i], "--kernel-log") && i + 1 < argc)
			k.kernel_log = argv[++i];
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("mokka-kernellog %s\n", MOKKA_VERSION);
			return 0;
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (!mock_root || mock_root[0] != '/' || strstr(mock_root, "..") || !k.kernel_log[0]) {
		fputs(usage, stderr);
		return 2;
	}
	snprintf(k.devices, sizeof(k.devices), "%s%s%s", host_root, mock_root, KLOG_DEVICES);
	if (ovr_path(k.overrides, sizeof(k.overrides), host_root, mock_root) < 0) {
		fprintf(stderr, "mokka-kernellog: %s%s: path too long\n", host_root, mock_root);
		return 2;
	}
	snprintf(k.root, sizeof(k.root), "%s", host_root);
	snprintf(k.state, sizeof(k.state), "%s%s%s", host_root, mock_root, KLOG_ANNOUNCED);
	snprintf(k.dir, sizeof(k.dir), "%s%s%s", host_root, mock_root, KLOG_DIR);
	if (ovr_xids_path(k.xids, sizeof(k.xids), k.overrides) < 0) {
		fprintf(stderr, "mokka-kernellog: %s: path too long\n", k.overrides);
		return 2;
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if ((sfd = signalfd(-1, &mask, SFD_CLOEXEC)) < 0) {
		log_error("signalfd: %s", strerror(errno));
		return 1;
	}
	load_devices(&k);
	log_info("started: %d GPUs, announcing on %s", k.ndev, k.kernel_log);
	for (;;) {
		struct pollfd p = { .fd = sfd, .events = POLLIN };
		struct signalfd_siginfo si;

		tick(&k);
		if (poll(&p, 1, TICK_MS) <= 0)
			continue;
		if (read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGHUP) {
			load_devices(&k);
			continue;
		}
		log_info("stopping on signal %u", si.ssi_signo);
		yl_free(k.doc);
		free(k.ev);
		return 0;
	}
}
