/* The container runtime flags (SURFACES.md §2, §7.5) compiled into
 * state.cri: defaults for what is unset, and the checks the flag parser
 * shares so a bad value is refused at startup, not at the first pass. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "profile/compile.h"
#include "profile/compile_internal.h"

#define DEF_RUNTIME "containerd"
#define DEF_RESTART "systemd"
#define DEF_CONFIG "/etc/containerd/config.toml"
#define DEF_CONFIG_DIR "/etc/containerd/conf.d"
#define DEF_UNIT "containerd.service"
#define DEF_NRI_SOCKET "/var/run/nri/nri.sock"

static const char *const runtimes[] = { "containerd", "none", NULL };
static const char *const restarts[] = { "systemd", "none", NULL };

static const char *one_of(const char *v, const char *const *set, const char *why)
{
	for (int i = 0; set[i]; i++)
		if (strcmp(v, set[i]) == 0)
			return NULL;
	return why;
}

/* An absolute host path without "..", written into configs the host reads. */
static const char *host_path_ok(const char *v, size_t max)
{
	if (v[0] != '/')
		return "must be an absolute path";
	for (const char *p = v; (p = strstr(p, "..")); p += 2)
		if ((p == v || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return "must not contain '..'";
	if (strlen(v) >= max)
		return "is too long";
	if (strpbrk(v, "\"\\\n*?["))
		return "must not contain quotes, backslashes, newlines or glob characters";
	return NULL;
}

/* systemd unit names: letters, digits and ":-_.\@", at most 255 bytes. */
static const char *unit_ok(const char *v)
{
	if (!*v || strlen(v) > 255 ||
	    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@") !=
	    strlen(v) || v[0] == '-')
		return "is not a systemd unit name";
	return NULL;
}

static const char *runtime_ok(const char *v)
{
	return one_of(v, runtimes, "want containerd or none");
}

static const char *restart_ok(const char *v)
{
	return one_of(v, restarts, "want systemd or none");
}

static const char *path_ok(const char *v)
{
	return host_path_ok(v, sizeof(((struct state_cri *)0)->config));
}

const char *compile_cri_check(const char *option, const char *v)
{
	static const struct {
		const char *option;
		const char *(*check)(const char *v);
	} checks[] = {
		{ "container-runtime", runtime_ok },
		{ "container-runtime-restart", restart_ok },
		{ "container-runtime-config", path_ok },
		{ "container-runtime-config-dir", path_ok },
		{ "container-runtime-systemd-unit", unit_ok },
		{ "nri-socket", path_ok },
	};

	if (!v)
		return "is missing";
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (strcmp(option, checks[i].option) == 0)
			return checks[i].check(v);
	return "is not a container runtime option";
}

const char *compile_cri_check_dir(const char *config, const char *config_dir)
{
	const char *slash = strrchr(config, '/');
	size_t n = slash ? (size_t)(slash - config) : 0;

	/* "/etc/containerd/config.toml" -> "/etc/containerd": the drop-in
	 * directory is that or below it, since the DaemonSet mounts exactly
	 * that directory at its own path. */
	if (n == 0)
		return NULL;	/* config in "/": everything is under it */
	if (strncmp(config_dir, config, n) != 0 || (config_dir[n] != '/' && config_dir[n] != '\0'))
		return "must lie under the config file's directory";
	return NULL;
}

/* Fill cri from o (defaults for what is unset); NULL, or why not with the
 * offending option and value in *option and *value. */
static const char *build(const struct compile_opts *o, struct state_cri *cri,
			 const char **option, const char **value)
{
	const struct {
		const char *option, *value;
		char *dst;
		size_t size;
	} fields[] = {
		{ "container-runtime", o->cri_runtime ? o->cri_runtime : DEF_RUNTIME,
		  cri->runtime, sizeof(cri->runtime) },
		{ "container-runtime-restart", o->cri_restart ? o->cri_restart : DEF_RESTART,
		  cri->restart, sizeof(cri->restart) },
		{ "container-runtime-config", o->cri_config ? o->cri_config : DEF_CONFIG,
		  cri->config, sizeof(cri->config) },
		{ "container-runtime-config-dir",
		  o->cri_config_dir ? o->cri_config_dir : DEF_CONFIG_DIR,
		  cri->config_dir, sizeof(cri->config_dir) },
		{ "container-runtime-systemd-unit", o->cri_unit ? o->cri_unit : DEF_UNIT,
		  cri->systemd_unit, sizeof(cri->systemd_unit) },
		{ "nri-socket", o->cri_nri_socket ? o->cri_nri_socket : DEF_NRI_SOCKET,
		  cri->nri_socket, sizeof(cri->nri_socket) },
	};
	const char *why;

	memset(cri, 0, sizeof(*cri));
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		*option = fields[i].option;
		*value = fields[i].value;
		if ((why = compile_cri_check(fields[i].option, fields[i].value)))
			return why;
		if (strlen(fields[i].value) >= fields[i].size)
			return "is too long";
		strcpy(fields[i].dst, fields[i].value);
	}
	*option = "container-runtime-config-dir";
	*value = cri->config_dir;
	if ((why = compile_cri_check_dir(cri->config, cri->config_dir)))
		return why;
	cri->nri = o->cri_nri;
	/* mokka-nri's staging gate: the lock (a host path, "" = none) and
	 * where the supervisor answers /stagedz */
	*option = "staging-lock-path";
	*value = o->cri_nri_lock ? o->cri_nri_lock : "";
	if (**value && (why = host_path_ok(*value, sizeof(cri->nri_lock))))
		return why;
	strcpy(cri->nri_lock, *value);
	*option = "health-addr";
	*value = o->cri_nri_stagedz ? o->cri_nri_stagedz : "";
	if (strlen(*value) >= sizeof(cri->nri_stagedz) || strpbrk(*value, " \"\\/\n"))
		return "is not a host:port";
	strcpy(cri->nri_stagedz, *value);
	return NULL;
}

int compile_cri(struct cctx *c, const struct compile_opts *o, struct state_cri *cri)
{
	const char *option, *value, *why = build(o, cri, &option, &value);

	return why ? cc_fail(c, NULL, option, "'%.64s' %s", value, why) : 0;
}

int compile_cri_flags(const struct compile_opts *o, char *err, size_t errlen)
{
	struct state_cri cri;
	const char *option, *value, *why = build(o, &cri, &option, &value);

	if (!why)
		return 0;
	snprintf(err, errlen, "--%s: '%.64s' %s", option, value, why);
	return -EINVAL;
}
