/* mokka-plan: one pass of the control plane's deterministic core.
 *
 *   kubectl get sgpurackprofiles,sgpuinventories,sgpuracks,sgpuruntimepolicies,nodes \
 *     -o yaml > cluster.yaml
 *   mokka-plan -o out cluster.yaml
 *
 * writes out/apply.yaml (SGPURacks, Node projections: kubectl apply
 * --server-side --field-manager=mokka-controller), out/status.yaml (the
 * same with --subresource=status), out/delete.txt (drained racks) and
 * out/nodes/<node>.yaml (each assigned Node's desired state, what
 * mokka-supervisor --state-source controlplane:DIR reads).  Without -o
 * everything goes to stdout.  The same input gives the same bytes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "planner/decode.h"
#include "planner/emit.h"

struct opts {
	const char *out_dir, *now, *node;
	bool strict;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: mokka-plan [-o DIR] [--node NAME] [--now RFC3339] [--strict] FILE...\n"
		"  FILE   kubectl get -o yaml output (a List or multi-document YAML); - is stdin\n"
		"  -o DIR write DIR/apply.yaml, DIR/status.yaml, DIR/delete.txt, DIR/nodes/*.yaml\n"
		"  --node NAME  print only that Node's desired-state document\n"
		"  --now T      lastTransitionTime of changed conditions (default: the newest\n"
		"               creationTimestamp of the input, so output is reproducible)\n"
		"  --strict     a spec error stops the plan (default: that object is invalid)\n"
		"  --help, --version\n");
}

static int read_all(const char *path, char **buf, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);

	if (!f || !b) {
		free(b);
		return -errno;
	}
	for (;;) {
		size_t got = fread(b + n, 1, cap - n, f);

		n += got;
		if (n < cap)
			break;
		char *nb = realloc(b, cap *= 2);

		if (!nb) {
			free(b);
			return -ENOMEM;
		}
		b = nb;
	}
	if (ferror(f)) {
		free(b);
		return -EIO;
	}
	if (f != stdin)
		fclose(f);
	*buf = b;
	*len = n;
	return 0;
}

static void warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "mokka-plan: warning: %s\n", msg);
}

static const char *newest(const struct pl_world *w)
{
	const char *t = "1970-01-01T00:00:00Z";
#define SCAN(arr, n) \
	for (int i = 0; i < w->n; i++) \
		if (w->arr[i].m.created && strcmp(w->arr[i].m.created, t) > 0) \
			t = w->arr[i].m.created;
	SCAN(profiles, nprofiles)
	SCAN(inventories, ninventories)
	SCAN(policies, npolicies)
	SCAN(nodes, nnodes)
#undef SCAN
	return t;
}

/* The file's current bytes equal these? */
static bool same_content(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "rb");
	char chunk[65536];
	size_t off = 0, n;
	bool same = f != NULL;

	while (same && (n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		same = off + n <= len && !memcmp(chunk, buf + off, n);
		off += n;
	}
	if (f)
		fclose(f);
	return same && off == len;
}

/* Write through a temporary name and rename, so a watcher (the supervisor
 * reading nodes/) sees whole files; an unchanged file is not rewritten, so
 * it sees no event either.  Durability is one syncfs at the end. */
static int write_file(const char *dir, const char *name, int (*fn)(FILE *, struct pl_world *, const void *),
		      struct pl_world *w, const void *arg)
{
	char path[4096], tmp[4200], *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len), *f;
	int rc;

	if (!m)
		return -errno;
	rc = fn(m, w, arg);
	if (fclose(m) && !rc)
		rc = -EIO;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	if (rc || same_content(path, buf, len))
		goto out;
	f = fopen(tmp, "w");
	if (!f) {
		rc = -errno;
		goto out;
	}
	if (fwrite(buf, 1, len, f) != len)
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
out:
	if (rc)
		fprintf(stderr, "mokka-plan: %s: %s\n", path, strerror(-rc));
	free(buf);
	return rc;
}

static int w_apply(FILE *f, struct pl_world *w, const void *arg)
{
	(void)arg;
	return pl_emit_apply(f, w);
}

static int w_status(FILE *f, struct pl_world *w, const void *arg)
{
	return pl_emit_status(f, w, arg);
}

static int w_deletes(FILE *f, struct pl_world *w, const void *arg)
{
	(void)arg;
	return pl_emit_deletes(f, w);
}

static int w_node(FILE *f, struct pl_world *w, const void *arg)
{
	return pl_emit_node_state(f, w, *(const int *)arg);
}

/* A Node no longer assigned loses its document (its supervisor keeps the
 * last good state, see profile/controlplane.c). */
