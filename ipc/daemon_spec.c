/* The daemon spec: the one description of a daemon that a worker asks the
 * supervisor to run.  This file checks its shape; whether THIS worker may
 * start THAT daemon is the supervisor's row check (supervisor/simtable.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ipc/proto.h"

__attribute__((format(printf, 3, 4)))
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EPROTO;
}

static void free_strv(char **v)
{
	for (int i = 0; v[i]; i++) {
		free(v[i]);
		v[i] = NULL;
	}
}

void ipc_daemon_spec_free(struct ipc_daemon_spec *d)
{
	free_strv(d->argv);
	free_strv(d->env);
	memset(d, 0, sizeof(*d));
}

static int add_str(char **v, int max, const char *s)
{
	int i = 0;

	while (i < max && v[i])
		i++;
	if (i >= max)
		return -E2BIG;
	if (!(v[i] = strdup(s)))
		return -ENOMEM;
	v[i + 1] = NULL;
	return 0;
}

int ipc_daemon_spec_add_arg(struct ipc_daemon_spec *d, const char *arg)
{
	return add_str(d->argv, IPC_DAEMON_MAX_ARGS, arg);
}

int ipc_daemon_spec_add_env(struct ipc_daemon_spec *d, const char *kv)
{
	return add_str(d->env, IPC_DAEMON_MAX_ENV, kv);
}

int ipc_daemon_spec_copy(struct ipc_daemon_spec *dst, const struct ipc_daemon_spec *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->name, src->name, sizeof(dst->name));
	memcpy(dst->reload_file, src->reload_file, sizeof(dst->reload_file));
	for (int i = 0; src->argv[i]; i++)
		if (ipc_daemon_spec_add_arg(dst, src->argv[i]) < 0)
			goto oom;
	for (int i = 0; src->env[i]; i++)
		if (ipc_daemon_spec_add_env(dst, src->env[i]) < 0)
			goto oom;
	return 0;
oom:
	ipc_daemon_spec_free(dst);
	return -ENOMEM;
}

static bool same_strv(char *const *a, char *const *b)
{
	int i;

	for (i = 0; a[i] && b[i]; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return !a[i] && !b[i];
}

bool ipc_daemon_spec_equal(const struct ipc_daemon_spec *a, const struct ipc_daemon_spec *b)
{
	return strcmp(a->name, b->name) == 0 && strcmp(a->reload_file, b->reload_file) == 0 &&
	       same_strv(a->argv, b->argv) && same_strv(a->env, b->env);
}

static bool has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* A bare file name: no '/', not hidden, not "." or "..". */
static int check_name(const char *n, char *err, size_t errlen)
{
	if (strnlen(n, IPC_DAEMON_NAME_MAX) >= IPC_DAEMON_NAME_MAX)
		return bad(err, errlen, "daemon: \"name\" is longer than %d bytes",
			   IPC_DAEMON_NAME_MAX - 1);
	if (strchr(n, '/'))
		return bad(err, errlen, "daemon: \"name\" \"%.64s\" is a path, not a bare file name "
			   "(the supervisor picks the directory)", n);
	if (n[0] == '.')
		return bad(err, errlen, "daemon: \"name\" \"%s\" starts with a dot", n);
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return bad(err, errlen, "daemon: \"name\" \"%.64s\" is not a bare file name "
				   "(only [A-Za-z0-9._-]; the supervisor picks the directory)", n);
	return 0;
}

static int check_env(const char *kv, int i, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');

	if (!eq || eq == kv)
		return bad(err, errlen, "daemon: \"env\"[%d] is not KEY=VALUE", i);
	for (const char *p = kv; p < eq; p++)
		if (!((*p >= 'A' && *p <= 'Z') || *p == '_' || (p > kv && *p >= '0' && *p <= '9')))
			return bad(err, errlen, "daemon: \"env\"[%d]: key \"%.*s\" is not [A-Z_][A-Z0-9_]*",
				   i, (int)(eq - kv > 64 ? 64 : eq - kv), kv);
	return 0;
}

static int check_strv(char *const *v, int max, const char *field, char *err, size_t errlen)
{
	for (int i = 0; v[i]; i++) {
		if (i >= max)
			return bad(err, errlen, "daemon: more than %d \"%s\" entries", max, field);
		if (strlen(v[i]) >= IPC_DAEMON_ARG_MAX)
			return bad(err, errlen, "daemon: \"%s\"[%d] is longer than %d bytes", field, i,
				   IPC_DAEMON_ARG_MAX - 1);
		if (has_ctl(v[i]))
			return bad(err, errlen, "daemon: \"%s\"[%d] contains a control character",
				   field, i);
		if (strcmp(field, "env") == 0 && check_env(v[i], i, err, errlen) < 0)
			return -EPROTO;
	}
	return 0;
}

