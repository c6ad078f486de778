/* mokka-ctl: change a running simulated node without a redeploy.  One
 * command per run, one locked read-modify-validate-replace of the
 * overrides document (see ctl.h). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl/ctl.h"
#include "ipc/log.h"

enum { EXIT_ERR = 1, EXIT_USAGE = 2 };

struct args {
	const char *host_root, *mock_root, *overrides, *config, *gpu;
	const struct ctl_command *cmd;
	int argc;
	char *argv[CTL_MAX_ARGS];
	int nopts;
	struct ctl_opt opts[CTL_MAX_OPTS];
};

static void usage(FILE *f)
{
	fputs("Usage: mokka-ctl [--gpu INDEX|UUID|PCI|all] [--host-root DIR] [--mock-root PATH]\n"
	      "                 [--overrides FILE] [--config FILE] COMMAND [ARGS] [OPTIONS]\n"
	      "Change a running Mokka node: edits <host-root><mock-root>/driver/config/"
	      OVR_DOC_NAME "\n(the mock NVML and mokka-kernellog react within a second).\n\n"
	      "Commands:\n", f);
	for (size_t i = 0; i < ctl_ncommands; i++)
		fprintf(f, "  %-13s %s\n  %-13s   %s\n", ctl_commands[i].name, ctl_commands[i].usage,
			"", ctl_commands[i].help);
	fputs("\nOptions:\n"
	      "  --gpu SPEC        GPU index, UUID, PCI address or all (default all)\n"
	      "  --host-root DIR   root that host paths live under (default /)\n"
	      "  --mock-root PATH  host path of the mock tree (default /var/lib/nvml-mock)\n"
	      "  --overrides FILE  the document itself (default $MOCK_NVML_OVERRIDES, else\n"
	      "                    the layout above)\n"
	      "  --config FILE     the engine config (default $MOCK_NVML_CONFIG, else\n"
	      "                    config.yaml beside the document)\n"
	      "  --help, --version\n", f);
}

static const struct ctl_command *find_command(const char *name)
{
	for (size_t i = 0; i < ctl_ncommands; i++)
		if (!strcmp(ctl_commands[i].name, name))
			return &ctl_commands[i];
	return NULL;
}

/* "name=" (takes a value) or "name" (a flag) in the command's table. */
static int command_opt(const struct ctl_command *c, const char *name, bool *takes)
{
	size_t n = strlen(name);

	for (int i = 0; c->opts[i]; i++)
		if (!strncmp(c->opts[i], name, n) && (!c->opts[i][n] || !strcmp(c->opts[i] + n, "="))) {
			*takes = c->opts[i][n] == '=';
			return 0;
		}
	return -ENOENT;
}

/* --mock-root is joined under --host-root: absolute, and no "." or ".."
 * component that would step out of it. */
static bool inside_path(const char *p)
{
	if (p[0] != '/')
		return false;
	for (const char *c = p; c; c = strchr(c + 1, '/')) {
		size_t n = strcspn(c + 1, "/");
		if ((n == 1 && c[1] == '.') || (n == 2 && !strncmp(c + 1, "..", 2)))
			return false;
	}
	return true;
}

