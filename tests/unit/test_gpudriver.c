/* gpudriver Stage/Apply into a temporary host root, checked node by node
 * and file by file against the real driver's formats. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>

#include "workers/gpudriver/gpudriver.h"
#include "profile/compile.h"
#include "workers/manifest.h"

#define R "/var/lib/nvml-mock"
#define DRV R "/driver"
#define NGPUS 8

static char tmp[] = "/tmp/mokka-gpudriver-XXXXXX";
static char libdir[4200];
static struct manifest own;
static struct sim_ctx ctx;
static struct sim_errors errs;
static struct state st;

static const char *const bdfs[NGPUS] = {
	"0000:1a:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
	"0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0",
};

static const char profile_yaml[] =
	"# test profile\n"
	"version: \"1.0\"\n"
	"system:   # software\n"
	"    driver_version: \"535.261.03\"\n"
	"    cuda_version: \"12.2\"\n"
	"device_defaults:\n"
	"    name: \"NVIDIA H100 80GB HBM3\"\n"
	"devices:\n"
	"  - index: 0\n";

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "create %s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

static void profile_json(void)
{
	char *j = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&j, &n);

	fputs("{\"version\":\"1.0\",\"system\":{\"driver_version\":\"535.261.03\"},"
	      "\"device_defaults\":{\"vbios_version\":\"96.00.74.00.0D\","
	      "\"gsp_firmware\":{\"mode\":\"enabled\",\"version\":\"535.261.03\"},"
	      "\"power\":{\"default_limit_mw\":700000,\"max_limit_mw\":700000}},"
	      "\"devices\":[", f);
	for (int i = 0; i < NGPUS; i++)
		fprintf(f, "%s{\"index\":%d%s}", i ? "," : "", i,
			i == 3 ? ",\"vbios_version\":\"96.00.99.00.01\"" : "");
	fputs("]}", f);
	fclose(f);
	st.profile_json = j;
}

static void setup(void)
{
	cr_assert_not_null(mkdtemp(tmp));
	state_init(&st);
	snprintf(st.mock_root, sizeof(st.mock_root), R);
	snprintf(st.driver_version, sizeof(st.driver_version), "535.261.03");
	snprintf(st.cuda_version, sizeof(st.cuda_version), "12.2");
	st.cores_per_numa = 4;
	st.num_roots = 2;
	snprintf(st.roots[0].id, sizeof(st.roots[0].id), "pci0000:00");
	snprintf(st.roots[1].id, sizeof(st.roots[1].id), "pci0000:80");
	st.roots[1].numa_node = 1;
	for (int i = 0; i < NGPUS; i++) {
		struct state_device *d = &st.devices[st.num_devices++];
		d->index = d->minor = i;
		snprintf(d->bus_id, sizeof(d->bus_id), "%s", bdfs[i]);
		snprintf(d->uuid, sizeof(d->uuid), "GPU-00000000-0000-0000-0000-00000000000%d", i);
		snprintf(d->name, sizeof(d->name), "NVIDIA H100 80GB HBM3");
		snprintf(d->architecture, sizeof(d->architecture), "hopper");
		d->vendor_id = 0x10de;
		d->device_id = 0x2330;
		d->subsys_vendor_id = 0x10de;
		d->subsys_device_id = 0x16c1;
		d->root = i < 4 ? 0 : 1;
		d->numa_node = d->root;
		d->pcie = (struct state_pcie_link){ 5, 16, 5, 16 };
		d->memory_total_bytes = 80ULL << 30;
		d->bar1_total_bytes = 128ULL << 30;
	}
	st.profile_doc = strdup(profile_yaml);
	st.profile_len = strlen(profile_yaml);
	profile_json();
	/* The PCI plan, as compile_profile leaves it in every state. */
	cr_assert_eq(compile_pci(&st, NULL, NULL), 0);
	/* A stand-in library where the worker finds our build outputs. */
	snprintf(libdir, sizeof(libdir), "%s/libs", tmp);
	mkdir(libdir, 0755);
	char lib[4300];
	snprintf(lib, sizeof(lib), "%s/libnvidia-ml.so", libdir);
	put_file(lib, "\x7f" "ELF not really\n");
	unsetenv("MOKKA_NVIDIA_UVM_MAJOR");
	unsetenv("MOKKA_NVIDIA_CAPS_MAJOR");
	unsetenv("IMEX_CAPS_MAJOR");
	unsetenv("MOKKA_NVIDIA_CAP1_MODE");
	unsetenv("MOKKA_NVIDIA_CAP512_MODE");
	manifest_init(&own);
	memset(&ctx, 0, sizeof(ctx));
	snprintf(ctx.host.root, sizeof(ctx.host.root), "%s", tmp);
	snprintf(ctx.host.mock_root, sizeof(ctx.host.mock_root), R);
	ctx.host.own = &own;
	ctx.name = "gpudriver";
	ctx.libdir = libdir;
	memset(&errs, 0, sizeof(errs));
}

