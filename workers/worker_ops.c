/* Simulator operations under ownership manifests: Stage/Apply converge,
 * Discard/Revoke remove exactly what was created. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fileio/beneath.h"
#include "ipc/log.h"
#include "ipc/msg.h"
#include "workers/generation.h"
#include "workers/manifest.h"
#include "workers/simulator.h"
#include "workers/stage_skip.h"
#include "workers/worker.h"

void sim_error(struct sim_errors *errs, const char *surface, const char *fmt, ...)
{
	va_list ap;

	if (errs->n >= SIM_MAX_ERRORS)
		return;
	snprintf(errs->e[errs->n].surface, sizeof(errs->e[0].surface), "%s", surface);
	va_start(ap, fmt);
	vsnprintf(errs->e[errs->n].message, sizeof(errs->e[0].message), fmt, ap);
	va_end(ap);
	errs->n++;
}

struct worker *the_worker;

bool sim_aborted(struct sim_ctx *ctx)
{
	struct worker *w = the_worker;

	if (!w || w->sock < 0)
		return false;
	return worker_busy_poll(w);
}

void worker_manifest_file(const struct worker *w, const char *kind, char *buf, size_t len)
{
	snprintf(buf, len, "%s/state/%s.%s.manifest", w->state.mock_root, w->sim->name, kind);
}

/* A killed writer's temporary files (host.c: "<leaf>.mokka-tmp.<pid>")
 * in the directories this pass owns outside the generations (those
 * converge as a whole): found by their dead pid and removed. */
static void sweep_tmp(struct worker *w, const struct manifest *cur, bool staging)
{
	int rootfd = beneath_root(w->ctx.host.root), fd;

	if (rootfd < 0)
		return;
	for (size_t i = 0; i < cur->n; i++) {
		if (cur->kinds[i] != 'd' || (staging && host_gen_of(&w->ctx.host, cur->paths[i]) >= 0))
			continue;
		if ((fd = beneath_open(rootfd, cur->paths[i], O_PATH | O_DIRECTORY, 0)) < 0)
			continue;
		if (beneath_sweep_tmp(fd) > 0)
			log_info("%s: removed a killed writer's temporary files in %s%s", w->sim->name,
				 w->ctx.host.root, cur->paths[i]);
		close(fd);
	}
	close(rootfd);
}

static int ensure_state_dir(struct worker *w)
{
	char dir[PATH_MAX + 300];
	struct host bare = w->ctx.host;

	bare.own = NULL;	/* R/state is the supervisor's, not the simulator's */
	bare.prev = NULL;
	snprintf(dir, sizeof(dir), "%s/state", w->state.mock_root);
	return host_mkdirs(&bare, dir, 0755);
}

/* Stage and Apply share this: run op with a fresh manifest, converge
 * against the previous one, persist the union on failure so nothing we
 * created is ever forgotten. */
/* A Stage's generation waits in the shadow for Publish: remember what we
 * own (old and new) to tell our entries of a shared surface from others'. */
static void remember_own(struct worker *w, const struct manifest *old,
			 const struct manifest *cur)
{
	manifest_free(&w->own);
	for (size_t i = 0; i < old->n; i++)
		manifest_add(&w->own, old->paths[i], old->kinds[i]);
	for (size_t i = 0; i < cur->n; i++)
		manifest_add(&w->own, cur->paths[i], cur->kinds[i]);
}

/* After a good op: what old owned and cur does not goes.  A generational
 * path's live side is left to Publish (removing it now would publish
 * part of this pass); its shadow converges instead. */
static void converge(struct worker *w, const struct manifest *old,
		     const struct manifest *cur, bool staging)
{
	struct manifest live;
	int e = 0;

	manifest_init(&live);
	for (size_t i = 0; i < old->n && e == 0; i++)
		if (!staging || host_gen_of(&w->ctx.host, old->paths[i]) < 0)
			e = manifest_add(&live, old->paths[i], old->kinds[i]);
	if (e == 0)
		e = manifest_remove_stale(w->ctx.host.root, &live, cur);
	manifest_free(&live);
	if (e < 0)
		log_warn("%s: converge: %s", w->sim->name, strerror(-e));
	if (staging && (e = gen_converge(&w->ctx.host, cur)) < 0)
		log_warn("%s: converge the staged generation: %s", w->sim->name, strerror(-e));
	sweep_tmp(w, cur, staging);
	if (staging)
		remember_own(w, old, cur);
}

