/* cri in a temporary host root: symlink resolution inside the root, the
 * CDI specs (only what exists, host paths only), the containerd plan
 * (drop-in content, imports edited in place, byte stability, broken
 * configs refused), the toolkit install and every stand-aside rule. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/cri/cri.h"
#include "workers/manifest.h"

#define R "/var/lib/nvml-mock"

static char root[] = "/tmp/mokka-cri-XXXXXX";
static struct host h;
static struct state st;
static struct state_cri cri = {
	.runtime = "containerd", .restart = "none", .config = "/etc/containerd/config.toml",
	.config_dir = "/etc/containerd/conf.d", .systemd_unit = "containerd.service",
	.nri_socket = "/var/run/nri/nri.sock",
};

static int rm_entry(const char *p, const struct stat *s, int f, struct FTW *w)
{
	(void)s, (void)f, (void)w;
	return remove(p);
}

static void setup(void)
{
	log_setup("test_cri", LOG_LVL_ERROR, LOG_FMT_TEXT);
	strcpy(root, "/tmp/mokka-cri-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	memset(&h, 0, sizeof(h));
	snprintf(h.root, sizeof(h.root), "%s", root);
	snprintf(h.mock_root, sizeof(h.mock_root), R);
	state_init(&st);
	st.cri = cri;
	st.num_devices = 2;
	for (int i = 0; i < 2; i++) {
		st.devices[i].index = i;
		st.devices[i].minor = i;
		snprintf(st.devices[i].uuid, sizeof(st.devices[i].uuid),
			 "GPU-00000000-0000-0000-0000-00000000000%d", i);
	}
}

static void teardown(void)
{
	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(cri, .init = setup, .fini = teardown);

static void put(const char *path, const char *text)
{
	char full[8192], cmd[8400];
	FILE *f;

	snprintf(full, sizeof(full), "%s%s", root, path);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", full);
	cr_assert_eq(system(cmd), 0);
	f = fopen(full, "w");
	cr_assert_not_null(f, "%s", full);
	fputs(text, f);
	fclose(f);
}

static void mkd(const char *path)
{
	char cmd[8300];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s%s'", root, path);
	cr_assert_eq(system(cmd), 0);
}

static void lnk(const char *target, const char *path)
{
	char full[8192];

	snprintf(full, sizeof(full), "%s%s", root, path);
	cr_assert_eq(symlink(target, full), 0, "%s", full);
}

/* Tests keep a few of these alive at once and never free them: the buffers
 * stay reachable from this ring (so LeakSanitizer does not count them) and
 * are freed when their slot comes round again. */
static char *slurped[32];

static char *slurp(const char *path)
{
	static unsigned next;
	char *text;
	size_t len;

	if (cri_read(&h, path, &text, &len) != 0)
		return NULL;
	free(slurped[next % 32]);
	slurped[next++ % 32] = text;
	return text;
}

static bool there(const char *path)
{
	char full[8192];
	struct stat s;

	snprintf(full, sizeof(full), "%s%s", root, path);
	return lstat(full, &s) == 0;
}

/* ---- resolve ---- */

