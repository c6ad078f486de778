/* pcibus Stage/Apply into a temporary host root, checked file by file and
 * through the real lspci. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/compile.h"
#include "workers/manifest.h"
#include "workers/pcibus/pcibus.h"

#define R "/var/lib/nvml-mock"

static char tmp[] = "/tmp/mokka-pcibus-XXXXXX";
static struct manifest own;
static struct sim_ctx ctx;
static struct sim_errors errs;
static struct state st;

static void add_root(const char *id, int numa, const char *cpus)
{
	struct state_root_complex *rc = &st.roots[st.num_roots++];

	snprintf(rc->id, sizeof(rc->id), "%s", id);
	rc->numa_node = numa;
	snprintf(rc->cpu_affinity, sizeof(rc->cpu_affinity), "%s", cpus);
}

static void add_gpu(const char *bdf, int root)
{
	struct state_device *d = &st.devices[st.num_devices];

	d->index = d->minor = st.num_devices++;
	snprintf(d->bus_id, sizeof(d->bus_id), "%s", bdf);
	snprintf(d->name, sizeof(d->name), "NVIDIA H100 80GB HBM3");
	d->vendor_id = 0x10de;
	d->device_id = 0x2330;
	d->subsys_vendor_id = 0x10de;
	d->subsys_device_id = 0x16c1;
	d->root = root;
	d->numa_node = st.roots[root].numa_node;
	d->pcie = (struct state_pcie_link){ 5, 16, 5, 16 };
	d->memory_total_bytes = 80ULL << 30;
	d->bar1_total_bytes = 128ULL << 30;
}

/* Two roots (NUMA 0 with an explicit cpulist, NUMA 1 derived from
 * cores_per_numa) with two H100s each. */
static void setup(void)
{
	cr_assert_not_null(mkdtemp(tmp));
	state_init(&st);
	snprintf(st.mock_root, sizeof(st.mock_root), R);
	snprintf(st.driver_version, sizeof(st.driver_version), "550.163.01");
	snprintf(st.cuda_version, sizeof(st.cuda_version), "12.4");
	st.cores_per_numa = 4;
	add_root("pci0000:00", 0, "0-3");
	add_root("pci0000:80", 1, "");
	add_gpu("0000:1a:00.0", 0);
	add_gpu("0000:2a:00.0", 0);
	add_gpu("0000:9a:00.0", 1);
	add_gpu("0000:ab:00.0", 1);
	manifest_init(&own);
	memset(&ctx, 0, sizeof(ctx));
	snprintf(ctx.host.root, sizeof(ctx.host.root), "%s", tmp);
	snprintf(ctx.host.mock_root, sizeof(ctx.host.mock_root), R);
	ctx.host.own = &own;
	ctx.name = "pcibus";
	ctx.libdir = tmp;	/* no libmockfs.so there: the shim is skipped */
	memset(&errs, 0, sizeof(errs));
}

static int rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void teardown(void)
{
	manifest_free(&own);
	state_free(&st);
	nftw(tmp, rm, 16, FTW_DEPTH | FTW_PHYS);
}

static void to_errs(void *arg, const char *surface, const char *msg)
{
	sim_error(arg, surface, "%s", msg);
}

/* What the compiler does for a profile (plan st.pci), then pcibus's Stage:
 * the first error of the two, every problem in errs. */
static int stage_planned(void)
{
	int plan = compile_pci(&st, to_errs, &errs);
	int r = pcibus_simulator.stage(&ctx, &st, &errs);

	return plan < 0 ? plan : r;
}

static void stage_ok(void)
{
	int r = stage_planned();

	cr_assert_eq(r, 0, "stage: %d: %s: %s", r, errs.n ? errs.e[0].surface : "",
		     errs.n ? errs.e[0].message : "");
	cr_assert_eq(errs.n, 0);
}