static int run_owned(struct worker *w, const char *kind,
		     int (*op)(struct sim_ctx *, const struct state *, struct sim_errors *),
		     bool staging, struct sim_errors *errs)
{
	struct manifest old, cur;
	char file[PATH_MAX + 400];
	int r;

	if ((r = ensure_state_dir(w)) < 0) {
		sim_error(errs, "state", "%s/state: mkdir: %s", w->state.mock_root, strerror(-r));
		return r;
	}
	worker_manifest_file(w, kind, file, sizeof(file));
	if ((r = manifest_load_at(&old, w->ctx.host.root, file)) < 0) {
		sim_error(errs, "manifest", "%s: %s", file, strerror(-r));
		return r;
	}
	manifest_init(&cur);
	w->ctx.host.own = &cur;
	w->ctx.host.prev = &old;
	w->ctx.host.staging = staging;
	r = op(&w->ctx, &w->state, errs);
	if (r == 0 && errs->n > 0)
		r = -EIO;
	w->ctx.host.own = NULL;
	w->ctx.host.prev = NULL;
	w->ctx.host.staging = false;
	if (r == 0) {
		converge(w, &old, &cur, staging);
	} else {
		for (size_t i = 0; i < old.n; i++)
			manifest_add(&cur, old.paths[i], old.kinds[i]);
	}
	int s = manifest_save_at(&cur, w->ctx.host.root, file);
	if (s < 0) {
		sim_error(errs, "manifest", "%s: save: %s", file, strerror(-s));
		if (r == 0)
			r = s;
	}
	manifest_free(&old);
	manifest_free(&cur);
	return r;
}

static int remove_owned(struct worker *w, const char *kind,
			int (*extra)(struct sim_ctx *, struct sim_errors *),
			struct sim_errors *errs)
{
	struct manifest old;
	char file[PATH_MAX + 400];
	int r;

	if (extra && (r = extra(&w->ctx, errs)) < 0)
		sim_error(errs, kind, "%s", strerror(-r));
	worker_manifest_file(w, kind, file, sizeof(file));
	if ((r = manifest_load_at(&old, w->ctx.host.root, file)) < 0) {
		sim_error(errs, "manifest", "%s: %s", file, strerror(-r));
		return r;
	}
	r = manifest_remove_stale(w->ctx.host.root, &old, NULL);
	if (r < 0)
		sim_error(errs, kind, "remove: %s", strerror(-r));
	manifest_free(&old);
	if (r == 0)
		r = host_unlink(&w->ctx.host, file);
	return r ? r : errs->n ? -EIO : 0;
}

/* Incremental reconcile (stage_skip.h): true when this Stage may skip,
 * its inputs and the published output being what the last publish left.
 * The inputs are digested either way: a Stage that runs publishes them. */
static bool stage_unchanged(struct worker *w)
{
	char file[PATH_MAX + 400];
	struct skip_key k;
	struct manifest m;
	uint64_t out;
	bool same;

	w->pending.valid = false;
	if (!w->sim->inputs || w->sock < 0 || !w->state_key_ok)
		return false;
	skip_key_init(&k);
	w->sim->inputs(&w->ctx, &w->state, &k);
	w->pending.state = w->state_key;
	w->pending.inputs = k.h;
	w->pending.valid = true;
	if (!w->last.valid || !w->published)
		return false;
	if (w->last.state != w->pending.state || w->last.inputs != w->pending.inputs) {
		log_debug("%s: %s changed: staging", w->sim->name,
			  w->last.state != w->pending.state ? "state" : "inputs");
		return false;
	}
	worker_manifest_file(w, "stage", file, sizeof(file));
	if (manifest_load_at(&m, w->ctx.host.root, file) < 0)
		return false;
	same = skip_output_key(w->ctx.host.root, &m, &out) == 0 && out == w->last.output;
	manifest_free(&m);
	if (!same)
		log_debug("%s: the published output changed since it was published: staging",
			  w->sim->name);
	return same;
}

/* After a publish: what the live generation was rendered from, and what
 * it looks like on disk, for the next pass's stage_unchanged. */
static void remember_published(struct worker *w)
{
	char file[PATH_MAX + 400];
	struct manifest m;

	w->last.valid = false;
	if (!w->pending.valid)
		return;
	worker_manifest_file(w, "stage", file, sizeof(file));
	if (manifest_load_at(&m, w->ctx.host.root, file) < 0)
		return;
	if (skip_output_key(w->ctx.host.root, &m, &w->last.output) == 0) {
		w->last.state = w->pending.state;
		w->last.inputs = w->pending.inputs;
		w->last.valid = true;
	}
	manifest_free(&m);
}