Test(cri, resolve_inside_the_root)
{
	char out[4096];

	mkd("/run");
	mkd("/var");
	mkd("/usr/bin");
	lnk("/run", "/var/run");		/* absolute: from the root */
	lnk("usr/bin", "/bin");			/* relative */
	lnk("../../etc/x", "/usr/bin/up");	/* climbs, stays inside */
	lnk("/loop2", "/loop1");
	lnk("/loop1", "/loop2");
	cr_assert_eq(cri_resolve(&h, "/var/run/cdi/nvidia.yaml", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/run/cdi/nvidia.yaml");
	cr_assert_eq(cri_resolve(&h, "/bin/sh", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/usr/bin/sh");
	cr_assert_eq(cri_resolve(&h, "/usr/bin/up/y", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/etc/x/y");
	cr_assert_eq(cri_resolve(&h, "/a/../../b/./c", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/b/c");
	cr_assert_eq(cri_resolve(&h, "/loop1/x", out, sizeof(out)), -ELOOP);
	cr_assert_eq(cri_resolve(&h, "relative", out, sizeof(out)), -EINVAL);
	cr_assert_eq(cri_resolve_parent(&h, "/var/run", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/var/run");	/* the leaf itself is not followed */
	cr_assert_eq(cri_resolve_parent(&h, "/var/run/cdi/x.yaml", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/run/cdi/x.yaml");
}

/* ---- CDI specs ---- */

static void stage_driver(int ngpus, bool sysfs)
{
	char p[256];

	for (int i = 0; i < ngpus; i++) {
		snprintf(p, sizeof(p), R "/driver/dev/nvidia%d", i);
		put(p, "");
	}
	put(R "/driver/dev/nvidiactl", "");
	put(R "/driver/dev/nvidia-uvm", "");
	put(R "/driver/usr/lib64/libnvidia-ml.so.550", "");
	lnk("libnvidia-ml.so.550", R "/driver/usr/lib64/libnvidia-ml.so.1");
	put(R "/driver/config/config.yaml", "");
	put(R "/sys/module/nvidia/version", "550\n");
	if (sysfs) {
		mkd(R "/sys/devices/pci0000:00");
		mkd(R "/sys/bus/pci/devices");
	}
}

static char *render(bool nri)
{
	char *text;
	size_t len;

	cr_assert_eq((nri ? cri_render_nri_spec : cri_render_spec)(&h, &st, &text, &len), 0);
	if (text)
		cr_assert_eq(strlen(text), len);
	return text;
}

Test(cri, spec_names_only_what_exists)
{
	char *y;

	stage_driver(1, false);		/* GPU 1 has no node yet */
	y = render(false);
	cr_assert_not_null(y);
	cr_assert(strstr(y, "cdiVersion: \"0.5.0\"\nkind: \"nvidia.com/gpu\"\n"), "%s", y);
	cr_assert(strstr(y, "- name: \"0\"\n  containerEdits:\n    deviceNodes:\n"
			 "    - path: \"/dev/nvidia0\"\n      hostPath: \"" R "/driver/dev/nvidia0\"\n"), "%s", y);
	cr_assert(strstr(y, "- name: \"GPU-00000000-0000-0000-0000-000000000000\"\n"), "%s", y);
	cr_assert(strstr(y, "- name: \"all\"\n"), "%s", y);
	cr_assert_null(strstr(y, "nvidia1\""), "GPU 1 has no node: %s", y);
	cr_assert(strstr(y, "path: \"/dev/nvidiactl\""));
	cr_assert_null(strstr(y, "nvidia-uvm-tools"), "absent control node named");
	cr_assert(strstr(y, "hostPath: \"" R "/driver/usr/lib64/libnvidia-ml.so.1\"\n"
			 "    containerPath: \"/usr/lib64/libnvidia-ml.so.1\""));
	cr_assert_null(strstr(y, "nvidia-smi"), "nvidia-smi is not staged");
	cr_assert(strstr(y, "containerPath: \"/etc/nvml-mock\"\n    options: [\"rw\""));
	cr_assert(strstr(y, "containerPath: \"/sys/module\""));
	cr_assert_null(strstr(y, "/sys/devices"), "no PCI tree, no sysfs mounts");
	cr_assert_null(strstr(y, "hooks:"), "no nvidia-cdi-hook on the host, no hook");
	cr_assert_null(strstr(y, "imex"));
	cr_assert_null(strstr(y, root), "a host path carries the root prefix");
	free(y);
}

Test(cri, spec_follows_what_is_staged)
{
	char *y;

	stage_driver(2, true);
	put(R "/driver/usr/bin/nvidia-imex", "");
	put(R "/driver/usr/bin/nvidia-imex-ctl", "");
	put("/usr/local/nvml-mock/toolkit/nvidia-cdi-hook", "");
	mkd("/usr/bin");
	lnk("/usr/local/nvml-mock/toolkit/nvidia-cdi-hook", "/usr/bin/nvidia-cdi-hook");
	st.fabric.enabled = true;
	snprintf(st.fabric.state_dir, sizeof(st.fabric.state_dir), R "/fabric-state");
	mkd(R "/fabric-state");
	y = render(false);
	cr_assert(strstr(y, "hostPath: \"" R "/sys/devices\"\n    containerPath: \"/sys/devices\""));
	cr_assert(strstr(y, "containerPath: \"/sys/bus/pci/devices\""));
	cr_assert(strstr(y, "containerPath: \"/usr/bin/nvidia-imex\""));
	cr_assert(strstr(y, "containerPath: \"/usr/bin/nvidia-imex-ctl\""));
	cr_assert_null(strstr(y, "nvidia-imex.real"));
	cr_assert(strstr(y, "hooks:\n  - hookName: \"createContainer\"\n"
			 "    path: \"/usr/bin/nvidia-cdi-hook\""), "%s", y);
	cr_assert(strstr(y, "\"MOCK_FABRICMANAGER_STATE_DIR=" R "/fabric-state\""));
	cr_assert(strstr(y, "- name: \"1\""));
	free(y);
	/* a bad UUID names no entry; the index still does */
	snprintf(st.devices[1].uuid, sizeof(st.devices[1].uuid), "-bad/uuid");
	y = render(false);
	cr_assert_null(strstr(y, "bad/uuid"));
	cr_assert(strstr(y, "- name: \"1\""));
	free(y);
}

Test(cri, nri_spec)
{
	char *y;

	stage_driver(2, true);
	y = render(true);
	cr_assert(strstr(y, "kind: \"nvml-mock.nvidia.com/gpu\"\n"));
	cr_assert(strstr(y, "- \"NVML_MOCK_DEVICE_SOURCE=cdi\""));
	cr_assert_null(strstr(y, "GPU-"), "the NRI spec names GPUs by index only");
	cr_assert_null(strstr(y, "libnvidia-ml"), "NRI brings the library itself");
	cr_assert_null(strstr(y, "hooks"));
	/* "all": both GPUs and the control nodes that exist */
	char *all = strstr(y, "- name: \"all\"");
	cr_assert_not_null(all);
	cr_assert(strstr(all, "/dev/nvidia0\"") && strstr(all, "/dev/nvidia1\"") &&
		  strstr(all, "/dev/nvidiactl\"") && strstr(all, "/dev/nvidia-uvm\""), "%s", all);
	free(y);
}

Test(cri, nothing_to_publish_without_nodes)
{
	cr_assert_null(render(false));
	cr_assert_null(render(true));
}

Test(cri, publish_through_var_run_link)
{
	struct sim_errors errs = { 0 };
	struct manifest own;

	mkd("/run");
	mkd("/var");
	lnk("/run", "/var/run");
	manifest_init(&own);
	h.own = &own;
	cr_assert_eq(cri_publish(&h, CRI_SPEC, "x\n", 2, &errs), 0);
	cr_assert(there("/run/cdi/nvidia.yaml"));
	cr_assert(manifest_has(&own, "/run/cdi/nvidia.yaml"));
	cr_assert_eq(cri_publish(&h, CRI_SPEC, NULL, 0, &errs), 0);
	cr_assert(!there("/run/cdi/nvidia.yaml"));
	cr_assert_eq(errs.n, 0);
	h.own = NULL;
	manifest_free(&own);
}

/* ---- containerd plan ---- */

static const char fixture[] =
	"# site config: keep this comment\n"
	"version = 2\n"
	"imports = [\"/etc/containerd/other/*.toml\"]   # theirs\n"
	"\n"
	"[plugins.\"io.containerd.grpc.v1.cri\"]\n"
	"  sandbox_image = \"registry.k8s.io/pause:3.9\"\n"
	"  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
	"    runtime_type = \"io.containerd.runc.v2\"\n"
	"    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
	"      SystemdCgroup = true\n";

static struct cri_plan plan(const char *config, bool exists, const char *binary, int want)
{
	struct cri_plan p;
	char why[512] = "";
	int r = cri_containerd_plan(&cri, config, config ? strlen(config) : 0, exists, binary,
				    &p, why, sizeof(why));

	cr_assert_eq(r, want, "plan: %d (%s)", r, why);
	return p;
}

Test(cri, plan_dropin_carries_the_cri_table)
{
	struct cri_plan p = plan(fixture, true, CRI_RUNTIME_PATH, 0);
	struct toml_doc d;
	struct toml_error e;
	const char *cri_id = "io.containerd.grpc.v1.cri";

	cr_assert_str_eq(p.dropin_path, "/etc/containerd/conf.d/50-mokka.toml");
	cr_assert_eq(strncmp(p.dropin, CRI_DROPIN_MARK, strlen(CRI_DROPIN_MARK)), 0);
	cr_assert_eq(toml_parse(p.dropin, p.dropin_len, &d, &e), 0, "%s", e.msg);
#define G(...) toml_getv(d.root, (const char *const[]){ __VA_ARGS__, NULL })
	cr_assert_eq(G("version")->num, 2);
	cr_assert_eq(G("plugins", cri_id, "enable_cdi")->boolean, true);
	cr_assert_eq(G("plugins", cri_id, "cdi_spec_dirs")->n, 2);
	cr_assert_str_eq(G("plugins", cri_id, "sandbox_image")->str, "registry.k8s.io/pause:3.9");
	cr_assert_str_eq(G("plugins", cri_id, "containerd", "default_runtime_name")->str, "nvidia");
	cr_assert_str_eq(G("plugins", cri_id, "containerd", "runtimes", "nvidia", "runtime_type")->str,
			 "io.containerd.runc.v2");
	cr_assert_str_eq(G("plugins", cri_id, "containerd", "runtimes", "nvidia", "options",
			   "BinaryName")->str, CRI_RUNTIME_PATH);
	cr_assert_eq(G("plugins", cri_id, "containerd", "runtimes", "nvidia", "options",
		       "SystemdCgroup")->boolean, true);
	cr_assert_not_null(G("plugins", cri_id, "containerd", "runtimes", "runc"));
	cr_assert_null(G("plugins", "io.containerd.nri.v1.nri"), "NRI off: no NRI table");
	toml_doc_free(&d);
	cri_plan_free(&p);
}

Test(cri, plan_without_toolkit_runs_runc)
{
	struct cri_plan p = plan(fixture, true, NULL, 0);

	cr_assert_null(strstr(p.dropin, "BinaryName"), "%s", p.dropin);
	cr_assert(strstr(p.dropin, "default_runtime_name = \"nvidia\""));
	cri_plan_free(&p);
}

Test(cri, plan_imports_edited_in_place)
{
	struct cri_plan p = plan(fixture, true, CRI_RUNTIME_PATH, 0);
	const char *ins = ", \"/etc/containerd/conf.d/*.toml\"";
	const char *at = strstr(fixture, "\"]   # theirs") + 1;
	size_t pre = (size_t)(at - fixture);

	cr_assert_not_null(p.config);
	cr_assert_eq(p.config_len, strlen(fixture) + strlen(ins));
	cr_assert_eq(memcmp(p.config, fixture, pre), 0);
	cr_assert_eq(memcmp(p.config + pre, ins, strlen(ins)), 0);
	cr_assert_str_eq(p.config + pre + strlen(ins), fixture + pre);
	cri_plan_free(&p);
}

Test(cri, plan_imports_added_before_the_first_table)
{
	const char *cfg = "# c\nversion = 2\n\n[grpc]\n  address = \"/x\"\n";
	struct cri_plan p = plan(cfg, true, NULL, 0);

	cr_assert_str_eq(p.config, "# c\nversion = 2\n\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"
			 "\n[grpc]\n  address = \"/x\"\n");
	cri_plan_free(&p);
	p = plan("version = 2", true, NULL, 0);	/* no newline, no table */
	cr_assert_str_eq(p.config, "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n");
	cri_plan_free(&p);
	p = plan("imports = [ ]\n", true, NULL, 0);
	cr_assert_str_eq(p.config, "imports = [\"/etc/containerd/conf.d/*.toml\" ]\n");
	cri_plan_free(&p);
}

Test(cri, plan_leaves_a_covering_import)
{
	static const char *const covering[] = {
		"imports = [\"/etc/containerd/conf.d/*.toml\"]\n",
		"imports = [\"conf.d/*.toml\"]\n",		/* relative to config.toml's dir */
		"imports = [\"/etc/containerd/conf.d/50-mokka.toml\"]\n",
		"imports = [\"/etc/containerd/*/*.toml\"]\n",
	};

	for (size_t i = 0; i < sizeof(covering) / sizeof(covering[0]); i++) {
		struct cri_plan p = plan(covering[i], true, NULL, 0);
		cr_assert_null(p.config, "%s edited", covering[i]);
		cri_plan_free(&p);
	}
	struct cri_plan p = plan("imports = [\"/etc/containerd/*.toml\"]\n", true, NULL, 0);
	cr_assert_not_null(p.config, "'*' must not cross '/'");
	cri_plan_free(&p);
}

Test(cri, plan_is_byte_stable)
{
	struct cri_plan a = plan(fixture, true, CRI_RUNTIME_PATH, 0);
	struct cri_plan b = plan(a.config, true, CRI_RUNTIME_PATH, 0);

	cr_assert_null(b.config, "the second pass must not edit again");
	cr_assert_eq(a.dropin_len, b.dropin_len);
	cr_assert_eq(memcmp(a.dropin, b.dropin, a.dropin_len), 0);
	cri_plan_free(&a);
	cri_plan_free(&b);
}

Test(cri, plan_creates_a_missing_config)
{
	struct cri_plan p = plan(NULL, false, NULL, 0);

	cr_assert(strstr(p.config, "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"));
	cri_plan_free(&p);
}

Test(cri, plan_nri_table)
{
	struct cri_plan p;

	cri.nri = true;
	p = plan("version = 2\n[plugins.\"io.containerd.nri.v1.nri\"]\n  disable = true\n"
		 "  plugin_path = \"/site/nri\"\n", true, NULL, 0);
	cri.nri = false;
	cr_assert(strstr(p.dropin, "[plugins.\"io.containerd.nri.v1.nri\"]\n    disable = false\n"
			 "    plugin_path = \"/site/nri\"\n    disable_connections = false\n"
			 "    socket_path = \"/var/run/nri/nri.sock\"\n"
			 "    plugin_config_path = \"/etc/nri/conf.d\"\n"
			 "    plugin_registration_timeout = \"5s\"\n"
			 "    plugin_request_timeout = \"2s\"\n"), "%s", p.dropin);
	cri_plan_free(&p);
}

Test(cri, plan_version_3_layout)
{
	struct cri_plan p = plan("version = 3\n", true, NULL, 0);

	cr_assert(strstr(p.dropin, "version = 3\n"));
	cr_assert(strstr(p.dropin, "[plugins.\"io.containerd.cri.v1.runtime\"]\n"), "%s", p.dropin);
	cr_assert(strstr(p.dropin, "default_runtime_name = \"nvidia\""));
	cri_plan_free(&p);
}

Test(cri, plan_refuses_broken_configs)
{
	static const struct {
		const char *text, *why;
	} broken[] = {
		{ "version = 2\n[plugins\n", "/etc/containerd/config.toml:2:9:" },
		{ "version = \"2\"\n", "version: want an integer" },
		{ "imports = \"/x/*.toml\"\n", "imports: want an array" },
		{ "imports = [1]\n", "imports: want an array" },
		{ "a = 1\na = 2\n", "duplicate key" },
	};

	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		struct cri_plan p;
		char why[512] = "";
		int r = cri_containerd_plan(&cri, broken[i].text, strlen(broken[i].text), true, NULL,
					    &p, why, sizeof(why));
		cr_assert_eq(r, -EINVAL, "accepted: %s", broken[i].text);
		cr_assert(strstr(why, broken[i].why), "'%s' lacks '%s'", why, broken[i].why);
		cr_assert_null(p.dropin);
	}
}

/* ---- toolkit and the stand-aside rules ---- */

static void fake_exe(const char *path)
{
	char full[8192];

	put(path, "#!/bin/sh\nexit 0\n");
	snprintf(full, sizeof(full), "%s%s", root, path);
	cr_assert_eq(chmod(full, 0755), 0);
}

Test(cri, host_has_follows_links_inside_the_root)
{
	char found[512];

	cr_assert(!cri_host_has(&h, "containerd", found, sizeof(found)));
	fake_exe("/opt/k/bin/containerd");
	mkd("/usr/bin");
	lnk("/opt/k/bin/containerd", "/usr/bin/containerd");	/* absolute: inside the root */
	cr_assert(cri_host_has(&h, "containerd", found, sizeof(found)));
	cr_assert_str_eq(found, "/usr/bin/containerd");
	put("/usr/sbin/notexec", "");
	cr_assert(!cri_host_has(&h, "notexec", found, sizeof(found)));
}

Test(cri, foreign_toolkit)
{
	char who[256];

	cr_assert_eq(cri_foreign_toolkit(&h, who, sizeof(who)), 0);
	mkd("/usr/bin");
	lnk(CRI_TOOLKIT_DIR "/nvidia-ctk", "/usr/bin/nvidia-ctk");	/* ours */
	cr_assert_eq(cri_foreign_toolkit(&h, who, sizeof(who)), 0);
	lnk("/usr/local/nvidia/toolkit/nvidia-cdi-hook", "/usr/bin/nvidia-cdi-hook");	/* theirs */
	cr_assert_eq(cri_foreign_toolkit(&h, who, sizeof(who)), 1);
	cr_assert_str_eq(who, "/usr/bin/nvidia-cdi-hook");
}

Test(cri, foreign_runtime_config)
{
	char who[256];

	put(CRI_RUNTIME_CONFIG_LINK, "[nvidia-container-runtime]\n");
	cr_assert_eq(cri_foreign_toolkit(&h, who, sizeof(who)), 1);
	cr_assert_str_eq(who, CRI_RUNTIME_CONFIG_LINK);
}

Test(cri, toolkit_install)
{
	char src[8300], full[8192], link[256];
	struct sim_errors errs = { 0 };
	bool installed;
	ssize_t n;

	snprintf(src, sizeof(src), "%s/toolkit-src", root);
	setenv("MOKKA_CONTAINER_TOOLKIT_DIR", src, 1);
	cr_assert_eq(cri_toolkit_install(&h, &installed, &errs), 0);
	cr_assert(!installed, "nothing to install from an empty source");
	fake_exe("/toolkit-src/nvidia-container-runtime");
	fake_exe("/toolkit-src/nvidia-cdi-hook");
	mkd("/usr/bin");
	put("/usr/bin/nvidia-ctk", "someone else's\n");	/* never replaced */
	cr_assert_eq(cri_toolkit_install(&h, &installed, &errs), 0, "%s", errs.e[0].message);
	unsetenv("MOKKA_CONTAINER_TOOLKIT_DIR");
	cr_assert(installed);
	cr_assert(there(CRI_TOOLKIT_DIR "/nvidia-container-runtime"));
	cr_assert(there(CRI_TOOLKIT_DIR "/nvidia-cdi-hook"));
	cr_assert(!there(CRI_TOOLKIT_DIR "/nvidia-ctk"));
	cr_assert(strstr(slurp(CRI_TOOLKIT_DIR "/config.toml"), "mode = \"cdi\""));
	snprintf(full, sizeof(full), "%s/usr/bin/nvidia-container-runtime", root);
	n = readlink(full, link, sizeof(link) - 1);
	cr_assert_gt(n, 0);
	link[n] = '\0';
	cr_assert_str_eq(link, CRI_TOOLKIT_DIR "/nvidia-container-runtime");
	cr_assert(strstr(slurp("/usr/bin/nvidia-ctk"), "someone else's"));
	snprintf(full, sizeof(full), "%s" CRI_RUNTIME_CONFIG_LINK, root);
	n = readlink(full, link, sizeof(link) - 1);
	cr_assert_gt(n, 0);
}

static void run_setup(struct cri_setup_result *res, struct manifest *own, struct manifest *prev)
{
	struct sim_ctx ctx = { 0 };

	ctx.host = h;
	ctx.host.own = own;
	ctx.host.prev = prev;
	cri_setup(&ctx, &st, res);
}

Test(cri, setup_installs_and_is_stable)
{
	struct cri_setup_result res;
	struct manifest own;
	char *before;

	fake_exe("/usr/bin/containerd");
	put("/etc/containerd/config.toml", fixture);
	manifest_init(&own);
	run_setup(&res, &own, NULL);
	cr_assert(res.ready, "%s", res.reason);
	cr_assert(res.installed);
	cr_assert(res.changed);
	cr_assert(there("/etc/containerd/conf.d/50-mokka.toml"));
	cr_assert(manifest_has(&own, "/etc/containerd/conf.d/50-mokka.toml"));
	cr_assert(!manifest_has(&own, "/etc/containerd/config.toml"), "theirs: never removed");
	before = slurp("/etc/containerd/conf.d/50-mokka.toml");
	run_setup(&res, &own, NULL);
	cr_assert(res.installed);
	cr_assert(!res.changed, "a second pass changes nothing");
	cr_assert_str_eq(slurp("/etc/containerd/conf.d/50-mokka.toml"), before);
	manifest_free(&own);
}

static void stands_aside(const char *config_before)
{
	struct cri_setup_result res;
	struct manifest own, prev;

	manifest_init(&own);
	manifest_init(&prev);
	manifest_add(&prev, "/etc/containerd/conf.d/50-mokka.toml", 'f');
	run_setup(&res, &own, &prev);
	cr_assert(res.ready, "standing aside is ready: %s", res.reason);
	cr_assert(!res.installed);
	cr_assert(!res.changed);
	cr_assert(!there("/etc/containerd/conf.d"), "something was installed");
	cr_assert(!there(CRI_TOOLKIT_DIR));
	cr_assert(manifest_has(&own, "/etc/containerd/conf.d/50-mokka.toml"),
		  "what an earlier pass owned stays owned");
	if (config_before)
		cr_assert_str_eq(slurp("/etc/containerd/config.toml"), config_before);
	manifest_free(&own);
	manifest_free(&prev);
}

Test(cri, stand_aside_without_containerd)
{
	put("/etc/containerd/config.toml", fixture);
	stands_aside(fixture);
}

Test(cri, stand_aside_for_a_foreign_toolkit)
{
	fake_exe("/usr/bin/containerd");
	put("/etc/containerd/config.toml", fixture);
	fake_exe("/usr/bin/nvidia-container-runtime");
	stands_aside(fixture);
}

Test(cri, stand_aside_for_a_broken_config)
{
	const char *broken = "version = 2\n[plugins.\"x\"\n";

	fake_exe("/usr/bin/containerd");
	put("/etc/containerd/config.toml", broken);
	stands_aside(broken);
}

Test(cri, stand_aside_when_off)
{
	fake_exe("/usr/bin/containerd");
	snprintf(st.cri.runtime, sizeof(st.cri.runtime), "none");
	stands_aside(NULL);
}

/* ---- the flags, compiled into state.cri ---- */

#include "profile/compile.h"

/* The flags parsed by mokka-supervisor and compiled: test_options.c
 * (cri, flags_parse_and_compile). */

Test(cri, flags_refused)
{
	static const struct {
		struct compile_opts o;
		const char *why;
	} bad[] = {
		{ { .cri_runtime = "docker" }, "--container-runtime: 'docker' want containerd or none" },
		{ { .cri_restart = "always" }, "want systemd or none" },
		{ { .cri_config = "config.toml" }, "--container-runtime-config: 'config.toml' must be an absolute path" },
		{ { .cri_config_dir = "/etc/containerd/../x" }, "must not contain '..'" },
		{ { .cri_config_dir = "/etc/other" }, "must lie under the config file's directory" },
		{ { .cri_config_dir = "/etc/containerdX" }, "must lie under the config file's directory" },
		{ { .cri_unit = "bad unit" }, "is not a systemd unit name" },
		{ { .cri_config = "/etc/containerd/*.toml" }, "glob characters" },
	};
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(compile_cri_flags(&bad[i].o, err, sizeof(err)), -EINVAL, "%s", bad[i].why);
		cr_assert(strstr(err, bad[i].why), "'%s' lacks '%s'", err, bad[i].why);
	}
	struct compile_opts ok = { .cri_config = "/c.toml", .cri_config_dir = "/anywhere" };
	cr_assert_eq(compile_cri_flags(&ok, err, sizeof(err)), 0, "config in /: all is under it");
	struct compile_opts same = { .cri_config_dir = "/etc/containerd" };
	cr_assert_eq(compile_cri_flags(&same, err, sizeof(err)), 0, "the config's own dir: %s", err);
}