static char *slurp(const char *rel, size_t *len)
{
	static char buf[65536];
	char path[4096];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s%s", tmp, rel);
	f = fopen(path, "rb");
	cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static void expect_file(const char *rel, const char *want)
{
	cr_expect_str_eq(slurp(rel, NULL), want, "%s", rel);
}

static void expect_link(const char *rel, const char *want)
{
	char path[4096], got[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "%s%s", tmp, rel);
	n = readlink(path, got, sizeof(got) - 1);
	cr_assert_geq(n, 0, "readlink %s: %s", path, strerror(errno));
	got[n] = '\0';
	cr_expect_str_eq(got, want, "%s", rel);
}

#define GPU0 R "/sys/devices/pci0000:00/0000:00:01.0/0000:1a:00.0"
#define GPU2 R "/sys/devices/pci0000:80/0000:80:01.0/0000:9a:00.0"

TestSuite(pcibus, .init = setup, .fini = teardown);

Test(pcibus, gpu_attributes)
{
	stage_ok();
	expect_file(GPU0 "/vendor", "0x10de\n");
	expect_file(GPU0 "/device", "0x2330\n");
	expect_file(GPU0 "/subsystem_vendor", "0x10de\n");
	expect_file(GPU0 "/subsystem_device", "0x16c1\n");
	expect_file(GPU0 "/class", "0x030200\n");
	expect_file(GPU0 "/revision", "0xa1\n");
	expect_file(GPU0 "/numa_node", "0\n");
	expect_file(GPU2 "/numa_node", "1\n");
	expect_file(GPU0 "/local_cpulist", "0-3\n");
	expect_file(GPU2 "/local_cpulist", "4-7\n");
	expect_file(GPU0 "/local_cpus", "0f\n");
	expect_file(GPU2 "/local_cpus", "f0\n");
	expect_file(GPU0 "/max_link_speed", "32.0 GT/s PCIe\n");
	expect_file(GPU0 "/current_link_speed", "32.0 GT/s PCIe\n");
	expect_file(GPU0 "/max_link_width", "16\n");
	expect_file(GPU0 "/enable", "1\n");
	expect_file(GPU0 "/modalias", "pci:v000010DEd00002330sv000010DEsd000016C1bc03sc02i00\n");
	cr_expect_not_null(strstr(slurp(GPU0 "/uevent", NULL),
				  "DRIVER=nvidia\nPCI_CLASS=30200\nPCI_ID=10DE:2330\n"
				  "PCI_SUBSYS_ID=10DE:16C1\nPCI_SLOT_NAME=0000:1a:00.0\n"));
}

Test(pcibus, resource_and_config_agree)
{
	size_t len;
	char *res, *line;
	unsigned long long start, end, flags;
	const uint8_t *cs;
	int lines = 0;

	stage_ok();
	res = slurp(GPU0 "/resource", NULL);
	for (line = res; (line = strchr(line, '\n')); line++)
		lines++;
	cr_assert_eq(lines, 13, "kernel prints 13 resources for an endpoint");
	cr_assert_eq(sscanf(res, "%llx %llx %llx", &start, &end, &flags), 3);
	cr_expect_eq(end - start + 1, 16ULL << 20, "BAR0 16 MiB");
	cr_expect_eq(flags, 0x40200);
	cr_assert_eq(sscanf(strchr(res, '\n') + 1, "%llx %llx %llx", &start, &end, &flags), 3);
	cr_expect_eq(end - start + 1, 128ULL << 30, "BAR1 = bar1 size");
	cr_expect_eq(flags, 0x14220c);
	cs = (const uint8_t *)slurp(GPU0 "/config", &len);
	cr_assert_eq(len, CONFIG_SPACE_SIZE);
	cr_expect_eq(cs[0], 0xde);
	cr_expect_eq(cs[1], 0x10);
	cr_expect_eq((unsigned long long)(cs[0x14] & 0xf0) | (unsigned long long)cs[0x15] << 8 |
		     (unsigned long long)cs[0x16] << 16 | (unsigned long long)cs[0x17] << 24 |
		     (unsigned long long)cs[0x18] << 32 | (unsigned long long)cs[0x19] << 40,
		     start, "BAR1 register = resource start");
}

Test(pcibus, tree_links)
{
	stage_ok();
	expect_link(R "/sys/bus/pci/devices/0000:1a:00.0",
		    "../../../devices/pci0000:00/0000:00:01.0/0000:1a:00.0");
	expect_link(R "/sys/bus/pci/devices/0000:2a:00.0",
		    "../../../devices/pci0000:00/0000:00:02.0/0000:2a:00.0");
	expect_link(R "/sys/bus/pci/devices/0000:80:01.0",
		    "../../../devices/pci0000:80/0000:80:01.0");
	expect_link(GPU0 "/driver", "../../../../bus/pci/drivers/nvidia");
	expect_link(R "/sys/devices/pci0000:80/0000:80:02.0/driver", "../../../bus/pci/drivers/pcieport");
	expect_link(R "/sys/bus/pci/drivers/nvidia/0000:9a:00.0",
		    "../../../../devices/pci0000:80/0000:80:01.0/0000:9a:00.0");
	expect_file(R "/sys/devices/pci0000:80/0000:80:02.0/secondary_bus_number", "171\n");
	expect_file(R "/sys/devices/pci0000:80/0000:80:02.0/class", "0x060400\n");
	/* The links resolve: reading through them reaches the device. */
	expect_file(R "/sys/bus/pci/devices/0000:ab:00.0/vendor", "0x10de\n");
	expect_file(R "/sys/bus/pci/drivers/nvidia/0000:ab:00.0/driver/0000:ab:00.0/device",
		    "0x2330\n");
}

Test(pcibus, ownership_recorded)
{
	stage_ok();
	cr_expect(manifest_has(&own, R "/sys/bus/pci/devices/0000:1a:00.0"));
	cr_expect(manifest_has(&own, GPU0 "/config"));
	cr_expect(manifest_has(&own, GPU0));
	cr_expect(manifest_has(&own, R "/sys/devices/pci0000:80"));
	cr_expect(manifest_has(&own, R "/proc/bus/pci/devices"));
	cr_expect(!manifest_has(&own, NFD_FEATURES_FILE), "the feature file is Apply's");
}

Test(pcibus, proc_bus_pci)
{
	size_t len;
	char *dev = slurp((stage_ok(), R "/proc/bus/pci/devices"), NULL);
	int lines = 0;

	for (char *p = dev; (p = strchr(p, '\n')); p++)
		lines++;
	cr_assert_eq(lines, 8, "4 GPUs + 4 root ports:\n%s", dev);
	cr_expect_eq(strncmp(dev, "0008\t80862030\t", 14), 0, "first: port 00:01.0:\n%s", dev);
	cr_expect_not_null(strstr(dev, "\n1a00\t10de2330\t"), "%s", dev);
	cr_expect_not_null(strstr(dev, "\t    20000000000c\t"), "BAR1 carries its type bits: %s", dev);
	cr_expect_not_null(strstr(dev, "\t         1000000\t"), "BAR0 size: %s", dev);
	cr_expect_not_null(strstr(dev, "\tnvidia\n"), "%s", dev);
	cr_expect_not_null(strstr(dev, "\tpcieport\n"), "%s", dev);
	slurp(R "/proc/bus/pci/1a/00.0", &len);
	cr_expect_eq(len, CONFIG_SPACE_SIZE);
	slurp(R "/proc/bus/pci/80/02.0", &len);
	cr_expect_eq(len, CONFIG_SPACE_SIZE);
}

Test(pcibus, domain_named_proc_dir)
{
	snprintf(st.roots[1].id, sizeof(st.roots[1].id), "pci0001:80");
	snprintf(st.devices[2].bus_id, sizeof(st.devices[2].bus_id), "0001:9a:00.0");
	snprintf(st.devices[3].bus_id, sizeof(st.devices[3].bus_id), "0001:ab:00.0");
	stage_ok();
	slurp(R "/proc/bus/pci/0001:9a/00.0", NULL);
	expect_link(R "/sys/bus/pci/devices/0001:9a:00.0",
		    "../../../devices/pci0001:80/0001:80:01.0/0001:9a:00.0");
}

Test(pcibus, stage_is_idempotent)
{
	struct stat a, b;
	char path[4096];

	stage_ok();
	snprintf(path, sizeof(path), "%s%s", tmp, GPU0 "/config");
	cr_assert_eq(stat(path, &a), 0);
	stage_ok();
	cr_assert_eq(stat(path, &b), 0);
	cr_expect_eq(a.st_ino, b.st_ino, "identical content is not rewritten");
}

Test(pcibus, bad_bus_id_is_refused_and_others_render)
{
	int r;

	snprintf(st.devices[1].bus_id, sizeof(st.devices[1].bus_id), "../../etc");
	r = stage_planned();
	cr_expect_eq(r, -EINVAL);
	cr_assert_geq(errs.n, 1);
	cr_expect_str_eq(errs.e[0].surface, "bus_id");
	cr_expect_not_null(strstr(errs.e[0].message, "../../etc"), "%s", errs.e[0].message);
	expect_file(GPU0 "/vendor", "0x10de\n");
}

Test(pcibus, root_mock_root_is_refused)
{
	char path[4096];

	snprintf(st.mock_root, sizeof(st.mock_root), "/");
	cr_expect_eq(stage_planned(), -EINVAL);
	cr_assert_geq(errs.n, 1);
	cr_expect_str_eq(errs.e[0].surface, "mock_root");
	snprintf(path, sizeof(path), "%s/sys", tmp);
	cr_expect_neq(access(path, F_OK), 0, "nothing rendered over the host's /sys");
}

Test(pcibus, duplicate_bus_id_is_refused)
{
	snprintf(st.devices[3].bus_id, sizeof(st.devices[3].bus_id), "0000:9a:00.0");
	cr_expect_eq(stage_planned(), -EEXIST);
	cr_assert_geq(errs.n, 1);
	cr_expect_str_eq(errs.e[0].surface, "0000:9a:00.0");
}

Test(pcibus, bad_link_reports_config_surface)
{
	bool found = false;

	st.devices[0].pcie.max_width = 3;
	st.devices[0].pcie.cur_width = 3;
	cr_expect_eq(stage_planned(), -EINVAL);
	for (int i = 0; i < errs.n; i++)
		found |= strstr(errs.e[i].message, "pcibus: 0000:1a:00.0/config: ") != NULL;
	cr_expect(found, "no error names 0000:1a:00.0/config");
}

Test(pcibus, device_without_root_gets_a_host_bridge)
{
	st.devices[3].root = -1;
	st.devices[3].numa_node = -1;
	stage_ok();
	expect_link(R "/sys/bus/pci/devices/0000:ab:00.0",
		    "../../../devices/pci0000:00/0000:00:03.0/0000:ab:00.0");
	expect_file(R "/sys/bus/pci/devices/0000:ab:00.0/numa_node", "-1\n");
	expect_file(R "/sys/bus/pci/devices/0000:ab:00.0/local_cpulist", "0-7\n");
}

Test(pcibus, gpu_on_root_bus_has_no_port)
{
	snprintf(st.devices[0].bus_id, sizeof(st.devices[0].bus_id), "0000:00:05.0");
	stage_ok();
	expect_link(R "/sys/bus/pci/devices/0000:00:05.0", "../../../devices/pci0000:00/0000:00:05.0");
	expect_link(R "/sys/devices/pci0000:00/0000:00:05.0/driver", "../../../bus/pci/drivers/nvidia");
}

Test(pcibus, shim_copied_when_built)
{
	char src[4096];
	FILE *f;

	snprintf(src, sizeof(src), "%s/libmockfs.so", tmp);
	f = fopen(src, "w");
	cr_assert_not_null(f);
	fputs("\177ELF shim", f);
	fclose(f);
	stage_ok();
	expect_file(R "/driver/usr/local/lib/libmockfs.so", "\177ELF shim");
}

Test(pcibus, apply_writes_features)
{
	int r = pcibus_simulator.apply(&ctx, &st, &errs);

	cr_assert_eq(r, 0);
	expect_file(NFD_FEATURES_FILE,
		    "pci-10de.present=true\n"
		    "mokka.gpu.count=4\n"
		    "mokka.gpu.driver-version=550.163.01\n"
		    "mokka.gpu.cuda-version=12.4\n"
		    "mokka.gpu.device-ids=2330\n"
		    "mokka.gpu.product=NVIDIA-H100-80GB-HBM3\n");
	cr_expect(manifest_has(&own, NFD_FEATURES_FILE));
}

Test(pcibus, apply_mixed_ids_and_no_gpus)
{
	char path[4096];

	st.devices[2].device_id = 0x20b0;
	cr_assert_eq(pcibus_simulator.apply(&ctx, &st, &errs), 0);
	cr_expect_not_null(strstr(slurp(NFD_FEATURES_FILE, NULL), "mokka.gpu.device-ids=2330-20b0\n"));
	nftw(tmp, rm, 16, FTW_DEPTH | FTW_PHYS);
	cr_assert_eq(mkdir(tmp, 0700), 0);
	st.num_devices = 0;
	cr_assert_eq(pcibus_simulator.apply(&ctx, &st, &errs), 0);
	snprintf(path, sizeof(path), "%s%s", tmp, NFD_FEATURES_FILE);
	cr_expect_neq(access(path, F_OK), 0, "no GPUs, no pci-10de feature");
}

/* ---- the real consumer: lspci reading the staged tree ---- */

static char *lspci(const char *args)
{
	static char out[1 << 20];
	char cmd[8192];
	size_t n = 0, got;
	FILE *p;

	if (access("/usr/bin/lspci", X_OK) != 0 && access("/sbin/lspci", X_OK) != 0 &&
	    access("/usr/sbin/lspci", X_OK) != 0)
		cr_skip_test("lspci (pciutils) is not installed");
	snprintf(cmd, sizeof(cmd),
		 "PATH=/usr/bin:/usr/sbin:/sbin:/bin lspci -A linux-sysfs "
		 "-O sysfs.path=%s" R "/sys/bus/pci %s 2>/dev/null", tmp, args);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while ((got = fread(out + n, 1, sizeof(out) - 1 - n, p)) > 0)
		n += got;
	out[n] = '\0';
	cr_assert_eq(pclose(p), 0, "%s failed:\n%s", cmd, out);
	return out;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

Test(pcibus, lspci_lists_the_gpus)
{
	char *out;

	stage_ok();
	out = lspci("-nn");
	cr_expect_eq(count(out, "NVIDIA Corporation"), 4, "%s", out);
	cr_expect_eq(count(out, "[10de:2330]"), 4, "%s", out);
	cr_expect_eq(count(out, "[0302]"), 4, "3D controller class: %s", out);
	cr_expect_eq(count(out, "PCI bridge [0604]"), 4, "%s", out);
	cr_expect_not_null(strstr(out, "1a:00.0 3D controller"), "%s", out);
}

Test(pcibus, lspci_decodes_the_link)
{
	char *out;

	st.devices[3].pcie = (struct state_pcie_link){ 6, 16, 4, 8 };
	stage_ok();
	out = lspci("-vv -s 1a:00.0");
	cr_expect_not_null(strstr(out, "LnkCap:\tPort #0, Speed 32GT/s, Width x16"), "%s", out);
	cr_expect_not_null(strstr(out, "LnkSta:\tSpeed 32GT/s, Width x16"), "%s", out);
	cr_expect_not_null(strstr(out, "Express (v2) Endpoint"), "%s", out);
	cr_expect_not_null(strstr(out, "MSI-X: Enable+ Count=6"), "%s", out);
	cr_expect_not_null(strstr(out, "NUMA node: 0"), "%s", out);
	cr_expect_not_null(strstr(out, "Region 1: Memory at"), "%s", out);
	cr_expect_not_null(strstr(out, "(64-bit, prefetchable) [size=128G]"), "%s", out);
	cr_expect_not_null(strstr(out, "Advanced Error Reporting"), "%s", out);
	out = lspci("-vv -s ab:00.0");
	cr_expect_not_null(strstr(out, "LnkCap:\tPort #0, Speed 64GT/s, Width x16"), "%s", out);
	cr_expect_not_null(strstr(out, "LnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)"),
			   "%s", out);
	out = lspci("-vv -s 80:02.0");
	cr_expect_not_null(strstr(out, "Root Port (Slot+)"), "%s", out);
	cr_expect_not_null(strstr(out, "Bus: primary=80, secondary=ab, subordinate=ab"), "%s", out);
	cr_expect_not_null(strstr(out, "LnkCap:\tPort #2, Speed 64GT/s, Width x16"), "%s", out);
}

Test(pcibus, lspci_shows_the_driver)
{
	char *out;

	stage_ok();
	out = lspci("-k");
	cr_expect_eq(count(out, "Kernel driver in use: nvidia"), 4, "%s", out);
	cr_expect_eq(count(out, "Kernel driver in use: pcieport"), 4, "%s", out);
}

Test(pcibus, lspci_tree)
{
	char *out;

	stage_ok();
	out = lspci("-t");
	cr_expect_not_null(strstr(out, "01.0-[1a]----00.0"), "%s", out);
	cr_expect_not_null(strstr(out, "02.0-[ab]----00.0"), "%s", out);
}

/* ---- InfiniBand HCAs (state.ib.hcas) as ConnectX functions ---- */

static void add_hcas(void)
{
	st.ib.enabled = true;
	st.ib.device_id = 0x1021;
	st.ib.num_hcas = 2;
	snprintf(st.ib.hcas[0].name, sizeof(st.ib.hcas[0].name), "mlx5_0");
	snprintf(st.ib.hcas[0].bus_id, sizeof(st.ib.hcas[0].bus_id), "0000:1b:00.0");
	st.ib.hcas[0].root = 0;
	st.ib.hcas[0].numa_node = 0;
	snprintf(st.ib.hcas[1].name, sizeof(st.ib.hcas[1].name), "mlx5_1");
	snprintf(st.ib.hcas[1].bus_id, sizeof(st.ib.hcas[1].bus_id), "0000:9b:00.0");
	st.ib.hcas[1].index = 1;
	st.ib.hcas[1].root = 1;
	st.ib.hcas[1].numa_node = 1;
}

#define HCA0 R "/sys/devices/pci0000:00/0000:00:03.0/0000:1b:00.0"

Test(pcibus, hca_functions)
{
	unsigned long long start, end, flags;

	add_hcas();
	stage_ok();
	expect_file(HCA0 "/vendor", "0x15b3\n");
	expect_file(HCA0 "/device", "0x1021\n");
	expect_file(HCA0 "/subsystem_vendor", "0x15b3\n");
	expect_file(HCA0 "/subsystem_device", "0x0023\n");
	expect_file(HCA0 "/class", "0x020700\n");
	expect_file(HCA0 "/modalias", "pci:v000015B3d00001021sv000015B3sd00000023bc02sc07i00\n");
	expect_file(HCA0 "/numa_node", "0\n");
	expect_file(HCA0 "/local_cpulist", "0-3\n");
	expect_file(HCA0 "/max_link_speed", "32.0 GT/s PCIe\n");
	cr_expect_not_null(strstr(slurp(HCA0 "/uevent", NULL),
				  "DRIVER=mlx5_core\nPCI_CLASS=20700\nPCI_ID=15B3:1021\n"));
	expect_link(HCA0 "/driver", "../../../../bus/pci/drivers/mlx5_core");
	expect_link(R "/sys/bus/pci/drivers/mlx5_core/0000:9b:00.0",
		    "../../../../devices/pci0000:80/0000:80:03.0/0000:9b:00.0");
	expect_file(R "/sys/bus/pci/drivers/mlx5_core/bind", "");
	cr_assert_eq(sscanf(slurp(HCA0 "/resource", NULL), "%llx %llx %llx", &start, &end, &flags), 3);
	cr_expect_eq(end - start + 1, 32ULL << 20, "BAR0 32 MiB");
	cr_expect_eq(flags, 0x14220c, "64-bit prefetchable");
	/* GPUs keep their ports (01, 02) and addresses; HCAs come after. */
	expect_link(R "/sys/bus/pci/devices/0000:1a:00.0",
		    "../../../devices/pci0000:00/0000:00:01.0/0000:1a:00.0");
	expect_file(R "/sys/devices/pci0000:00/0000:00:03.0/secondary_bus_number", "27\n");
}

Test(pcibus, hcas_leave_gpu_addresses_alone)
{
	char before[4096];

	stage_ok();
	snprintf(before, sizeof(before), "%s", slurp(GPU2 "/resource", NULL));
	nftw(tmp, rm, 16, FTW_DEPTH | FTW_PHYS);
	cr_assert_eq(mkdir(tmp, 0700), 0);
	add_hcas();
	stage_ok();
	expect_file(GPU2 "/resource", before);
}

Test(pcibus, ib_disabled_has_no_hcas)
{
	add_hcas();
	st.ib.enabled = false;
	stage_ok();
	cr_expect_neq(access(HCA0, F_OK), 0);
}

Test(pcibus, lspci_names_the_hcas)
{
	char *out;

	add_hcas();
	stage_ok();
	out = lspci("-nn");
	cr_expect_eq(count(out, "Infiniband controller [0207]: Mellanox Technologies "
			   "MT2910 Family [ConnectX-7] [15b3:1021]"), 2, "%s", out);
	cr_expect_eq(count(out, "NVIDIA Corporation"), 4, "%s", out);
	out = lspci("-k -s 1b:00.0");
	cr_expect_not_null(strstr(out, "Kernel driver in use: mlx5_core"), "%s", out);
	out = lspci("-vv -s 9b:00.0");
	cr_expect_not_null(strstr(out, "LnkCap:\tPort #0, Speed 32GT/s, Width x16"), "%s", out);
	cr_expect_not_null(strstr(out, "Region 0: Memory at"), "%s", out);
	cr_expect_not_null(strstr(out, "(64-bit, prefetchable) [size=32M]"), "%s", out);
	cr_expect_not_null(strstr(out, "NUMA node: 1"), "%s", out);
	out = lspci("-vv -s 80:03.0");
	cr_expect_not_null(strstr(out, "Bus: primary=80, secondary=9b, subordinate=9b"), "%s", out);
	cr_expect_not_null(strstr(out, "Prefetchable memory behind bridge:"), "%s", out);
	out = lspci("-t");
	cr_expect_not_null(strstr(out, "03.0-[1b]----00.0"), "%s", out);
}

/* More HCAs than free buses: the compiler refuses the profile, naming the
 * file, line and the infiniband block. */
Test(pcibus, too_many_hcas_is_a_compile_error)
{
	struct state *s = calloc(1, sizeof(*s));
	char *yaml = NULL, err[512];
	size_t len = 0;
	FILE *f = open_memstream(&yaml, &len);

	cr_assert(s && f);
	fputs("version: \"1.0\"\nsystem:\n  driver_version: \"550.163.01\"\n"
	      "device_defaults:\n  name: \"NVIDIA H100 80GB HBM3\"\ndevices:\n", f);
	for (int i = 0; i < STATE_MAX_DEVICES; i++)
		fprintf(f, "  - index: %d\n    pci:\n      bus_id: \"0000:%02x:00.0\"\n", i, 2 * i + 1);
	/* 64 GPU buses + 200 HCAs, a bus each (a count that is not a whole
	 * number per GPU gets no multi-port adapters) > 255 buses. */
	fputs("infiniband:\n  enabled: true\n  hca_count: 200\n", f);
	fclose(f);
	state_init(s);
	cr_expect_eq(compile_profile("many.yaml", yaml, len, NULL, NULL, 0, NULL, s, err,
				     sizeof(err)), -EINVAL);
	cr_expect_not_null(strstr(err, "no free PCI bus left for HCA"), "%s", err);
	cr_expect_eq(strncmp(err, "many.yaml:", 10), 0, "%s", err);
	cr_expect(err[10] >= '1' && err[10] <= '9', "a line number: %s", err);
	free(yaml);
	state_free(s);
	free(s);
}