int worker_stage(struct worker *w, struct sim_errors *errs)
{
	const char *delay = getenv("MOKKA_TEST_STAGE_DELAY_MS");
	int r;

	/* Test hook: widen the window in which a test kills a worker
	 * mid-Stage. */
	if (delay && atoi(delay) > 0) {
		struct timespec ts = { atoi(delay) / 1000, (long)(atoi(delay) % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	w->staged = false;
	w->skipped = w->stage_skipped = false;
	if (!w->sim->stage) {
		w->staged = true;
		return 0;
	}
	if (stage_unchanged(w)) {
		log_debug("%s: generation %llu: inputs and published output unchanged: "
			  "nothing to stage", w->sim->name, (unsigned long long)w->state.generation);
		w->staged = w->skipped = w->stage_skipped = true;
		return 0;
	}
	/* This pass may replace the live generation: no skip until it is
	 * published. */
	w->last.valid = false;
	if (w->sim->gens && (r = gen_prepare(&w->ctx.host, w->sim->name, w->sim->gens, true)) < 0) {
		sim_error(errs, "state", "mock root '%s': shadow %s/%s: %s", w->state.mock_root,
			  HOST_SHADOW_DIR, w->sim->name, strerror(-r));
		return r;
	}
	r = run_owned(w, "stage", w->sim->stage, w->sim->gens != NULL, errs);
	w->staged = r == 0;
	/* Stand-alone, this Stage is the whole pass: no barrier to wait for. */
	if (r == 0 && w->sock < 0)
		r = worker_publish(w, errs);
	return r;
}

int worker_publish(struct worker *w, struct sim_errors *errs)
{
	char err[512] = "";
	int r = 0;

	/* Only a generation staged and not yet published swaps in: a second
	 * swap would bring the previous one back. */
	if (!w->staged)
		return 0;
	w->staged = false;
	if (w->skipped) {	/* the live generation is this pass's already */
		w->skipped = false;
		return 0;
	}
	if (w->sim->publish && (r = w->sim->publish(&w->ctx, &w->state, errs)) == 0 && errs->n)
		r = -EIO;
	if (r == 0 && w->sim->gens &&
	    (r = gen_publish(&w->ctx.host, &w->own, err, sizeof(err))) < 0)
		sim_error(errs, "publish", "%s", err);
	w->published = r == 0;
	manifest_free(&w->own);
	if (r == 0 && w->sim->gens)
		remember_published(w);
	else
		w->last.valid = false;
	return r;
}

int worker_apply(struct worker *w, struct sim_errors *errs)
{
	if (!w->sim->apply)
		return 0;
	return run_owned(w, "apply", w->sim->apply, false, errs);
}

int worker_discard(struct worker *w, struct sim_errors *errs)
{
	char dir[PATH_MAX + 300];
	const char *name;
	int r = 0, rootfd, fd;

	/* The simulator's own teardown (it may read what Stage published),
	 * every generation (the live side may hold one the manifest never
	 * listed: a pass staged, then not published), then the rest. */
	w->staged = false;
	w->last.valid = false;
	if (w->sim->discard && (r = w->sim->discard(&w->ctx, errs)) < 0)
		sim_error(errs, "stage", "%s", strerror(-r));
	if (w->sim->gens && w->have_state &&
	    (r = gen_prepare(&w->ctx.host, w->sim->name, w->sim->gens, false)) == 0 &&
	    (r = gen_remove_all(&w->ctx.host)) < 0)
		sim_error(errs, "stage", "remove the staged generations: %s", strerror(-r));
	r = remove_owned(w, "stage", NULL, errs);

	/* R/state goes too when nothing else lives there (stand-alone use);
	 * a killed writer's temporary manifest first. */
	snprintf(dir, sizeof(dir), "%s/state", w->state.mock_root);
	if ((rootfd = beneath_root(w->ctx.host.root)) >= 0) {
		if ((fd = beneath_open(rootfd, dir, O_PATH | O_DIRECTORY, 0)) >= 0) {
			beneath_sweep_tmp(fd);
			close(fd);
		}
		if (w->sock < 0 && (fd = beneath_parent(rootfd, dir, &name)) >= 0) {
			unlinkat(fd, name, AT_REMOVEDIR);
			close(fd);
		}
		close(rootfd);
	}
	return r;
}

int worker_revoke(struct worker *w, struct sim_errors *errs)
{
	return remove_owned(w, "apply", w->sim->revoke, errs);
}

bool worker_ready(struct worker *w, char *reason, size_t len)
{
	if (!w->have_state) {
		snprintf(reason, len, "no state received yet");
		return false;
	}
	if (!w->ctx.ready) {
		snprintf(reason, len, "%s", w->ctx.not_ready_reason[0] ?
			 w->ctx.not_ready_reason : "not staged");
		return false;
	}
	if (w->sim->ready)
		return w->sim->ready(&w->ctx, &w->state, reason, len);
	reason[0] = '\0';
	return true;
}

void sim_inputs_state_only(struct sim_ctx *ctx, const struct state *s, struct skip_key *k)
{
	(void)ctx;
	(void)s;
	(void)k;
}