static int rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

static void teardown(void)
{
	manifest_free(&own);
	state_free(&st);
	nftw(tmp, rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* Device nodes need CAP_MKNOD: as any other user, the test is skipped
 * (a skipped test does not reach .fini, so clean up here). */
static void teardown(void);
static void need_root(void)
{
	if (geteuid() != 0) {
		teardown();
		cr_skip_test("needs root (mknod)");
	}
}

static void stage_ok(void)
{
	need_root();
	int r = gpudriver_simulator.stage(&ctx, &st, &errs);

	cr_assert_eq(r, 0, "stage: %d: %s: %s", r, errs.n ? errs.e[0].surface : "",
		     errs.n ? errs.e[0].message : "");
	cr_assert_eq(errs.n, 0);
}

static const char *full(const char *rel)
{
	static char path[4][4200];
	static int k;

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s%s", tmp, rel);
	return path[k];
}

static char *slurp(const char *rel)
{
	static char buf[65536];
	FILE *f = fopen(full(rel), "rb");
	size_t n;

	cr_assert_not_null(f, "open %s: %s", rel, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static void expect_file(const char *rel, const char *want)
{
	cr_expect_str_eq(slurp(rel), want, "%s", rel);
}

static bool exists(const char *rel)
{
	struct stat sb;

	return lstat(full(rel), &sb) == 0;
}

static void expect_chr(const char *rel, unsigned major, unsigned minor, mode_t mode)
{
	struct stat sb;

	cr_assert_eq(lstat(full(rel), &sb), 0, "%s: %s", rel, strerror(errno));
	cr_expect(S_ISCHR(sb.st_mode), "%s: not a character device", rel);
	cr_expect_eq(major(sb.st_rdev), major, "%s: major %u, want %u", rel,
		     major(sb.st_rdev), major);
	cr_expect_eq(minor(sb.st_rdev), minor, "%s: minor %u, want %u", rel,
		     minor(sb.st_rdev), minor);
	cr_expect_eq(sb.st_mode & 07777, mode, "%s: mode %04o, want %04o", rel,
		     (unsigned)(sb.st_mode & 07777), (unsigned)mode);
}

static void expect_link(const char *rel, const char *want)
{
	char got[4096];
	ssize_t n = readlink(full(rel), got, sizeof(got) - 1);

	cr_assert_geq(n, 0, "readlink %s: %s", rel, strerror(errno));
	got[n] = '\0';
	cr_expect_str_eq(got, want, "%s", rel);
}

TestSuite(gpudriver, .init = setup, .fini = teardown);

Test(gpudriver, device_nodes)
{
	char rel[256];

	stage_ok();
	for (int i = 0; i < NGPUS; i++) {
		snprintf(rel, sizeof(rel), DRV "/dev/nvidia%d", i);
		expect_chr(rel, 195, (unsigned)i, 0666);
	}
	expect_chr(DRV "/dev/nvidiactl", 195, 255, 0666);
	expect_chr(DRV "/dev/nvidia-modeset", 195, 254, 0666);
	expect_chr(DRV "/dev/nvidia-uvm", 510, 0, 0666);
	expect_chr(DRV "/dev/nvidia-uvm-tools", 510, 1, 0666);
	expect_chr(DRV "/dev/nvidia-caps/nvidia-cap1", 236, 1, 0400);
	expect_chr(DRV "/dev/nvidia-caps/nvidia-cap2", 236, 2, 0444);
	expect_chr(DRV "/dev/nvidia-caps/nvidia-cap512", 236, 512, 0400);
}

Test(gpudriver, configurable_majors)
{
	setenv("MOKKA_NVIDIA_UVM_MAJOR", "505", 1);
	setenv("IMEX_CAPS_MAJOR", "237", 1);
	stage_ok();
	expect_chr(DRV "/dev/nvidia-uvm", 505, 0, 0666);
	expect_chr(DRV "/dev/nvidia-caps/nvidia-cap2", 237, 2, 0444);
	expect_chr(DRV "/dev/nvidia-caps/nvidia-cap512", 237, 512, 0400);
	cr_expect_not_null(strstr(slurp(DRV "/proc/devices"), "\n505 nvidia-uvm\n"));
	cr_expect_not_null(strstr(slurp(DRV "/proc/devices"), "\n237 nvidia-caps\n"));
}

Test(gpudriver, capability_mode_override)
{
	setenv("MOKKA_NVIDIA_CAP512_MODE", "0666", 1);
	stage_ok();
	expect_chr(DRV "/dev/nvidia-caps/nvidia-cap512", 236, 512, 0666);
	expect_file(DRV "/proc/driver/nvidia/capabilities/fabric-imex-mgmt",
		    "DeviceFileMinor: 512\nDeviceFileMode: 438\nDeviceFileModify: 1\n");
	expect_chr(DRV "/dev/nvidia-caps/nvidia-cap1", 236, 1, 0400);
	setenv("MOKKA_NVIDIA_CAP1_MODE", "9", 1);
	memset(&errs, 0, sizeof(errs));
	cr_expect_lt(gpudriver_simulator.stage(&ctx, &st, &errs), 0);
}

Test(gpudriver, bad_major_is_an_error)
{
	need_root();
	setenv("MOKKA_NVIDIA_UVM_MAJOR", "195", 1);
	cr_expect_lt(gpudriver_simulator.stage(&ctx, &st, &errs), 0);
	cr_assert_geq(errs.n, 1);
	cr_expect_not_null(strstr(errs.e[0].message, "MOKKA_NVIDIA_UVM_MAJOR"), "%s",
			   errs.e[0].message);
}

Test(gpudriver, version_and_params)
{
	stage_ok();
	expect_file(DRV "/proc/driver/nvidia/version",
		    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  "
		    "Thu Feb 20 23:41:34 UTC 2026\n"
		    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
	const char *p = slurp(DRV "/proc/driver/nvidia/params");
	cr_expect_eq(strncmp(p, "ResmanDebugLevel: 4294967295\nRmLogonRC: 1\n", 42), 0, "%s", p);
	cr_expect_not_null(strstr(p, "\nDeviceFileMode: 438\n"));
	cr_expect_not_null(strstr(p, "\nEnableMSI: 1\n"));
	cr_expect_not_null(strstr(p, "\nModifyDeviceFiles: 1\n"));
	cr_expect_not_null(strstr(p, "\nRegistryDwords: \"\"\n"));
	cr_expect_null(strstr(p, "NVreg_"), "real key names carry no NVreg_ prefix");
	static const char last[] = "\nExcludedGpus: \"\"\n";
	size_t n = strlen(p);
	cr_expect(n > strlen(last) && strcmp(p + n - strlen(last), last) == 0, "%s", p);
	expect_file(DRV "/proc/driver/nvidia/registry", "Binary: \"\"\n");
	expect_file(DRV "/proc/driver/nvidia/capabilities/mig/config",
		    "DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 1\n");
	expect_file(DRV "/proc/driver/nvidia/capabilities/mig/monitor",
		    "DeviceFileMinor: 2\nDeviceFileMode: 292\nDeviceFileModify: 1\n");
	expect_file(DRV "/proc/driver/nvidia/capabilities/fabric-imex-mgmt",
		    "DeviceFileMinor: 512\nDeviceFileMode: 256\nDeviceFileModify: 1\n");
}

/* The IRQ the state's PCI plan gives a function, the one pcibus renders,
 * so lspci -v and the driver agree. */
static int pcibus_irq(const char *bdf)
{
	const struct state_pci_fn *f = state_pci_find(&st.pci, bdf);

	cr_assert_not_null(f, "the plan places %s", bdf);
	cr_assert_gt(f->irq, 0, "pcibus places %s", bdf);
	return f->irq;
}

Test(gpudriver, gpu_information)
{
	char want[1024];

	stage_ok();
	snprintf(want, sizeof(want),
		    "Model: \t\t NVIDIA H100 80GB HBM3\n"
		    "IRQ:   \t\t %d\n"
		    "GPU UUID: \t GPU-00000000-0000-0000-0000-000000000000\n"
		    "Video BIOS: \t 96.00.74.00.0D\n"
		    "Bus Type: \t PCIe\n"
		    "DMA Size: \t 52 bits\n"
		    "DMA Mask: \t 0xfffffffffffff\n"
		    "Bus Location: \t 0000:1a:00.0\n"
		    "Device Minor: \t 0\n"
		    "GPU Firmware: \t 535.261.03\n"
		    "GPU Excluded:\t No\n", pcibus_irq("0000:1a:00.0"));
	expect_file(DRV "/proc/driver/nvidia/gpus/0000:1a:00.0/information", want);
	/* A devices[] entry overrides device_defaults. */
	cr_expect_not_null(strstr(slurp(DRV "/proc/driver/nvidia/gpus/0000:5d:00.0/information"),
				  "Video BIOS: \t 96.00.99.00.01\nBus Type"));
	expect_file(DRV "/proc/driver/nvidia/gpus/0000:db:00.0/registry", "Binary: \"\"\n");
	cr_expect_not_null(strstr(slurp(DRV "/proc/driver/nvidia/gpus/0000:db:00.0/power"),
				  " Default:                   700000 milliwatts\n"));
	for (int i = 0; i < NGPUS; i++) {
		char rel[256];
		snprintf(rel, sizeof(rel), DRV "/proc/driver/nvidia/gpus/%s/information", bdfs[i]);
		cr_expect(exists(rel), "%s", rel);
	}
}

Test(gpudriver, proc_devices)
{
	stage_ok();
	const char *d = slurp(DRV "/proc/devices");
	const char *ch = strstr(d, "Character devices:\n"), *blk = strstr(d, "\n\nBlock devices:\n");
	const char *nv = strstr(d, "\n195 nvidia\n195 nvidiactl\n");
	const char *caps = strstr(d, "\n236 nvidia-caps\n"), *uvm = strstr(d, "\n510 nvidia-uvm\n");

	cr_assert(ch == d && blk, "%s", d);
	cr_expect(nv && nv < caps && caps < uvm && uvm < blk, "majors in order, in the char "
		  "section:\n%s", d);
	/* The majors are sorted as the kernel prints them. */
	unsigned last = 0, m;
	for (const char *p = strchr(d, '\n'); p && p < blk; p = strchr(p + 1, '\n'))
		if (sscanf(p + 1, "%u", &m) == 1) {
			cr_expect_geq(m, last, "unsorted at %.20s", p + 1);
			last = m;
		}
}

Test(gpudriver, modules)
{
	stage_ok();
	expect_file(DRV "/proc/modules",
		    "nvidia_uvm 1482752 0 - Live 0x0000000000000000 (POE)\n"
		    "nvidia_drm 77824 0 - Live 0x0000000000000000 (POE)\n"
		    "nvidia_modeset 1290240 1 nvidia_drm, Live 0x0000000000000000 (POE)\n"
		    "nvidia 56807424 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)\n");
	expect_file(R "/sys/module/nvidia/version", "535.261.03\n");
	expect_file(R "/sys/module/nvidia/initstate", "live\n");
	expect_file(R "/sys/module/nvidia/refcnt", "2\n");
	expect_file(R "/sys/module/nvidia/taint", "POE\n");
	expect_link(R "/sys/module/nvidia/holders/nvidia_uvm", "../../nvidia_uvm");
	expect_link(R "/sys/module/nvidia/holders/nvidia_modeset", "../../nvidia_modeset");
	expect_link(R "/sys/module/nvidia_modeset/holders/nvidia_drm", "../../nvidia_drm");
	expect_file(R "/sys/module/nvidia_uvm/initstate", "live\n");
	expect_file(R "/sys/module/nvidia_uvm/refcnt", "0\n");
	expect_file(R "/sys/module/nvidia_drm/parameters/modeset", "N\n");
	struct stat sb;
	cr_expect(stat(full(R "/sys/module/nvidia_uvm/holders"), &sb) == 0 && S_ISDIR(sb.st_mode));
}

Test(gpudriver, library_and_links)
{
	stage_ok();
	expect_file(DRV "/usr/lib64/libnvidia-ml.so.535.261.03", "\x7f" "ELF not really\n");
	expect_link(DRV "/usr/lib64/libnvidia-ml.so.1", "libnvidia-ml.so.535.261.03");
	expect_link(DRV "/usr/lib64/libnvidia-ml.so", "libnvidia-ml.so.1");
}

Test(gpudriver, missing_library_is_an_error)
{
	need_root();
	snprintf(libdir, sizeof(libdir), "%s/nowhere", tmp);
	cr_expect_lt(gpudriver_simulator.stage(&ctx, &st, &errs), 0);
	bool seen = false;
	for (int i = 0; i < errs.n; i++)
		seen |= strstr(errs.e[i].message, "libnvidia-ml.so: not found") != NULL;
	cr_expect(seen, "an error names the missing library");
}

Test(gpudriver, engine_config_verbatim_and_overrides)
{
	stage_ok();
	expect_file(DRV "/config/config.yaml", profile_yaml);
	expect_file(DRV "/config/overrides.yaml", "");
	cr_expect(manifest_has(&own, DRV "/config/overrides.yaml"));
	/* An existing overrides document is never touched. */
	put_file(full(DRV "/config/overrides.yaml"), "version: 1\n");
	memset(&errs, 0, sizeof(errs));
	stage_ok();
	expect_file(DRV "/config/overrides.yaml", "version: 1\n");
}

Test(gpudriver, engine_config_caps_the_count)
{
	st.num_devices = 4;
	stage_ok();
	expect_file(DRV "/config/config.yaml",
		    "# test profile\n"
		    "version: \"1.0\"\n"
		    "system:   # software\n"
		    "    num_devices: 4\n"
		    "    driver_version: \"535.261.03\"\n"
		    "    cuda_version: \"12.2\"\n"
		    "device_defaults:\n"
		    "    name: \"NVIDIA H100 80GB HBM3\"\n"
		    "devices:\n"
		    "  - index: 0\n");
}

Test(gpudriver, engine_config_render_cases)
{
	static const char with_key[] = "system:\n  num_devices: 8 # all\n  x: 1\nother: 2\n";
	static const char flow[] = "system: {driver_version: \"1\"}\n";
	char *out = NULL, err[256] = "";
	size_t len;

	free(st.profile_doc);
	st.profile_doc = strdup(with_key);
	st.profile_len = strlen(with_key);
	st.num_devices = 2;
	cr_assert_eq(gd_engine_config_render(&st, 8, true, &out, &len, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(out, "system:\n  num_devices: 2\n  x: 1\nother: 2\n");
	free(out);
	/* Same count, no key: the bytes as given. */
	st.num_devices = 8;
	cr_assert_eq(gd_engine_config_render(&st, 8, false, &out, &len, err, sizeof(err)), 0);
	cr_expect_str_eq(out, with_key);
	free(out);
	free(st.profile_doc);
	st.profile_doc = strdup(flow);
	st.profile_len = strlen(flow);
	st.num_devices = 1;
	cr_expect_eq(gd_engine_config_render(&st, 8, false, &out, &len, err, sizeof(err)), -EINVAL);
	cr_expect_not_null(strstr(err, "system:"), "%s", err);
}

Test(gpudriver, shrink_converges)
{
	struct manifest first;

	stage_ok();
	manifest_init(&first);
	for (size_t i = 0; i < own.n; i++)
		manifest_add(&first, own.paths[i], own.kinds[i]);
	manifest_free(&own);
	manifest_init(&own);
	ctx.host.prev = &first;
	st.num_devices = 4;
	stage_ok();
	cr_assert_eq(manifest_remove_stale(tmp, &first, &own), 0);
	for (int i = 0; i < NGPUS; i++) {
		char node[128], dir[256];
		snprintf(node, sizeof(node), DRV "/dev/nvidia%d", i);
		snprintf(dir, sizeof(dir), DRV "/proc/driver/nvidia/gpus/%s", bdfs[i]);
		cr_expect_eq(exists(node), i < 4, "%s", node);
		cr_expect_eq(exists(dir), i < 4, "%s", dir);
	}
	cr_expect(exists(DRV "/dev/nvidiactl"));
	cr_expect(exists(DRV "/config/config.yaml"));
	cr_expect_not_null(strstr(slurp(DRV "/config/config.yaml"), "num_devices: 4\n"));
	manifest_free(&first);
}

Test(gpudriver, no_nvidia_smi_source_is_not_ready)
{
	char reason[256] = "";

	st.nvidia_smi_src[0] = '\0';
	stage_ok();
	cr_expect_not(exists(DRV "/usr/bin/nvidia-smi"), "nothing is faked");
	cr_expect_not(gpudriver_simulator.ready(&ctx, &st, reason, sizeof(reason)));
	cr_expect_eq(strncmp(reason, "no nvidia-smi source: ", 22), 0, "%s", reason);

	snprintf(st.nvidia_smi_src, sizeof(st.nvidia_smi_src), "%s/absent/nvidia-smi", tmp);
	memset(&errs, 0, sizeof(errs));
	stage_ok();
	cr_expect_not(gpudriver_simulator.ready(&ctx, &st, reason, sizeof(reason)));
	cr_expect_not_null(strstr(reason, "absent/nvidia-smi: No such file"), "%s", reason);
}

Test(gpudriver, nvidia_smi_gets_origin_runpath)
{
	char cmd[4400], got[256] = "", reason[256];
	FILE *p;

	if (system("patchelf --version >/dev/null 2>&1") != 0)
		cr_skip_test("patchelf is not installed");
	/* Any ELF executable stands in for the real binary. */
	snprintf(st.nvidia_smi_src, sizeof(st.nvidia_smi_src), "/bin/true");
	stage_ok();
	cr_expect(gpudriver_simulator.ready(&ctx, &st, reason, sizeof(reason)), "%s", reason);
	struct stat sb;
	cr_assert_eq(stat(full(DRV "/usr/bin/nvidia-smi"), &sb), 0);
	cr_expect_eq(sb.st_mode & 07777, 0755);
	snprintf(cmd, sizeof(cmd), "patchelf --print-rpath '%s'", full(DRV "/usr/bin/nvidia-smi"));
	cr_assert_not_null(p = popen(cmd, "r"));
	cr_expect_not_null(fgets(got, sizeof(got), p));
	pclose(p);
	cr_expect_str_eq(got, "$ORIGIN/../lib64\n");
	cr_expect(manifest_has(&own, DRV "/usr/bin/nvidia-smi"));
}

Test(gpudriver, apply_and_revoke)
{
	struct manifest applied;
	struct stat a, b;

	stage_ok();
	manifest_init(&applied);
	ctx.host.own = &applied;
	memset(&errs, 0, sizeof(errs));
	cr_assert_eq(gpudriver_simulator.apply(&ctx, &st, &errs), 0, "%s: %s",
		     errs.n ? errs.e[0].surface : "", errs.n ? errs.e[0].message : "");
	cr_assert(lstat(full("/run/nvidia/driver"), &a) == 0);
	if (S_ISLNK(a.st_mode)) {
		expect_link("/run/nvidia/driver", DRV);
	} else {
		/* A bind mount: the mount point shows the driver root itself. */
		cr_assert_eq(stat(full("/run/nvidia/driver"), &a), 0);
		cr_assert_eq(stat(full(DRV), &b), 0);
		cr_expect(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
		cr_expect(exists("/run/nvidia/driver/dev/nvidiactl"));
	}
	cr_expect(manifest_has(&applied, "/run/nvidia/driver"));
	/* Idempotent. */
	cr_assert_eq(gpudriver_simulator.apply(&ctx, &st, &errs), 0);
	cr_assert_eq(gpudriver_simulator.revoke(&ctx, &errs), 0, "%s",
		     errs.n ? errs.e[0].message : "");
	cr_assert_eq(manifest_remove_stale(tmp, &applied, NULL), 0);
	cr_expect_not(exists("/run/nvidia/driver"));
	cr_expect(exists(DRV "/dev/nvidiactl"), "the driver root itself stays");
	manifest_free(&applied);
	ctx.host.own = &own;
}

/* Without CAP_SYS_ADMIN the mount is refused: a symlink to the driver
 * root (the host path) takes its place, and goes on Revoke + Discard. */
Test(gpudriver, apply_falls_back_to_symlink)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	struct manifest applied;

	stage_ok();
	cr_assert_eq(syscall(SYS_capget, &h, d), 0);
	d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
	cr_assert_eq(syscall(SYS_capset, &h, d), 0, "capset: %s", strerror(errno));
	manifest_init(&applied);
	ctx.host.own = &applied;
	cr_assert_eq(gpudriver_simulator.apply(&ctx, &st, &errs), 0, "%s",
		     errs.n ? errs.e[0].message : "");
	expect_link("/run/nvidia/driver", DRV);
	cr_expect(manifest_has(&applied, "/run/nvidia/driver"));
	cr_assert_eq(gpudriver_simulator.apply(&ctx, &st, &errs), 0);
	cr_assert_eq(gpudriver_simulator.revoke(&ctx, &errs), 0);
	cr_assert_eq(manifest_remove_stale(tmp, &applied, NULL), 0);
	cr_expect_not(exists("/run/nvidia/driver"));
	manifest_free(&applied);
	ctx.host.own = &own;
}
