/* File source.  inotify watches directories, not files: an editor's save
 * and a ConfigMap's ..data swap both replace the inode, which would silently
 * orphan a watch on the file itself.  Every directory on the way to the file
 * that holds a symlink (and the one holding the file) is watched, with the
 * names looked up there; the set is re-resolved before every re-read because
 * a swap changes which directories are on the way. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/log.h"
#include "supervisor/source.h"

#define SOURCE_RESYNC_DEFAULT_MS 60000u
#define SOURCE_DEBOUNCE_DEFAULT_MS 200u
/* A burst that keeps re-arming the debounce is read after at most this many
 * debounce intervals, so a constantly touched directory cannot starve us. */
#define SOURCE_DEBOUNCE_MAX_FACTOR 5u
#define SOURCE_MAX_SYMLINKS 40		/* as the kernel's ELOOP limit */
#define SOURCE_MAX_WATCHES 64
#define SOURCE_ERRLEN 1024

#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | \
		    IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB | \
		    IN_ONLYDIR | IN_DONT_FOLLOW)

/* One (directory, name) pair whose change can change what a path reads;
 * several pairs may share a wd. */
struct watch {
	int wd;
	char *dir;
	char *name;
};

struct source_file {
	const char *label;	/* "profile" / "topology" */
	char *path;		/* absolute; NULL when unset */
	bool absent_ok;		/* ENOENT means "none", not an error */
	bool have;		/* good bytes (or a good "none") known */
	bool dirty;		/* changed since the last emit */
	char *bytes;		/* NULL: none */
	size_t len;
	char err[SOURCE_ERRLEN];	/* current error, "" when reading fine */
};

struct source {
	struct loop *loop;
	source_update_cb update;
	source_error_cb error;
	void *arg;
	uint64_t resync_ms, debounce_ms;
	struct source_file prof, topo;
	int ifd;			/* -1: inotify unavailable, resync only */
	struct watch watches[SOURCE_MAX_WATCHES];
	size_t nwatches;
	struct loop_timer debounce, resync;
	uint64_t first_poke;
	bool emitted;			/* at least one update went out */
	bool error_since_emit;		/* recovery re-emits even unchanged bytes */
	int in_callback;
	bool stop_pending;
};


/* ---- watch set ---- */

static void want_watch(struct watch *w, size_t *n, const char *dir, const char *name)
{
	const char *d = dir[0] ? dir : "/";

	for (size_t i = 0; i < *n; i++)
		if (strcmp(w[i].dir, d) == 0 && strcmp(w[i].name, name) == 0)
			return;
	if (*n == SOURCE_MAX_WATCHES)
		return;
	w[*n].dir = strdup(d);
	w[*n].name = strdup(name);
	w[*n].wd = -1;
	if (!w[*n].dir || !w[*n].name) {
		free(w[*n].dir);
		free(w[*n].name);
		return;
	}
	(*n)++;
}

/* Walks path component by component like realpath(3), recording the
 * directory and name of every symlink followed and of the final entry.
 * Where a component is missing, its parent is watched for it to appear. */
static void resolve_watches(const char *path, struct watch *w, size_t *n)
{
	char resolved[PATH_MAX] = "", rest[2 * PATH_MAX], comp[NAME_MAX + 1];
	int hops = 0;

	if (snprintf(rest, sizeof(rest), "%s", path) >= (int)sizeof(rest))
		return;
	for (;;) {
		char *p = rest, *end, cand[PATH_MAX + NAME_MAX + 2], target[PATH_MAX];
		struct stat st;
		size_t clen;
		bool last;
		ssize_t tl;

		while (*p == '/')
			p++;
		if (!*p)
			return;
		end = strchr(p, '/');
		clen = end ? (size_t)(end - p) : strlen(p);
		if (clen > NAME_MAX)
			return;
		memcpy(comp, p, clen);
		comp[clen] = '\0';
		p += clen;
		while (*p == '/')
			p++;
		last = !*p;
		memmove(rest, p, strlen(p) + 1);

		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			char *slash = strrchr(resolved, '/');
			if (slash)
				*slash = '\0';
			continue;
		}
		snprintf(cand, sizeof(cand), "%s/%s", resolved, comp);
		if (lstat(cand, &st) < 0) {
			want_watch(w, n, resolved, comp);
			return;
		}
		if (S_ISLNK(st.st_mode)) {
			want_watch(w, n, resolved, comp);
			tl = readlink(cand, target, sizeof(target) - 1);
			if (tl <= 0 || ++hops > SOURCE_MAX_SYMLINKS)
				return;
			target[tl] = '\0';
			/* The target's components come before what is left. */
			if (strlen(rest) + (size_t)tl + 2 > sizeof(rest))
				return;
			memmove(rest + tl + 1, rest, strlen(rest) + 1);
			memcpy(rest, target, (size_t)tl);
			rest[tl] = '/';
			if (target[0] == '/')
				resolved[0] = '\0';
			continue;
		}
		if (last || !S_ISDIR(st.st_mode)) {
			want_watch(w, n, resolved, comp);
			return;
		}
		if (strlen(cand) >= sizeof(resolved))
			return;
		memcpy(resolved, cand, strlen(cand) + 1);
	}
}

