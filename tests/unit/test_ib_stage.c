/* ib simulator Stage into a temporary host root, checked file by file:
 * every file type's format, link targets, device numbers, the daemon spec,
 * convergence (8 -> 4 HCAs -> disabled leaves nothing) and idempotence.
 * Device nodes need root (CAP_MKNOD), like the gpudriver test. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "ipc/log.h"
#include "profile/compile.h"
#include "workers/ib/ib.h"
#include "workers/manifest.h"
#include "workers/pcibus/pcibus.h"

#define R "/var/lib/nvml-mock"
#define SYS R "/ib/sys"
#define IBDEV0 SYS "/class/infiniband/mlx5_0"
#define PORT0 IBDEV0 "/ports/1"
/* The built-in profile puts mlx5_0 next to GPU 0 (1a) on bus 1b, behind
 * the fifth root port of pci0000:00 (four GPUs take 01..04). */
#define HCA0_PCI "devices/pci0000:00/0000:00:05.0/0000:1b:00.0"

static char tmp[] = "/tmp/mokka-ibstage-XXXXXX";
static struct manifest prev;
static struct sim_ctx ctx;
static struct sim_errors errs;
static struct state st;

/* Stand-ins for the built shims in dir. */
static void make_shims(const char *dir)
{
	for (int i = 0; ib_shim_files[i]; i++) {
		char src[4096];
		FILE *f;

		snprintf(src, sizeof(src), "%s/%s", dir, ib_shim_files[i]);
		f = fopen(src, "w");
		cr_assert_not_null(f);
		fprintf(f, "\177ELF %s", ib_shim_files[i]);
		fclose(f);
	}
}

static void setup(void)
{
	char err[512];
	struct compile_opts o = { .node_name = "kind-worker" };

	cr_assert_not_null(mkdtemp(tmp));
	log_setup("test_ib_stage", LOG_LVL_ERROR, LOG_FMT_TEXT);
	state_init(&st);
	cr_assert_eq(compile_profile("<built-in>", compile_default_profile,
				     compile_default_profile_len, NULL, NULL, 0, &o, &st,
				     err, sizeof(err)), 0, "%s", err);
	cr_assert(st.ib.enabled);
	cr_assert_eq(st.ib.num_hcas, 8);
	manifest_init(&prev);
	memset(&ctx, 0, sizeof(ctx));
	snprintf(ctx.host.root, sizeof(ctx.host.root), "%s", tmp);
	snprintf(ctx.host.mock_root, sizeof(ctx.host.mock_root), R);
	ctx.name = "ib";
	ctx.bindir = "/usr/libexec/mokka";
	ctx.libdir = tmp;
	memset(&errs, 0, sizeof(errs));
	make_shims(tmp);
}

