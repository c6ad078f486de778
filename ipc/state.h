/* The compiled desired state: what the supervisor hands every worker.
 *
 * The supervisor compiles profile + topology + flags into this struct,
 * encodes it once per generation as JSON (state_encode) into a sealed memfd;
 * workers decode it (state_decode).  Workers never see YAML. */
#ifndef MOKKA_IPC_STATE_H
#define MOKKA_IPC_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATE_VERSION 1
#define STATE_MAX_DEVICES 64
#define STATE_MAX_ROOTS 16
#define STATE_NAME_MAX 128

struct state_pcie_link {
	int max_gen, max_width;		/* 1..6, 1..32 */
	int cur_gen, cur_width;
};

struct state_device {
	int index;
	int minor;
	char uuid[STATE_NAME_MAX];		/* GPU-xxxxxxxx-... */
	char serial[STATE_NAME_MAX];
	char name[STATE_NAME_MAX];		/* "NVIDIA H100 80GB HBM3" */
	char architecture[32];
	char bus_id[16];			/* "0000:1a:00.0", lowercased, validated */
	uint16_t vendor_id, device_id;		/* from pci.device_id (dev<<16|vendor) */
	uint16_t subsys_vendor_id, subsys_device_id;
	int numa_node;				/* from the root complex; -1 if none */
	int root;				/* index into topology.roots; -1 if none */
	struct state_pcie_link pcie;
	uint64_t memory_total_bytes;
	uint64_t bar1_total_bytes;
};

struct state_root_complex {
	char id[16];				/* "pci0000:00" */
	int numa_node;
	char cpu_affinity[64];			/* cpulist, e.g. "0-55"; "" = derive */
};

struct state_fabric {
	bool enabled;				/* nvlink.switches or fabric.state auto */
	char state_dir[256];			/* host path of the marker dir */
	long init_delay_ms;
	char cluster_uuid[64];
	uint32_t clique_id;
	int links_per_gpu;
	long bandwidth_per_link_mbps;
};

/* InfiniBand (the reference's `infiniband:` block), identities derived by
 * the compiler (IB.md §1.3) so the sysfs tree, mock-ib and every peer agree. */
#define STATE_MAX_HCAS 256
#define STATE_IB_COUNTERS 21

/* Port counters in IB.md §2.1 order; sysfs file name = the table entry. */
extern const char *const state_ib_counter_names[STATE_IB_COUNTERS];

struct state_hca {
	int index;				/* i of mlx5_<i> */
	char name[16];				/* "mlx5_0" */
	char bus_id[16];			/* PCI function, "0000:1b:00.0" */
	int root;				/* index into roots; -1 if none */
	int numa_node;
	uint64_t node_guid;			/* sys_image_guid = node_guid */
	uint64_t port_guid;			/* node_guid | 1 */
	uint32_t lid;				/* 0x100..0xbfff */
	int port_state;				/* 1 DOWN .. 5 ACTIVE_DEFER */
	int phys_state;				/* 1 Sleep .. 7 Phy Test */
	char node_desc[64];
	uint64_t counters[STATE_IB_COUNTERS];
};

struct state_ib {
	bool enabled;
	char hca_type[16];			/* "MT4129" */
	uint16_t device_id;			/* PCI device id, from hca_type */
	char fw_version[32];
	char hw_rev[16];			/* "0x0" */
	char board_id[32];
	char link_layer[16];			/* "InfiniBand" | "Ethernet" */
	int rate_gbps;				/* 100 EDR, 200 HDR, 400 NDR, 800 XDR */
	uint32_t sm_lid;			/* 1 */
	uint32_t cap_mask;			/* PortInfo CapabilityMask */
	/* Fabric shape and daemon settings. */
	int leaf_ports;				/* CA-facing ports per leaf switch */
	int spines;				/* spine switches (0 = single leaf level) */
	int tcp_port;				/* fabric relay port, 18515 */
	char listen[64];			/* relay listen address, "" = off */
	char peers[1024];			/* "host[:port],..." */
	char socket[256];			/* host path of mock-ib's socket */
	int num_hcas;
	struct state_hca hcas[STATE_MAX_HCAS];
};

/* Container runtime setup (cri, SURFACES.md §2): the supervisor's flags,
 * compiled into the state so every pass carries them. */