static void free_watches(struct watch *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(w[i].dir);
		free(w[i].name);
	}
}

/* Adds the new set before removing the old one, so no change between
 * the two goes unseen; inotify hands back the same wd for a directory
 * already watched. */
static void rewatch(struct source *s)
{
	struct watch nw[SOURCE_MAX_WATCHES];
	size_t nn = 0;

	if (s->ifd < 0)
		return;
	if (s->prof.path)
		resolve_watches(s->prof.path, nw, &nn);
	if (s->topo.path)
		resolve_watches(s->topo.path, nw, &nn);
	for (size_t i = 0; i < nn; i++) {
		nw[i].wd = inotify_add_watch(s->ifd, nw[i].dir, WATCH_MASK);
		/* ENOENT: the directory went away after we resolved it; the
		 * event that removed it brings us back here. */
		if (nw[i].wd < 0 && errno != ENOENT)
			log_warn("source: watch %s: %s (relying on the %llu ms resync)",
				 nw[i].dir, strerror(errno), (unsigned long long)s->resync_ms);
	}
	for (size_t i = 0; i < s->nwatches; i++) {
		bool keep = s->watches[i].wd < 0;

		for (size_t j = 0; j < nn && !keep; j++)
			keep = nw[j].wd == s->watches[i].wd;
		for (size_t j = 0; j < i && !keep; j++)
			keep = s->watches[j].wd == s->watches[i].wd;	/* removed already */
		if (!keep)
			inotify_rm_watch(s->ifd, s->watches[i].wd);
	}
	free_watches(s->watches, s->nwatches);
	memcpy(s->watches, nw, nn * sizeof(nw[0]));
	s->nwatches = nn;
}

/* ---- reading and emitting ---- */

static bool same_bytes(const char *a, size_t al, const char *b, size_t bl)
{
	if (!a || !b)
		return a == b;
	return al == bl && memcmp(a, b, al) == 0;
}

static void report(struct source *s, struct source_file *f, const char *msg)
{
	char full[SOURCE_ERRLEN + 16];

	s->error_since_emit = true;
	/* The same failure seen again on every resync is not news. */
	if (strcmp(f->err, msg) == 0)
		return;
	snprintf(f->err, sizeof(f->err), "%s", msg);
	snprintf(full, sizeof(full), "%s %s", f->label, msg);
	if (s->error) {
		s->in_callback++;
		s->error(s->arg, full);
		s->in_callback--;
	}
}

static void read_one(struct source *s, struct source_file *f)
{
	char msg[SOURCE_ERRLEN], *b = NULL;
	size_t len = 0;
	int r;

	if (!f->path) {
		f->have = true;
		return;
	}
	r = source_read_file(f->path, &b, &len, msg, sizeof(msg));
	if (r == -ENOENT && f->absent_ok) {
		b = NULL;
		len = 0;
	} else if (r < 0) {
		report(s, f, msg);
		return;
	}
	f->err[0] = '\0';
	if (f->have && same_bytes(f->bytes, f->len, b, len)) {
		free(b);
		return;
	}
	free(f->bytes);
	f->bytes = b;
	f->len = len;
	f->have = true;
	f->dirty = true;
}

static void source_free(struct source *s);

/* Re-resolves the watches, re-reads both files and emits on change (or on
 * recovery from a reported error).  Returns false when s was stopped from a
 * callback and is gone. */
static bool refresh(struct source *s)
{
	rewatch(s);
	read_one(s, &s->prof);
	if (!s->stop_pending)
		read_one(s, &s->topo);
	if (!s->stop_pending && s->prof.have && s->topo.have &&
	    (!s->emitted || s->prof.dirty || s->topo.dirty ||
	     (s->error_since_emit && !s->prof.err[0] && !s->topo.err[0]))) {
		s->emitted = true;
		s->prof.dirty = s->topo.dirty = false;
		s->error_since_emit = s->prof.err[0] || s->topo.err[0];
		s->in_callback++;
		s->update(s->arg, s->prof.bytes, s->prof.len, s->topo.bytes, s->topo.len);
		s->in_callback--;
	}
	if (s->stop_pending) {
		source_free(s);
		return false;
	}
	return true;
}

/* ---- loop callbacks ---- */

static void on_debounce(struct loop *l, void *arg)
{
	struct source *s = arg;

	refresh(s);
}