static int rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void teardown(void)
{
	manifest_free(&prev);
	state_free(&st);
	nftw(tmp, rm, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(ib_stage, .init = setup, .fini = teardown);

static void to_errs(void *arg, const char *surface, const char *msg)
{
	sim_error(arg, surface, "%s", msg);
}

/* One pass as the worker framework runs it: a fresh manifest, what the
 * previous pass owned and this one did not re-create removed. */
static int stage_pass(void)
{
	struct manifest cur;
	int r;

	manifest_init(&cur);
	ctx.host.own = &cur;
	ctx.host.prev = &prev;
	memset(&errs, 0, sizeof(errs));
	r = ib_simulator.stage(&ctx, &st, &errs);
	ctx.host.own = NULL;
	ctx.host.prev = NULL;
	if (r == 0) {
		cr_assert_eq(manifest_remove_stale(ctx.host.root, &prev, &cur), 0);
		manifest_free(&prev);
		prev = cur;
	} else {
		manifest_free(&cur);
	}
	return r;
}

static void stage_ok(void)
{
	int r = stage_pass();

	cr_assert_eq(r, 0, "stage: %d: %s: %s", r, errs.n ? errs.e[0].surface : "",
		     errs.n ? errs.e[0].message : "");
	cr_assert_eq(errs.n, 0, "%s: %s", errs.e[0].surface, errs.e[0].message);
}

static const char *full(const char *rel)
{
	static char path[2][4096];
	static int k;

	k ^= 1;
	snprintf(path[k], sizeof(path[k]), "%s%s", tmp, rel);
	return path[k];
}

static char *slurp(const char *rel)
{
	static char buf[65536];
	FILE *f = fopen(full(rel), "rb");
	size_t n;

	cr_assert_not_null(f, "open %s: %s", full(rel), strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static void expect_file(const char *rel, const char *want)
{
	cr_expect_str_eq(slurp(rel), want, "%s", rel);
}

static void expect_link(const char *rel, const char *want)
{
	char got[4096];
	ssize_t n = readlink(full(rel), got, sizeof(got) - 1);

	cr_assert_geq(n, 0, "readlink %s: %s", rel, strerror(errno));
	got[n] = '\0';
	cr_expect_str_eq(got, want, "%s", rel);
}

static bool exists(const char *rel)
{
	struct stat sb;

	return lstat(full(rel), &sb) == 0;
}

static void expect_chr(const char *rel, unsigned maj, unsigned min, mode_t mode)
{
	struct stat sb;

	cr_assert_eq(lstat(full(rel), &sb), 0, "%s: %s", rel, strerror(errno));
	cr_expect(S_ISCHR(sb.st_mode), "%s is a character device", rel);
	cr_expect_eq(major(sb.st_rdev), maj, "%s major", rel);
	cr_expect_eq(minor(sb.st_rdev), min, "%s minor", rel);
	cr_expect_eq(sb.st_mode & 07777, mode, "%s mode %o", rel, sb.st_mode & 07777);
}

Test(ib_stage, device_attributes)
{
	stage_ok();
	expect_link(IBDEV0, "../../" HCA0_PCI "/infiniband/mlx5_0");
	expect_file(IBDEV0 "/node_type", "1: CA\n");
	/* IB.md §1.3 worked example: "kind-worker", 8 HCAs. */
	expect_file(IBDEV0 "/node_guid", "a088:c203:612c:4800\n");
	expect_file(IBDEV0 "/sys_image_guid", "a088:c203:612c:4800\n");
	expect_file(SYS "/class/infiniband/mlx5_1/node_guid", "a088:c203:612c:4802\n");
	expect_file(IBDEV0 "/fw_ver", "28.39.2048\n");
	expect_file(IBDEV0 "/hw_rev", "0x0\n");
	expect_file(IBDEV0 "/hca_type", "MT4129\n");
	expect_file(IBDEV0 "/board_id", "MT_0000000838\n");
	expect_file(IBDEV0 "/node_desc", "kind-worker mlx5_0\n");
	expect_file(IBDEV0 "/reg_pages", "0\n");
	expect_file(IBDEV0 "/uevent", "NAME=mlx5_0\n");
	cr_expect_gt(atoi(slurp(IBDEV0 "/fw_pages")), 0);
	expect_link(IBDEV0 "/device", "../../../0000:1b:00.0");
	expect_link(IBDEV0 "/subsystem", "../../../../../../class/infiniband");
}

Test(ib_stage, pci_function)
{
	stage_ok();
	/* Read through the links: class -> device -> the PCI function. */
	expect_file(IBDEV0 "/device/vendor", "0x15b3\n");
	expect_file(IBDEV0 "/device/device", "0x1021\n");
	expect_file(IBDEV0 "/device/subsystem_vendor", "0x15b3\n");
	expect_file(IBDEV0 "/device/subsystem_device", "0x0023\n");
	expect_file(IBDEV0 "/device/class", "0x020700\n");
	/* Upper-case hex: libibverbs fnmatches "pci:v000015B3d00001021sv*". */
	expect_file(IBDEV0 "/device/modalias",
		    "pci:v000015B3d00001021sv000015B3sd00000023bc02sc07i00\n");
	expect_file(IBDEV0 "/device/numa_node", "0\n");
	cr_expect_not_null(strstr(slurp(IBDEV0 "/device/uevent"),
				  "DRIVER=mlx5_core\nPCI_CLASS=20700\nPCI_ID=15B3:1021\n"));
	cr_expect_neq(slurp(IBDEV0 "/device/local_cpulist")[0], '\0');
	expect_link(SYS "/" HCA0_PCI "/driver", "../../../../bus/pci/drivers/mlx5_core");
	expect_link(SYS "/bus/pci/drivers/mlx5_core/0000:1b:00.0", "../../../../" HCA0_PCI);
	expect_link(SYS "/bus/pci/devices/0000:1b:00.0", "../../../" HCA0_PCI);
	expect_file(SYS "/bus/pci/drivers/mlx5_core/0000:1b:00.0/infiniband/mlx5_0/hca_type",
		    "MT4129\n");
	expect_file(SYS "/bus/pci/drivers/mlx5_core/bind", "");
	/* The driver link from the function resolves to the driver dir. */
	cr_expect(exists(SYS "/" HCA0_PCI "/driver/bind"));
	expect_file(SYS "/devices/pci0000:80/0000:80:05.0/0000:9b:00.0/infiniband/mlx5_4/"
		    "device/numa_node", "1\n");
}

Test(ib_stage, port_attributes)
{
	st.ib.hcas[0].counters[12] = 1000;	/* port_xmit_data */
	st.ib.hcas[0].counters[13] = 2500;	/* port_rcv_data */
	st.ib.hcas[0].counters[0] = 7;		/* symbol_error */
	st.ib.hcas[0].counters[20] = UINT64_MAX;	/* multicast_rcv_packets */
	stage_ok();
	expect_file(PORT0 "/state", "4: ACTIVE\n");
	expect_file(PORT0 "/phys_state", "5: LinkUp\n");
	expect_file(PORT0 "/rate", "400 Gb/sec (4X NDR)\n");
	expect_file(PORT0 "/lid", "0x4620\n");
	expect_file(SYS "/class/infiniband/mlx5_1/ports/1/lid", "0x4621\n");
	expect_file(PORT0 "/lid_mask_count", "0\n");
	expect_file(PORT0 "/sm_lid", "0x1\n");
	expect_file(PORT0 "/sm_sl", "0\n");
	expect_file(PORT0 "/cap_mask", "0xa651e848\n");
	expect_file(PORT0 "/link_layer", "InfiniBand\n");
	expect_file(PORT0 "/gids/0", "fe80:0000:0000:0000:a088:c203:612c:4801\n");
	expect_file(PORT0 "/gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n");
	expect_file(PORT0 "/gids/7", "0000:0000:0000:0000:0000:0000:0000:0000\n");
	cr_expect(!exists(PORT0 "/gids/8"));
	expect_file(PORT0 "/pkeys/0", "0xffff\n");
	expect_file(PORT0 "/pkeys/1", "0x0000\n");
	expect_file(PORT0 "/gid_attrs/types/0", "IB/RoCE v1\n");
	expect_file(PORT0 "/counters/port_xmit_data", "1000\n");
	expect_file(PORT0 "/counters/port_rcv_data", "2500\n");
	expect_file(PORT0 "/counters/symbol_error", "7\n");
	expect_file(PORT0 "/counters/multicast_rcv_packets", "18446744073709551615\n");
	expect_file(PORT0 "/counters/VL15_dropped", "0\n");
	expect_file(SYS "/class/infiniband/mlx5_1/ports/1/counters/port_xmit_data", "0\n");
	for (int i = 0; i < STATE_IB_COUNTERS; i++) {
		char rel[256];
		snprintf(rel, sizeof(rel), PORT0 "/counters/%s", state_ib_counter_names[i]);
		cr_expect(exists(rel), "%s", rel);
	}
	expect_file(PORT0 "/hw_counters/lifespan", "10\n");
	expect_file(PORT0 "/hw_counters/out_of_buffer", "0\n");
	cr_expect(!exists(PORT0 "/port_guid"), "not a kernel file");
}

Test(ib_stage, port_state_per_hca)
{
	st.ib.hcas[1].port_state = 1;
	st.ib.hcas[1].phys_state = 3;
	st.ib.rate_gbps = 200;
	stage_ok();
	expect_file(SYS "/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
	expect_file(SYS "/class/infiniband/mlx5_1/ports/1/phys_state", "3: Disabled\n");
	expect_file(PORT0 "/state", "4: ACTIVE\n");
	expect_file(PORT0 "/rate", "200 Gb/sec (4X HDR)\n");
}

Test(ib_stage, kernel_texts)
{
	static const struct {
		int v;
		const char *want;
	} rates[] = {
		{ 100, "100 Gb/sec (4X EDR)" }, { 200, "200 Gb/sec (4X HDR)" },
		{ 400, "400 Gb/sec (4X NDR)" }, { 800, "800 Gb/sec (4X XDR)" },
		{ 56, "56 Gb/sec (4X FDR)" }, { 25, "25 Gb/sec (4X)" },
	}, states[] = {
		{ 1, "1: DOWN" }, { 2, "2: INIT" }, { 3, "3: ARMED" }, { 4, "4: ACTIVE" },
		{ 5, "5: ACTIVE_DEFER" },
	}, phys[] = {
		{ 1, "1: Sleep" }, { 2, "2: Polling" }, { 3, "3: Disabled" },
		{ 4, "4: PortConfigurationTraining" }, { 5, "5: LinkUp" },
		{ 6, "6: LinkErrorRecovery" }, { 7, "7: Phy Test" },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		ib_rate_text(rates[i].v, buf, sizeof(buf));
		cr_expect_str_eq(buf, rates[i].want);
	}
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		ib_state_text(states[i].v, buf, sizeof(buf));
		cr_expect_str_eq(buf, states[i].want);
	}
	for (size_t i = 0; i < sizeof(phys) / sizeof(phys[0]); i++) {
		ib_phys_state_text(phys[i].v, buf, sizeof(buf));
		cr_expect_str_eq(buf, phys[i].want);
	}
}

Test(ib_stage, char_device_classes)
{
	stage_ok();
	expect_file(SYS "/class/infiniband_mad/abi_version", "5\n");
	expect_file(SYS "/class/infiniband_verbs/abi_version", "6\n");
	expect_link(SYS "/class/infiniband_mad/umad0", "../../" HCA0_PCI "/infiniband_mad/umad0");
	expect_link(SYS "/class/infiniband_mad/issm0", "../../" HCA0_PCI "/infiniband_mad/issm0");
	expect_link(SYS "/class/infiniband_verbs/uverbs0",
		    "../../" HCA0_PCI "/infiniband_verbs/uverbs0");
	expect_file(SYS "/class/infiniband_mad/umad0/ibdev", "mlx5_0\n");
	expect_file(SYS "/class/infiniband_mad/umad0/port", "1\n");
	expect_file(SYS "/class/infiniband_mad/umad0/dev", "231:0\n");
	expect_file(SYS "/class/infiniband_mad/umad7/dev", "231:7\n");
	expect_file(SYS "/class/infiniband_mad/umad7/ibdev", "mlx5_7\n");
	expect_file(SYS "/class/infiniband_mad/umad0/uevent",
		    "MAJOR=231\nMINOR=0\nDEVNAME=infiniband/umad0\n");
	expect_file(SYS "/class/infiniband_mad/issm0/ibdev", "mlx5_0\n");
	expect_file(SYS "/class/infiniband_mad/issm0/port", "1\n");
	expect_file(SYS "/class/infiniband_mad/issm3/dev", "231:67\n");
	expect_file(SYS "/class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
	expect_file(SYS "/class/infiniband_verbs/uverbs0/abi_version", "1\n");
	expect_file(SYS "/class/infiniband_verbs/uverbs0/dev", "231:192\n");
	expect_file(SYS "/class/infiniband_verbs/uverbs5/dev", "231:197\n");
	expect_file(SYS "/class/infiniband_verbs/uverbs0/uevent",
		    "MAJOR=231\nMINOR=192\nDEVNAME=infiniband/uverbs0\nDEVMODE=0666\n");
	cr_expect(!exists(SYS "/class/infiniband_verbs/uverbs0/port"));
	expect_link(SYS "/" HCA0_PCI "/infiniband_verbs/uverbs0/device", "../../../0000:1b:00.0");
	expect_link(SYS "/" HCA0_PCI "/infiniband_mad/umad0/subsystem",
		    "../../../../../../class/infiniband_mad");
	/* libibverbs' netlink fallback path. */
	expect_file(IBDEV0 "/device/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
}

Test(ib_stage, device_nodes)
{
	stage_ok();
	expect_chr(R "/ib/dev/infiniband/umad0", 231, 0, 0600);
	expect_chr(R "/ib/dev/infiniband/umad7", 231, 7, 0600);
	expect_chr(R "/ib/dev/infiniband/issm0", 231, 64, 0600);
	expect_chr(R "/ib/dev/infiniband/issm7", 231, 71, 0600);
	expect_chr(R "/ib/dev/infiniband/uverbs0", 231, 192, 0666);
	expect_chr(R "/ib/dev/infiniband/uverbs7", 231, 199, 0666);
	expect_chr(R "/ib/dev/infiniband/rdma_cm", 10, 58, 0666);
	cr_expect(!exists(R "/ib/dev/infiniband/umad8"));
}

Test(ib_stage, dynamic_device_numbers)
{
	struct ib_chrdev d;

	d = ib_umad_dev(63);
	cr_expect(d.major == 231 && d.minor == 63);
	d = ib_umad_dev(64);
	cr_expect(d.major == IB_DYN_MAD_MAJOR && d.minor == 0);
	d = ib_issm_dev(63);
	cr_expect(d.major == 231 && d.minor == 127);
	d = ib_issm_dev(64);
	cr_expect(d.major == IB_DYN_MAD_MAJOR && d.minor == 960);
	d = ib_uverbs_dev(31);
	cr_expect(d.major == 231 && d.minor == 223);
	d = ib_uverbs_dev(32);
	cr_expect(d.major == IB_DYN_VERBS_MAJOR && d.minor == 0);
}

/* Same PCI parent chain as pcibus's own tree in R/sys. */
Test(ib_stage, same_pci_path_as_pcibus)
{
	char a[4096], b[4096];
	ssize_t n;

	stage_ok();
	cr_assert_eq(pcibus_simulator.stage(&ctx, &st, &errs), 0, "%s", errs.e[0].message);
	for (int i = 0; i < st.ib.num_hcas; i++) {
		char rel[256];
		snprintf(rel, sizeof(rel), R "/sys/bus/pci/devices/%s", st.ib.hcas[i].bus_id);
		n = readlink(full(rel), a, sizeof(a) - 1);
		cr_assert_gt(n, 0, "%s", rel);
		a[n] = '\0';
		snprintf(rel, sizeof(rel), SYS "/bus/pci/devices/%s", st.ib.hcas[i].bus_id);
		n = readlink(full(rel), b, sizeof(b) - 1);
		cr_assert_gt(n, 0, "%s", rel);
		b[n] = '\0';
		cr_expect_str_eq(a, b, "HCA %d", i);
	}
	expect_file(R "/sys/bus/pci/devices/0000:1b:00.0/modalias",
		    "pci:v000015B3d00001021sv000015B3sd00000023bc02sc07i00\n");
	expect_link(R "/sys/bus/pci/devices/0000:1b:00.0/driver",
		    "../../../../bus/pci/drivers/mlx5_core");
}

Test(ib_stage, mock_ib_config_and_daemon)
{
	struct ipc_daemon_spec d = { 0 };
	struct state_ib *ib = calloc(1, sizeof(*ib));
	char node[STATE_NAME_MAX], err[256];
	char *json = slurp((stage_ok(), R "/ib/mock-ib.json"));

	cr_assert_not_null(ib);
	cr_assert_eq(state_ib_decode(json, strlen(json), node, ib, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(node, "kind-worker");
	cr_expect_eq(ib->num_hcas, 8);
	cr_expect_eq(ib->hcas[0].lid, 0x4620);
	cr_expect_str_eq(ib->hcas[3].bus_id, st.ib.hcas[3].bus_id);
	free(ib);
	cr_expect(exists(R "/run"), "the socket's directory is staged");
	cr_assert_eq(ib_simulator.daemon(&ctx, &st, &d, &errs), 0);
	cr_expect_str_eq(d.name, "mock-ib");
	cr_expect_null(strchr(d.name, '/'), "a bare name: the supervisor picks the directory");
	cr_expect_str_eq(d.reload_file, R "/ib/mock-ib.json");
	cr_assert_not_null(d.argv[4]);
	cr_expect_str_eq(d.argv[0], "mock-ib");
	cr_expect_str_eq(d.argv[1], "--config");
	cr_expect_str_eq(d.argv[2], R "/ib/mock-ib.json");
	cr_expect_str_eq(d.argv[3], "--host-root");
	cr_expect_str_eq(d.argv[4], tmp);
	cr_expect_null(d.argv[5]);
	ipc_daemon_spec_free(&d);
}

Test(ib_stage, disabled_means_no_daemon)
{
	struct ipc_daemon_spec d = { 0 };

	st.ib.enabled = false;
	stage_ok();
	cr_assert_eq(ib_simulator.daemon(&ctx, &st, &d, &errs), 0);
	cr_expect_eq(d.name[0], '\0');
	cr_expect_null(d.argv[0]);
	cr_expect(!exists(R "/ib"));
}

static int bind_socket(const char *rel)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	cr_assert_geq(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", full(rel));
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
	return fd;
}

Test(ib_stage, readiness_follows_the_socket)
{
	char reason[256] = "";
	int fd;

	stage_ok();
	cr_expect(!ib_simulator.ready(&ctx, &st, reason, sizeof(reason)));
	cr_expect_not_null(strstr(reason, "mock-ib not serving"), "%s", reason);
	fd = bind_socket(R "/run/mock-ib.sock");
	cr_expect(!ib_simulator.ready(&ctx, &st, reason, sizeof(reason)),
		  "a socket nobody listens on is not ready");
	cr_assert_eq(listen(fd, 4), 0);
	cr_expect(ib_simulator.ready(&ctx, &st, reason, sizeof(reason)), "%s", reason);
	close(fd);
	unlink(full(R "/run/mock-ib.sock"));
	st.ib.enabled = false;
	cr_expect(ib_simulator.ready(&ctx, &st, reason, sizeof(reason)));
}

/* A mock-ib killed outright leaves its socket; Discard removes it, so the
 * directory Stage made can go. */
Test(ib_stage, discard_removes_a_stale_socket)
{
	int fd;

	stage_ok();
	close(bind_socket(R "/run/mock-ib.sock"));
	cr_assert_eq(ib_simulator.discard(&ctx, &errs), 0);
	cr_expect(!exists(R "/run/mock-ib.sock"));
	/* A live one is mock-ib's own. */
	fd = bind_socket(R "/run/mock-ib.sock");
	cr_assert_eq(listen(fd, 4), 0);
	cr_assert_eq(ib_simulator.discard(&ctx, &errs), 0);
	cr_expect(exists(R "/run/mock-ib.sock"));
	close(fd);
	unlink(full(R "/run/mock-ib.sock"));
	cr_assert_eq(manifest_remove_stale(ctx.host.root, &prev, NULL), 0);
	cr_expect(!exists(R "/run"));
	cr_expect(!exists(R "/ib"));
}

Test(ib_stage, shims_copied)
{
	stage_ok();
	expect_file(R "/ib/lib/libibmocksys.so", "\177ELF libibmocksys.so");
	expect_file(R "/ib/lib/libibmockumad.so", "\177ELF libibmockumad.so");
	expect_file(R "/ib/lib/libibmockverbs.so", "\177ELF libibmockverbs.so");
}

Test(ib_stage, missing_shim_is_an_error)
{
	char src[4096];

	snprintf(src, sizeof(src), "%s/libibmockumad.so", tmp);
	cr_assert_eq(unlink(src), 0);
	cr_expect_eq(stage_pass(), -ENOENT);
	cr_assert_eq(errs.n, 1);
	cr_expect_str_eq(errs.e[0].surface, "shims");
	cr_expect_not_null(strstr(errs.e[0].message, "libibmockumad.so: not found"), "%s",
			   errs.e[0].message);
	/* The other surfaces still rendered. */
	expect_file(IBDEV0 "/node_type", "1: CA\n");
	expect_file(R "/ib/lib/libibmocksys.so", "\177ELF libibmocksys.so");
}

Test(ib_stage, root_mock_root_is_refused)
{
	snprintf(st.mock_root, sizeof(st.mock_root), "/");
	cr_expect_eq(ib_simulator.stage(&ctx, &st, &errs), -EINVAL);
	cr_assert_geq(errs.n, 1);
	cr_expect_str_eq(errs.e[0].surface, "mock_root");
	cr_expect(!exists("/sys"), "nothing rendered over the host's /sys");
}

Test(ib_stage, bad_hca_name_is_refused)
{
	snprintf(st.ib.hcas[2].name, sizeof(st.ib.hcas[2].name), "..");
	cr_expect_eq(stage_pass(), -EINVAL);
	cr_assert_geq(errs.n, 1);
	cr_expect_not_null(strstr(errs.e[0].message, "HCA 2"), "%s", errs.e[0].message);
	expect_file(IBDEV0 "/node_type", "1: CA\n");
}

Test(ib_stage, unplaceable_hca_is_reported)
{
	struct sim_errors *plan_errs = calloc(1, sizeof(*plan_errs));

	/* The compiler refuses it (that is where the reason is told); a
	 * state planned without it still stages the other HCAs. */
	cr_assert_not_null(plan_errs);
	st.ib.hcas[3].root = 99;
	cr_expect_eq(compile_pci(&st, to_errs, plan_errs), -EINVAL);
	cr_assert_geq(plan_errs->n, 1);
	cr_expect_str_eq(plan_errs->e[0].surface, st.ib.hcas[3].bus_id);
	cr_expect_not_null(strstr(plan_errs->e[0].message, "root 99: no such root complex"), "%s",
			   plan_errs->e[0].message);
	free(plan_errs);
	cr_expect_eq(stage_pass(), -EINVAL);
	cr_assert_geq(errs.n, 1);
	cr_expect_str_eq(errs.e[0].surface, "mlx5_3");
	cr_expect_not_null(strstr(errs.e[0].message, "has no place in the PCI tree"), "%s",
			   errs.e[0].message);
	expect_file(IBDEV0 "/node_type", "1: CA\n");
}

/* ---- convergence and idempotence ---- */

static FILE *snap_out;

static int snap_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	/* Everything that would show a rewrite: inode, size, mtime, mode. */
	fprintf(snap_out, "%s %lu %lld %lld.%09ld %o\n", path, (unsigned long)sb->st_ino,
		(long long)sb->st_size, (long long)sb->st_mtim.tv_sec, sb->st_mtim.tv_nsec,
		(unsigned)sb->st_mode);
	return 0;
}

static char *snapshot(void)
{
	char *buf = NULL;
	size_t len = 0;

	snap_out = open_memstream(&buf, &len);
	cr_assert_not_null(snap_out);
	cr_assert_eq(nftw(full(R "/ib"), snap_one, 16, FTW_PHYS), 0);
	fclose(snap_out);
	return buf;
}

Test(ib_stage, restage_writes_nothing)
{
	char *a, *b;
	size_t n;

	stage_ok();
	n = prev.n;
	a = snapshot();
	usleep(20000);
	stage_ok();
	b = snapshot();
	cr_expect_str_eq(a, b, "a second Stage changed the tree");
	cr_expect_eq(prev.n, n, "same manifest size");
	free(a);
	free(b);
}

Test(ib_stage, converges_8_to_4_to_disabled)
{
	stage_ok();
	cr_assert(exists(SYS "/class/infiniband/mlx5_7"));
	cr_assert(manifest_has(&prev, R "/ib/dev/infiniband/umad7"));
	st.ib.num_hcas = 4;
	cr_assert_eq(compile_pci(&st, NULL, NULL), 0);
	stage_ok();
	cr_expect(exists(SYS "/class/infiniband/mlx5_3"));
	cr_expect(!exists(SYS "/class/infiniband/mlx5_4"));
	cr_expect(!exists(SYS "/class/infiniband_mad/umad4"));
	cr_expect(!exists(SYS "/class/infiniband_verbs/uverbs7"));
	cr_expect(!exists(R "/ib/dev/infiniband/umad4"));
	cr_expect(!exists(R "/ib/dev/infiniband/issm7"));
	cr_expect(!exists(SYS "/bus/pci/devices/0000:9b:00.0"), "mlx5_4's function went away");
	cr_expect(!exists(SYS "/devices/pci0000:80/0000:80:05.0"), "and its root port dir");
	cr_expect(exists(R "/ib/dev/infiniband/uverbs3"));
	st.ib.enabled = false;
	stage_ok();
	cr_expect_eq(prev.n, 0, "nothing owned");
	cr_expect(!exists(R "/ib"), "R/ib removed");
	cr_expect(!exists(R "/run"), "the socket dir removed");
	cr_expect(!exists(R), "R itself removed: it was ours");
}