static int parse(int argc, char **argv, struct args *a)
{
	static const struct {
		const char *name;
		size_t off;
	} globals[] = {
		{ "host-root", offsetof(struct args, host_root) },
		{ "mock-root", offsetof(struct args, mock_root) },
		{ "overrides", offsetof(struct args, overrides) },
		{ "config", offsetof(struct args, config) },
		{ "gpu", offsetof(struct args, gpu) },
	};

	for (int i = 1; i < argc; i++) {
		char *arg = argv[i], name[64], *eq;
		const char *val = NULL;
		bool takes;
		size_t g;

		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			usage(stdout);
			return 1;
		}
		if (!strcmp(arg, "--version")) {
			printf("mokka-ctl %s\n", MOKKA_VERSION);
			return 1;
		}
		/* exec: "--" and everything after it is the command line, verbatim. */
		if (!strcmp(arg, "--") && a->cmd && !strcmp(a->cmd->name, "exec")) {
			if (argc - i > CTL_MAX_ARGS - a->argc) {
				fprintf(stderr, "mokka-ctl: too many arguments\n");
				return -EINVAL;
			}
			while (i < argc)
				a->argv[a->argc++] = argv[i++];
			break;
		}
		/* Anything not "--x" is the command or an argument ("-5" too). */
		if (strncmp(arg, "--", 2) || !arg[2]) {
			if (!a->cmd) {
				if (!(a->cmd = find_command(arg))) {
					fprintf(stderr, "mokka-ctl: unknown command '%s' (see --help)\n",
						arg);
					return -EINVAL;
				}
				continue;
			}
			if (a->argc == CTL_MAX_ARGS) {
				fprintf(stderr, "mokka-ctl: too many arguments\n");
				return -EINVAL;
			}
			a->argv[a->argc++] = arg;
			continue;
		}
		snprintf(name, sizeof(name), "%s", arg + 2);
		if ((eq = strchr(name, '='))) {
			*eq = '\0';
			val = strchr(arg, '=') + 1;
		}
		for (g = 0; g < sizeof(globals) / sizeof(globals[0]); g++)
			if (!strcmp(name, globals[g].name))
				break;
		if (g < sizeof(globals) / sizeof(globals[0])) {
			if (!val && i + 1 >= argc) {
				fprintf(stderr, "mokka-ctl: --%s needs a value\n", name);
				return -EINVAL;
			}
			*(const char **)((char *)a + globals[g].off) = val ? val : argv[++i];
			continue;
		}
		if (!a->cmd || command_opt(a->cmd, name, &takes) < 0) {
			fprintf(stderr, "mokka-ctl%s%s: unknown option --%s%s (see --help)\n",
				a->cmd ? " " : "", a->cmd ? a->cmd->name : "", name,
				a->cmd ? "" : " (command options follow the command)");
			return -EINVAL;
		}
		if (takes && !val) {
			if (i + 1 >= argc) {
				fprintf(stderr, "mokka-ctl %s: --%s needs a value\n", a->cmd->name, name);
				return -EINVAL;
			}
			val = argv[++i];
		} else if (!takes && val) {
			fprintf(stderr, "mokka-ctl %s: --%s takes no value\n", a->cmd->name, name);
			return -EINVAL;
		}
		if (a->nopts == CTL_MAX_OPTS) {
			fprintf(stderr, "mokka-ctl: too many options\n");
			return -EINVAL;
		}
		a->opts[a->nopts].name = strdup(name);
		a->opts[a->nopts++].value = val;
	}
	if (!a->cmd) {
		usage(stderr);
		return -EINVAL;
	}
	if (a->mock_root && !inside_path(a->mock_root)) {
		fprintf(stderr, "mokka-ctl: --mock-root %s: want an absolute path without '.' or "
			"'..' components (it lies under --host-root)\n", a->mock_root);
		return -EINVAL;
	}
	if (a->argc < a->cmd->min_args || (a->cmd->max_args >= 0 && a->argc > a->cmd->max_args)) {
		fprintf(stderr, "mokka-ctl: usage: mokka-ctl %s %s\n", a->cmd->name, a->cmd->usage);
		return -EINVAL;
	}
	return 0;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* Flags, then the reference's environment, then the on-host layout. */
