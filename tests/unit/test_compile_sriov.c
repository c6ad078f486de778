/* pcie_topology.gpu_sriov (profile/compile_sriov.c) and how mokka-pcifs
 * turns it into VF slots (pcifs_profile_gpu_sriov, pcifs_model_add_vfs),
 * the PF's SR-IOV capability (sriov_cap.c) and the VF GUID rule of view_ib.c. */
#include "tests/unit/compile_fixture.h"
#include "workers/pcibus/pcifs/pcifs.h"
#include "workers/pcibus/pcifs/view_ib.h"

#define SRIOV(body) HEAD TWO_DEVICES TWO_ROOTS "  gpu_sriov:\n" body	/* from line 27 */

Test(compile, gpu_sriov_accepted)
{
	cr_assert_eq(compile_str("p.yaml", SRIOV("    total_vfs: 32\n    vf_offset: 4\n"
						  "    vf_stride: 1\n    vf_device_id: 0x26b9\n"),
				 NULL), 0, "%s", err);
	state_free(&st);	/* a second compile wants a fresh state */
	state_init(&st);
	cr_assert_eq(compile_str("p.yaml", SRIOV("    total_vfs: 20\n"), NULL), 0, "%s", err);
}

Test(compile, gpu_sriov_refused)
{
	expect_error("p.yaml", SRIOV("    total_vfs: 0\n"),
		     "p.yaml:28:16: pcie_topology.gpu_sriov.total_vfs: 0 is out of range (1..256)");
	expect_error("p.yaml", SRIOV("    total_vfs: 257\n"),
		     "p.yaml:28:16: pcie_topology.gpu_sriov.total_vfs: 257 is out of range (0..256)");
	expect_error("p.yaml", SRIOV("    total_vfs: 4\n    vf_device_id: 0x10000\n"),
		     "p.yaml:29:19: pcie_topology.gpu_sriov.vf_device_id: 0x10000 is out of range");
	expect_error("p.yaml", SRIOV("    vf_offset: 4\n"),
		     "p.yaml:28:5: pcie_topology.gpu_sriov: total_vfs is required");
	expect_error("p.yaml", SRIOV("    total_vfs: many\n"),
		     "p.yaml:28:16: pcie_topology.gpu_sriov.total_vfs: expected a non-negative integer");
}

static void write_config(const char *path, const char *yaml)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(yaml, f);
	fclose(f);
}

Test(compile, pcifs_reads_gpu_sriov_with_defaults)
{
	char path[] = "/tmp/test_compile_sriov.XXXXXX";
	struct pcifs_sriov s;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_config(path, SRIOV("    total_vfs: 16\n"));
	pcifs_profile_gpu_sriov(path, &s);
	cr_assert_eq(s.total_vfs, 16);
	cr_assert_eq(s.offset, 4, "NVIDIA GPUs' First VF Offset by default");
	cr_assert_eq(s.stride, 1);
	cr_assert_eq(s.vf_device, 0, "the PF's device id by default");
	write_config(path, HEAD TWO_DEVICES TWO_ROOTS);
	pcifs_profile_gpu_sriov(path, &s);
	cr_assert_eq(s.total_vfs, 0, "no key: no SR-IOV");
	unlink(path);
}

/* VFs at PF + offset + i * stride, the function number running into the
 * device number (ARI); the VF device id as given. */
Test(compile, gpu_vf_slots)
{
	static struct pcifs_model m;
	struct pcifs_fn f = { .vendor = 0x10de, .device = 0x26b9, .class_code = 0x030200,
			      .present = true, .driver = -1 };

	snprintf(f.bdf, sizeof(f.bdf), "0000:17:00.0");
	snprintf(f.devpath, sizeof(f.devpath), "devices/pci0000:00/0000:00:01.0/0000:17:00.0");
	cr_assert_eq(pcifs_model_add(&m, &f), 0);
	cr_assert_eq(pcifs_model_add_vfs(&m, 0, &(struct pcifs_sriov){ 32, 4, 1, 0x26ba }), 0);
	cr_assert_eq(m.fns[0].totalvfs, 32);
	cr_assert_str_eq(m.fns[1].bdf, "0000:17:00.4");
	cr_assert_str_eq(m.fns[5].bdf, "0000:17:01.0");
	cr_assert_str_eq(m.fns[32].bdf, "0000:17:04.3");
	cr_assert_str_eq(m.fns[1].devpath, "devices/pci0000:00/0000:00:01.0/0000:17:00.4");
	cr_assert_eq(m.fns[1].device, 0x26ba);
	cr_assert(!m.fns[1].present, "VFs wait for sriov_numvfs");
	cr_assert_eq(pcifs_model_add_vfs(&m, 0, &(struct pcifs_sriov){ 4, 0, 1, 0 }), -EINVAL,
		     "offset 0 is the PF itself");
	pcifs_model_free(&m);
}