struct state_cri {
	char runtime[16];			/* "containerd" | "none" */
	char restart[16];			/* "systemd" | "none" */
	char config[256];			/* host path of containerd's config.toml */
	char config_dir[256];			/* its drop-in directory (under config's dir) */
	char systemd_unit[128];			/* "containerd.service" */
	bool nri;				/* NRI plugin on: NRI table in the drop-in */
	char nri_socket[256];			/* NRI socket, host path */
	char nri_lock[256];			/* staging lock, host path, "" = none */
	char nri_stagedz[128];			/* host:port mokka-nri reads /stagedz at */
};

/* IMEX capability surface (SURFACES.md §3), opt-in.  The archive and its
 * checksum list are paths on the supervisor's machine (not under the host
 * root), like nvidia_smi_src. */
#define STATE_IMEX_MAX_CHANNELS 2048
struct state_imex {
	bool enabled;				/* IMEX_MOCK_CHANNELS / --imex-channels */
	int channel_count;			/* 1..STATE_IMEX_MAX_CHANNELS, 2048 */
	int channel_major;			/* nvidia-caps-imex-channels, 235 */
	int caps_major;				/* nvidia-caps, 236 */
	char archive[1024];			/* .tar.xz or image directory, "" = none */
	char checksums[1024];			/* sha256sum-format list, "" = beside it */
	bool from_profile;			/* on because the profile is multi-node NVLink */
	/* The IMEXDownload feature gate: the pinned archive fetched into
	 * R/cache/imex/<version>/<arch>/archive.tar.xz (workers/imex/fetch.c). */
	bool download;
	char download_url[1024];		/* http:// (https:// only through a proxy) */
	char download_sha256[65];		/* of the archive file, lowercase hex */
	char download_version[32];		/* "595.91.07" */
	char download_arch[32];			/* "linux-x86_64" | "linux-sbsa" */
};

/* The PCI plan (profile/compile_pci.c): every function on the simulated
 * bus (GPUs, HCAs and the root ports above them) with its place in the
 * tree, its identity, IRQ, BARs and bridge windows.  The compiler computes
 * it once, so pcibus (R/sys, /proc/bus/pci), gpudriver (the IRQs in
 * /proc/driver/nvidia) and ib (the HCA's PCI function in R/ib/sys) render
 * the same addresses.  The config space is derived from these fields. */
#define STATE_MAX_ACCELS 32		/* other vendors' accelerators (profile "accelerators") */
#define STATE_PCI_MAX_FNS (2 * (STATE_MAX_DEVICES + STATE_MAX_HCAS + STATE_MAX_ACCELS))	/* + a port each */
#define STATE_PCI_MAX_ROOTS (STATE_MAX_ROOTS + STATE_MAX_DEVICES + STATE_MAX_HCAS)
#define STATE_PCI_NUM_RESOURCES 17	/* kernel: 6 BARs, ROM, 6 IOV, 4 bridge */
#define STATE_PCI_MAX_CPUS 8192		/* the kernel's largest NR_CPUS */

/* ACCEL: another vendor's accelerator (AMD, MetaX, ...): on the bus, never
 * in NVML; its driver is the profile's (state_pci_fn.driver). */
enum state_pci_kind { STATE_PCI_GPU, STATE_PCI_HCA, STATE_PCI_PORT, STATE_PCI_ACCEL,
		      STATE_PCI_KINDS };

/* One accelerator instance of the profile's "accelerators" list
 * (profile/compile_accel.c): input to the PCI plan only. */
struct state_accel {
	char bus_id[16];
	char driver[32];
	uint16_t vendor_id, device_id, subsys_vendor_id, subsys_device_id;
	uint32_t class_code;
	int numa_node;
	int root;			/* index into roots; -1 if none */
};

struct state_pci_res {
	uint64_t start, size;		/* size 0 = empty slot */
	uint32_t flags;			/* kernel IORESOURCE_* | the BAR's type bits */
};

struct state_pci_fn {
	char bdf[16];			/* dddd:bb:dd.f */
	char root_id[16];		/* pcidddd:bb, one of state_pci.roots */
	char parent_bdf[16];		/* the root port above; "" = on the root bus */
	int kind;			/* enum state_pci_kind */
	uint16_t vendor, device, subsys_vendor, subsys_device;
	uint32_t class_code;		/* 0xBBSSPP */
	int revision;			/* 0..255 */
	int irq;
	int numa_node;			/* -1 = none */
	struct state_pcie_link link;	/* every field set */
	int primary_bus, secondary_bus, subordinate_bus;	/* ports */
	int nres;			/* lines in sysfs "resource" */
	struct state_pci_res res[STATE_PCI_NUM_RESOURCES];
	char cpulist[64];		/* local_cpulist, "0-55,112-167" */
	char driver[32];		/* ACCEL: its driver; "" for the other kinds */
};