static void on_resync(struct loop *l, void *arg)
{
	struct source *s = arg;

	/* Re-armed first so that a stop from a callback cancels it. */
	loop_timer_start(l, &s->resync, s->resync_ms);
	refresh(s);
}

/* Something in a watched directory changed: (re)arm the debounce, but not
 * past SOURCE_DEBOUNCE_MAX_FACTOR intervals after the first event. */
static void poke(struct source *s)
{
	uint64_t now = loop_now_ms();

	if (loop_timer_armed(&s->debounce)) {
		if (now - s->first_poke >= SOURCE_DEBOUNCE_MAX_FACTOR * s->debounce_ms)
			return;
	} else {
		s->first_poke = now;
	}
	loop_timer_start(s->loop, &s->debounce, s->debounce_ms);
}

static bool event_matters(struct source *s, const struct inotify_event *ev)
{
	bool ours = false;

	if (ev->mask & IN_Q_OVERFLOW)
		return true;	/* events were lost: anything may have changed */
	for (size_t i = 0; i < s->nwatches; i++) {
		struct watch *w = &s->watches[i];

		if (w->wd != ev->wd)
			continue;
		if (ev->mask & IN_IGNORED)
			w->wd = -1;	/* gone (deleted dir); wd may be reused */
		/* No name: the directory itself changed (deleted, moved). */
		if (ev->len == 0 || strcmp(ev->name, w->name) == 0)
			ours = true;
	}
	return ours;
}

static void on_inotify(struct loop *l, int fd, uint32_t events, void *arg)
{
	struct source *s = arg;
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool changed = false;

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;

			if (event_matters(s, ev))
				changed = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	if (changed)
		poke(s);
}

static void close_inotify(struct source *s)
{
	if (s->ifd < 0)
		return;
	loop_del_fd(s->loop, s->ifd);
	close(s->ifd);
	s->ifd = -1;
	free_watches(s->watches, s->nwatches);
	s->nwatches = 0;
}

/* ---- lifecycle ---- */

static int absolute_path(const char *path, char **out)
{
	char cwd[PATH_MAX];

	*out = NULL;
	if (!path)
		return 0;
	/* Resolved now, so a later chdir cannot change what we watch. */
	if (path[0] == '/') {
		*out = strdup(path);
		return *out ? 0 : -ENOMEM;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	if (asprintf(out, "%s/%s", cwd, path) < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void source_free(struct source *s)
{
	close_inotify(s);
	loop_timer_stop(s->loop, &s->debounce);
	loop_timer_stop(s->loop, &s->resync);
	free(s->prof.path);
	free(s->prof.bytes);
	free(s->topo.path);
	free(s->topo.bytes);
	free(s);
}

int source_start(struct loop *l, const struct source_opts *o,
		 source_update_cb update, source_error_cb error, void *arg,
		 struct source **out)
{
	struct source *s = calloc(1, sizeof(*s));
	int r;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->loop = l;
	s->update = update;
	s->error = error;
	s->arg = arg;
	s->ifd = -1;
	loop_timer_init(&s->debounce, on_debounce, s);
	loop_timer_init(&s->resync, on_resync, s);
	s->resync_ms = o->resync_ms ? o->resync_ms : SOURCE_RESYNC_DEFAULT_MS;
	s->debounce_ms = o->debounce_ms ? o->debounce_ms : SOURCE_DEBOUNCE_DEFAULT_MS;
	s->prof.label = "profile";
	s->topo.label = "topology";
	s->topo.absent_ok = true;
	if ((r = absolute_path(o->profile_path, &s->prof.path)) < 0 ||
	    (r = absolute_path(o->topology_path, &s->topo.path)) < 0) {
		log_error("source: making the profile/topology paths absolute: %s",
			  strerror(-r));
		source_free(s);
		return r;
	}
	s->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (s->ifd < 0) {
		log_warn("source: inotify_init1: %s (changes seen only by the %llu ms resync)",
			 strerror(errno), (unsigned long long)s->resync_ms);
	} else if ((r = loop_add_fd(l, s->ifd, EPOLLIN, on_inotify, s)) < 0) {
		log_error("source: adding the inotify fd to the loop: %s", strerror(-r));
		close(s->ifd);
		s->ifd = -1;
		source_free(s);
		return r;
	}
	loop_timer_start(l, &s->resync, s->resync_ms);
	*out = s;
	if (!refresh(s)) {
		*out = NULL;	/* stopped from its own first callback */
		return -ECANCELED;
	}
	return 0;
}

void source_stop(struct source *s)
{
	if (!s)
		return;
	if (s->in_callback) {
		s->stop_pending = true;	/* freed once the callback returns */
		return;
	}
	source_free(s);
}

void source_test_drop_watches(struct source *s)
{
	close_inotify(s);
}