Test(compile, vf_guid_rule)
{
	cr_assert_eq(view_ib_vf_guid_of(0xa088c20393845800ull, 0), 0xa088c28093845800ull);
	cr_assert_eq(view_ib_vf_guid_of(0xa088c20393845802ull, 7), 0xa088c28793845802ull);
}

/* The SR-IOV capability appended to a PF's extended chain (after AER). */
/* A ConnectX PF with its VF slots: the model the capability is written for. */
static void connectx_pf(struct pcifs_model *m)
{
	struct pcifs_fn f = { .vendor = 0x15b3, .device = 0x1021, .class_code = 0x020700,
			      .present = true, .driver = -1 };

	snprintf(f.bdf, sizeof(f.bdf), "0000:1b:00.0");
	snprintf(f.devpath, sizeof(f.devpath), "devices/pci0000:00/0000:1b:00.0");
	cr_assert_eq(pcifs_model_add(m, &f), 0);
	cr_assert_eq(pcifs_model_add_vfs(m, 0, &pcifs_mlx5_sriov), 0);
}

Test(compile, sriov_capability)
{
	static struct pcifs_model m;
	static uint8_t cs[4096];

	connectx_pf(&m);
	m.fns[0].numvfs = 2;
	cs[0x100] = 0x01, cs[0x102] = 0x02;	/* AER v2, last */
	cr_assert_eq(pcifs_sriov_cap(cs, sizeof(cs), &m, &m.fns[0]), 0);
	cr_assert_eq(cs[0x103] << 4 | cs[0x102] >> 4, 0x180, "AER now points at it");
	cr_assert_eq(cs[0x180] | cs[0x181] << 8, 0x0010, "SR-IOV capability id");
	cr_assert_eq(cs[0x182] | cs[0x183] << 8, 0x0001, "version 1, last");
	cr_assert_eq(cs[0x188] & 0x19, 0x19, "VF Enable, MSE, ARI hierarchy");
	cr_assert_eq(cs[0x18e], 8, "TotalVFs");
	cr_assert_eq(cs[0x190], 2, "NumVFs");
	cr_assert_eq(cs[0x194], 1, "First VF Offset");
	cr_assert_eq(cs[0x19a] | cs[0x19b] << 8, 0x101e, "VF Device ID");
	cr_assert_eq(pcifs_sriov_cap(cs, sizeof(cs), &m, &m.fns[0]), 0, "twice: once");
	cr_assert_eq(cs[0x1c0] | cs[0x1c1], 0);
	pcifs_model_free(&m);
}

/* A broken chain is left alone (libFuzzer found the loop case: the walk
 * gave up after 64 hops and then appended to the looping entry, which
 * broke the chain further); next offsets are read as the kernel reads
 * them, low two bits masked. */
Test(compile, sriov_capability_broken_chains)
{
	static struct pcifs_model m;
	static uint8_t cs[4096], before[4096];

	connectx_pf(&m);
	/* 0x100 -> 0x140 -> 0x100: a loop */
	cs[0x100] = 0x01, cs[0x102] = 0x02, cs[0x103] = 0x14;
	cs[0x140] = 0x0b, cs[0x142] = 0x01, cs[0x143] = 0x10;
	memcpy(before, cs, sizeof(cs));
	cr_assert_eq(pcifs_sriov_cap(cs, sizeof(cs), &m, &m.fns[0]), -1, "a loop");
	cr_assert_eq(memcmp(cs, before, sizeof(cs)), 0, "a looping chain is left alone");
	/* 0x100 -> 0x200, which is empty */
	memset(cs, 0, sizeof(cs));
	cs[0x100] = 0x01, cs[0x102] = 0x02, cs[0x103] = 0x20;
	memcpy(before, cs, sizeof(cs));
	cr_assert_eq(pcifs_sriov_cap(cs, sizeof(cs), &m, &m.fns[0]), -1, "next is empty");
	cr_assert_eq(memcmp(cs, before, sizeof(cs)), 0, "the first capability kept");
	/* 0x100's next is 0x003: reserved bits only, so 0x100 is the last */
	memset(cs, 0, sizeof(cs));
	cs[0x100] = 0x01, cs[0x102] = 0x32;
	cr_assert_eq(pcifs_sriov_cap(cs, sizeof(cs), &m, &m.fns[0]), 0);
	cr_assert_eq(((cs[0x103] << 4 | cs[0x102] >> 4) & 0xffc), 0x180, "appended after 0x100");
	cr_assert_eq(cs[0x180] | cs[0x181] << 8, 0x0010);
	pcifs_model_free(&m);
}