struct state_pci {
	int ncpus;			/* nr_cpu_ids: the width of cpu masks */
	int num_roots;			/* host bridges */
	char roots[STATE_PCI_MAX_ROOTS][16];
	int num_fns;
	struct state_pci_fn fns[STATE_PCI_MAX_FNS];	/* by domain, bus, devfn */
};

struct state {
	uint64_t generation;
	char node_name[STATE_NAME_MAX];
	char mock_root[256];			/* host path of R, "/var/lib/nvml-mock" */
	char driver_version[32];
	char nvml_version[32];
	char cuda_version[16];

	int num_devices;
	struct state_device devices[STATE_MAX_DEVICES];

	int num_roots;
	struct state_root_complex roots[STATE_MAX_ROOTS];
	int cores_per_numa;			/* 0 = unknown */

	struct state_fabric fabric;
	struct state_ib ib;
	struct state_cri cri;
	struct state_imex imex;
	int num_accels;				/* compile-time input to pci, not encoded */
	struct state_accel accels[STATE_MAX_ACCELS];
	struct state_pci pci;			/* computed by the compiler */

	/* Where kernellog announces Xids (a real path, not under the host
	 * root): --kernel-log / MOCK_NVML_KMSG, "/dev/kmsg"; "" = off. */
	char kernel_log[256];

	/* Where gpudriver takes the real nvidia-smi from ("" = none found). */
	char nvidia_smi_src[4096];

	/* raw documents, NUL-terminated, heap-owned (may be NULL) */
	char *profile_doc;			/* the profile bytes (the engine config) */
	size_t profile_len;
	char *topology_doc;			/* --topology bytes, NULL when none */
	size_t topology_len;
	char *profile_json;			/* the whole profile as JSON, for NVML */
};

void state_init(struct state *s);
void state_free(struct state *s);

/* Encode to a malloc'd NUL-terminated JSON string.  0 or -errno. */
int state_encode(const struct state *s, char **out, size_t *len);

/* Decode JSON produced by state_encode.  On error returns -EINVAL and puts
 * a message in err. */
int state_decode(const char *json, size_t len, struct state *s,
		 char *err, size_t errlen);

/* The InfiniBand part alone, as mock-ib's configuration file (the ib
 * worker writes it, the daemon and its peers read it):
 *   {"node_name": "...", "ib": {... as in the state document ...}}
 * decode fills node_name (size STATE_NAME_MAX) and ib. */
int state_ib_encode(const char *node_name, const struct state_ib *ib, char **out, size_t *len);
int state_ib_decode(const char *json, size_t len, char *node_name, struct state_ib *ib,
		    char *err, size_t errlen);

/* The plan's part of the state document (state_pci.c), called by
 * state_encode/state_decode: "pci": {"ncpus", "roots", "fns": [...]}.
 * The decoder checks counts, names, the tree (parents are ports of the
 * same root, BDFs unique and under their root) and every range. */
struct cJSON;
int state_pci_encode(struct cJSON *root, const struct state_pci *p);
int state_pci_decode(const struct cJSON *root, struct state_pci *p, char *err, size_t errlen);

/* The plan's function at bdf, or NULL. */
const struct state_pci_fn *state_pci_find(const struct state_pci *p, const char *bdf);

/* Parse a kernel cpulist ("0-55,112-167") into a STATE_PCI_MAX_CPUS-bit
 * mask (bits may be NULL: check only); *top gets the highest CPU.  0 or
 * -EINVAL.  state_cpulist_format writes the mask back in canonical form:
 * 0, or -ENAMETOOLONG when it does not fit. */
int state_cpulist_parse(const char *s, uint32_t *bits, int *top);
int state_cpulist_format(const uint32_t *bits, char *buf, size_t len);

/* Validation helpers shared by the compiler and the workers. */
bool state_valid_bdf(const char *s);		/* dddd:bb:dd.f, lowercase hex */
bool state_valid_root_id(const char *s);	/* pcidddd:bb */
bool state_valid_path_component(const char *s);	/* no '/', not . or .., no NUL, <=255 */

#endif