static int prune_nodes(const char *dir, struct pl_world *w)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char name[256];
		int ni;

		if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".yaml"))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len - 5), e->d_name);
		ni = pl_hmap_gets(&w->node_by_name, name);
		if (ni >= 0 && w->nodes[ni].state == PL_N_BOUND && w->racks[w->nodes[ni].rack].generated)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) && errno != ENOENT)
			rc = -errno;
	}
	closedir(d);
	return rc;
}

static int write_dir(const struct opts *o, struct pl_world *w, const char *now)
{
	char nodes_dir[4096], name[300];
	int *ns, n, rc;

	snprintf(nodes_dir, sizeof(nodes_dir), "%s/nodes", o->out_dir);
	if ((mkdir(o->out_dir, 0755) && errno != EEXIST) || (mkdir(nodes_dir, 0755) && errno != EEXIST)) {
		fprintf(stderr, "mokka-plan: %s: %s\n", nodes_dir, strerror(errno));
		return -errno;
	}
	rc = write_file(o->out_dir, "apply.yaml", w_apply, w, NULL);
	rc = rc ?: write_file(o->out_dir, "status.yaml", w_status, w, now);
	rc = rc ?: write_file(o->out_dir, "delete.txt", w_deletes, w, NULL);
	n = pl_state_nodes(w, &ns);
	if (n < 0)
		return n;
	for (int i = 0; !rc && i < n; i++) {
		snprintf(name, sizeof(name), "%s.yaml", w->nodes[ns[i]].m.name);
		rc = write_file(nodes_dir, name, w_node, w, &ns[i]);
	}
	free(ns);
	rc = rc ?: prune_nodes(nodes_dir, w);
	if (!rc) {
		int fd = open(o->out_dir, O_RDONLY | O_DIRECTORY);

		if (fd < 0 || syncfs(fd))
			rc = -errno;
		if (fd >= 0)
			close(fd);
	}
	return rc;
}

static int write_stdout(const struct opts *o, struct pl_world *w, const char *now)
{
	int *ns, n, rc = 0;

	if (o->node) {
		int ni = pl_hmap_gets(&w->node_by_name, o->node);

		if (ni < 0 || w->nodes[ni].state != PL_N_BOUND) {
			fprintf(stderr, "mokka-plan: Node %s is not assigned\n", o->node);
			return -ENOENT;
		}
		return pl_emit_node_state(stdout, w, ni);
	}
	rc = pl_emit_apply(stdout, w);
	rc = rc ?: pl_emit_status(stdout, w, now);
	n = pl_state_nodes(w, &ns);
	if (n < 0)
		return n;
	for (int i = 0; !rc && i < n; i++)
		rc = pl_emit_node_state(stdout, w, ns[i]);
	free(ns);
	if (!rc) {
		printf("# delete (kubectl delete):\n");
		fflush(stdout);
		rc = pl_emit_deletes(stdout, w);
	}
	return rc;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "now", required_argument, NULL, 'N' },
		{ "node", required_argument, NULL, 'n' },
		{ "strict", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "o:h", longs, NULL)) != -1) {
		switch (c) {
		case 'o': o->out_dir = optarg; break;
		case 'N': o->now = optarg; break;
		case 'n': o->node = optarg; break;
		case 'S': o->strict = true; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("mokka-plan %s\n", MOKKA_VERSION); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct pl_world w;
	struct pl_decoder d = { .w = &w, .warn = warn };
	int rc;

	if (parse_args(argc, argv, &o) < 0)
		return 2;
	d.strict = o.strict;
	pl_world_init(&w);
	for (int i = optind; i < argc; i++) {
		char *buf = NULL;
		size_t len = 0;

		rc = read_all(argv[i], &buf, &len);
		if (rc < 0) {
			fprintf(stderr, "mokka-plan: %s: %s\n", argv[i], strerror(-rc));
			goto out;
		}
		d.source = strcmp(argv[i], "-") ? argv[i] : "<stdin>";
		rc = pl_decode(&d, buf, len);
		free(buf);
		if (rc < 0) {
			fprintf(stderr, "mokka-plan: %s\n", d.err);
			goto out;
		}
	}
	rc = pl_plan(&w);
	if (!rc)
		rc = o.out_dir ? write_dir(&o, &w, o.now ? o.now : newest(&w))
			       : write_stdout(&o, &w, o.now ? o.now : newest(&w));
	if (rc < 0 && rc != -ENOENT)
		fprintf(stderr, "mokka-plan: %s\n", strerror(-rc));
out:
	pl_decoder_free(&d);
	pl_world_free(&w);
	return rc < 0 ? 1 : 0;
}