int ipc_daemon_spec_check(const struct ipc_daemon_spec *d, char *err, size_t errlen)
{
	int r;

	if ((r = check_name(d->name, err, errlen)) < 0 ||
	    (r = check_strv(d->argv, IPC_DAEMON_MAX_ARGS, "argv", err, errlen)) < 0 ||
	    (r = check_strv(d->env, IPC_DAEMON_MAX_ENV, "env", err, errlen)) < 0)
		return r;
	if (strnlen(d->reload_file, IPC_PATH_MAX) >= IPC_PATH_MAX)
		return bad(err, errlen, "daemon: \"reload_file\" is longer than %d bytes",
			   IPC_PATH_MAX - 1);
	if (d->reload_file[0] && (d->reload_file[0] != '/' || has_ctl(d->reload_file)))
		return bad(err, errlen, "daemon: \"reload_file\" must be an absolute path without "
			   "control characters");
	if (!d->name[0] && (d->argv[0] || d->env[0] || d->reload_file[0]))
		return bad(err, errlen, "daemon: no \"name\" (no daemon wanted) but argv, env or "
			   "reload_file given");
	if (d->name[0] && !d->argv[0])
		return bad(err, errlen, "daemon: \"argv\" is empty (argv[0] is required)");
	return 0;
}

int ipc_encode_daemon(uint64_t gen, uint64_t seq, const struct ipc_daemon_spec *d,
		      struct ipc_frame *f)
{
	char err[256];
	cJSON *o, *a, *e;

	f->buf = NULL;
	f->fd = -1;
	if (ipc_daemon_spec_check(d, err, sizeof(err)) < 0)
		return -EINVAL;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", d->name);
	cJSON_AddStringToObject(o, "reload_file", d->reload_file);
	cJSON_AddBoolToObject(o, "unchanged", d->unchanged);
	a = cJSON_AddArrayToObject(o, "argv");
	e = cJSON_AddArrayToObject(o, "env");
	for (int i = 0; a && d->argv[i]; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(d->argv[i]));
	for (int i = 0; e && d->env[i]; i++)
		cJSON_AddItemToArray(e, cJSON_CreateString(d->env[i]));
	return ipc_frame_build(o, IPC_OP_DAEMON, gen, seq, -1, f);
}

static int take_strv(const cJSON *a, const char *field, char **v, int max, char *err,
		     size_t errlen)
{
	const cJSON *it;
	int n = 0;

	if (!cJSON_IsArray(a))
		return bad(err, errlen, "daemon: \"%s\" must be an array of strings", field);
	if (cJSON_GetArraySize(a) > max)
		return bad(err, errlen, "daemon: more than %d \"%s\" entries", max, field);
	cJSON_ArrayForEach(it, a) {
		if (!cJSON_IsString(it) || !it->valuestring)
			return bad(err, errlen, "daemon: \"%s\"[%d] must be a string", field, n);
		if (!(v[n++] = strdup(it->valuestring)))
			return bad(err, errlen, "daemon: out of memory");
	}
	return 0;
}

static int take_fixed(const cJSON *o, const char *field, char *dst, size_t size, char *err,
		      size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);

	if (!cJSON_IsString(v) || !v->valuestring)
		return bad(err, errlen, "daemon: \"%s\" must be a string", field);
	if (strlen(v->valuestring) >= size)
		return bad(err, errlen, "daemon: \"%s\" is longer than %zu bytes", field, size - 1);
	memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
	return 0;
}

int ipc_decode_daemon(const struct ipc_msg *m, struct ipc_daemon_spec *d, char *err,
		      size_t errlen)
{
	static const char *const keys[] = { "v", "op", "gen", "seq", "name", "reload_file",
					    "unchanged", "argv", "env", NULL };
	const cJSON *it, *u;
	int r;

	memset(d, 0, sizeof(*d));
	if (!m->json || m->op != IPC_OP_DAEMON)
		return bad(err, errlen, "expected a daemon message, got %s", ipc_op_name(m->op));
	if (m->fd >= 0)
		return bad(err, errlen, "daemon: carries an unexpected fd");
	cJSON_ArrayForEach(it, m->json) {
		bool known = false;
		for (const char *const *k = keys; *k && !known; k++)
			known = strcmp(*k, it->string) == 0;
		if (!known)
			return bad(err, errlen, "daemon: unknown member \"%.64s\"", it->string);
	}
	/* Optional; a bool when present. */
	if ((u = cJSON_GetObjectItemCaseSensitive(m->json, "unchanged"))) {
		if (!cJSON_IsBool(u))
			return bad(err, errlen, "daemon: \"unchanged\" must be true or false");
		d->unchanged = cJSON_IsTrue(u);
	}
	if ((r = take_fixed(m->json, "name", d->name, sizeof(d->name), err, errlen)) < 0 ||
	    (r = take_fixed(m->json, "reload_file", d->reload_file, sizeof(d->reload_file),
			    err, errlen)) < 0 ||
	    (r = take_strv(cJSON_GetObjectItemCaseSensitive(m->json, "argv"), "argv", d->argv,
			   IPC_DAEMON_MAX_ARGS, err, errlen)) < 0 ||
	    (r = take_strv(cJSON_GetObjectItemCaseSensitive(m->json, "env"), "env", d->env,
			   IPC_DAEMON_MAX_ENV, err, errlen)) < 0 ||
	    (r = ipc_daemon_spec_check(d, err, errlen)) < 0) {
		ipc_daemon_spec_free(d);
		return -EPROTO;
	}
	return 0;
}