static void paths(const struct args *a, char *doc, size_t dlen, char *conf, size_t clen)
{
	bool layout = a->host_root || a->mock_root;
	const char *root = a->host_root && strcmp(a->host_root, "/") ? a->host_root : "";
	char dir[PATH_MAX];

	if (a->overrides)
		snprintf(doc, dlen, "%s", a->overrides);
	else if (!layout && env("MOCK_NVML_OVERRIDES"))
		snprintf(doc, dlen, "%s", env("MOCK_NVML_OVERRIDES"));
	else
		ovr_path(doc, dlen, root, a->mock_root ? a->mock_root : "/var/lib/nvml-mock");
	snprintf(dir, sizeof(dir), "%s", doc);
	if (a->config)
		snprintf(conf, clen, "%s", a->config);
	else if (!layout && !a->overrides && env("MOCK_NVML_CONFIG"))
		snprintf(conf, clen, "%s", env("MOCK_NVML_CONFIG"));
	else
		snprintf(conf, clen, "%s/config.yaml", dirname(dir));
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The Xid journal as it is (kept for a rollback) and its newest seq. */
static int journal_floor(const struct ctl_docfile *f, struct ctl_call *call, char **xids,
			 size_t *len)
{
	struct ovr_xid_event *ev;
	size_t n;
	int r = ctl_xids_read(f, xids, len, call->err, call->errlen);

	if (r < 0 || (r = ovr_xids_parse(*xids ? *xids : "", *len, &ev, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (ev[i].seq > call->seq_floor)
			call->seq_floor = ev[i].seq;
	free(ev);
	return 0;
}

/* The journal first, then the document: kernellog reads the document
 * before the journal, so every seq it finds in one is already in the
 * other.  A document that cannot be written takes its journal line back. */
static int replace(const struct ctl_docfile *f, struct ctl_call *call, const char *xids,
		   size_t xids_len, const char *text, size_t len)
{
	char *jtext = NULL, why[512];
	size_t jlen = 0;
	int r;

	if (!call->inject.seq)
		return ctl_doc_replace(f, text, len, call->err, call->errlen);
	if ((r = ovr_xids_append(xids, xids_len, &call->inject, &jtext, &jlen)) < 0)
		return ctl_fail(call, r, "out of memory");
	r = ctl_file_replace(f, f->xids, jtext, jlen, call->err, call->errlen);
	free(jtext);
	if (r < 0 || (r = ctl_doc_replace(f, text, len, call->err, call->errlen)) == 0)
		return r;
	if (ctl_file_replace(f, f->xids, xids ? xids : "", xids_len, why, sizeof(why)) < 0)
		snprintf(call->err + strlen(call->err), call->errlen - strlen(call->err),
			 "; and the Xid journal keeps the injection: %s", why);
	return r;
}

static int run(struct args *a)
{
	static struct ctl_profile prof;
	struct ctl_docfile f = { .lock_fd = -1, .dir_fd = -1 };
	struct ctl_call call = { .prof = &prof, .argc = a->argc, .argv = a->argv,
				 .nopts = a->nopts, .now_us = now_us() };
	char doc_path[PATH_MAX], conf[PATH_MAX], err[1024] = "", why[512];
	char *old = NULL, *text = NULL, *xids = NULL;
	size_t old_len = 0, len = 0, xids_len = 0;
	struct yl_node *doc = NULL;
	int r;

	memcpy(call.opts, a->opts, sizeof(a->opts));
	call.err = err;
	call.errlen = sizeof(err);
	paths(a, doc_path, sizeof(doc_path), conf, sizeof(conf));
	/* The on-host layout lies beneath the host root: no link is followed
	 * there (a path the operator named is taken as named). */
	if (!a->overrides && (a->host_root || a->mock_root || !env("MOCK_NVML_OVERRIDES")))
		f.root = a->host_root && strcmp(a->host_root, "/") ? a->host_root : "";
	call.root = f.root;
	if ((r = ctl_profile_load(&prof, conf, err, sizeof(err))) < 0 ||
	    (r = ctl_target_parse(&prof, a->gpu ? a->gpu : "all", &call.target, err,
				  sizeof(err))) < 0 ||
	    (r = ctl_doc_lock(&f, doc_path, !a->cmd->readonly, err, sizeof(err))) < 0 ||
	    (r = ctl_doc_read(&f, &old, &old_len, err, sizeof(err))) < 0 ||
	    (!a->cmd->readonly && (r = journal_floor(&f, &call, &xids, &xids_len)) < 0))
		goto out;
	if (a->cmd->no_parse && call.target.all)
		doc = ovr_parse("", 0, why, sizeof(why));
	else if (!(doc = ovr_parse(old ? old : "", old_len, why, sizeof(why))) ||
		 ovr_check_shape(doc, why, sizeof(why)) < 0) {
		snprintf(err, sizeof(err), "%s:%s (fix it by hand, or `mokka-ctl reset` replaces "
			 "it)", doc_path, why);
		r = -EINVAL;
		goto out;
	}
	if (!doc) {
		snprintf(err, sizeof(err), "out of memory");
		r = -ENOMEM;
		goto out;
	}
	if ((r = a->cmd->run(&call, &doc)) < 0 || a->cmd->readonly)
		goto out;
	if ((r = ovr_emit(doc, &text, &len)) < 0) {
		snprintf(err, sizeof(err), "out of memory");
		goto out;
	}
	/* Errors point into the edited text: say so. */
	snprintf(why, sizeof(why), "%s (as edited)", doc_path);
	if ((r = ctl_validate(&prof, why, doc, text, len, err, sizeof(err))) < 0)
		goto out;
	/* Unchanged: no write, no reload anywhere. */
	if (old && old_len == len && !memcmp(old, text, len))
		goto out;
	r = replace(&f, &call, xids, xids_len, text, len);
out:
	ctl_doc_unlock(&f);
	if (r < 0)
		fprintf(stderr, "mokka-ctl %s: %s\n", a->cmd->name, err[0] ? err : strerror(-r));
	yl_free(doc);
	free(old);
	free(text);
	free(xids);
	return r < 0 ? EXIT_ERR : 0;
}

int main(int argc, char **argv)
{
	struct args a = { 0 };
	int r;

	/* The profile compiler's warnings (unknown keys) are not ours to show. */
	log_setup("mokka-ctl", LOG_LVL_ERROR, LOG_FMT_TEXT);
	r = parse(argc, argv, &a);
	if (r)
		return r > 0 ? 0 : EXIT_USAGE;
	r = run(&a);
	for (int i = 0; i < a.nopts; i++)
		free((char *)a.opts[i].name);
	return r;
}
