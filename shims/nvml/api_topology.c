/* PCIe/NUMA topology between GPUs and CPU/memory affinity, computed from
 * the profile's pcie_topology: GPUs under one root complex meet at the host
 * bridge, root complexes of one NUMA node meet at the node, the rest at
 * the system level.  NVLink reachability overlays P2P status. */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shims/nvml/nvml_types.h"

static bool same_bdf(const char *a, const char *b)
{
	unsigned d1, b1, s1, f1, d2, b2, s2, f2;

	return nvml_parse_bdf(a, &d1, &b1, &s1, &f1) &&
	       nvml_parse_bdf(b, &d2, &b2, &s2, &f2) &&
	       d1 == d2 && b1 == b2 && s1 == s2 && f1 == f2;
}

/* Index of the root complex listing the device, -1 when none does. */
static int root_complex(struct mdev *d)
{
	char key[96];
	const char *s;
	size_t n = engine_len("pcie_topology.root_complexes");

	for (size_t r = 0; r < n; r++) {
		snprintf(key, sizeof(key), "pcie_topology.root_complexes[%zu].devices", r);
		size_t m = engine_len(key);

		for (size_t j = 0; j < m; j++) {
			snprintf(key, sizeof(key),
				 "pcie_topology.root_complexes[%zu].devices[%zu]", r, j);
			if (engine_str(key, &s) && same_bdf(s, mdev_bus_id(d)))
				return (int)r;
		}
	}
	return -1;
}

int nvml_topology_level(struct mdev *a, struct mdev *b)
{
	int ra, rb, na, nb;

	if (a == b)
		return NVML_TOPOLOGY_INTERNAL;
	ra = root_complex(a);
	rb = root_complex(b);
	if (ra >= 0 && ra == rb)
		return NVML_TOPOLOGY_HOSTBRIDGE;
	na = mdev_numa_node(a);
	nb = mdev_numa_node(b);
	if (na >= 0 && na == nb)
		return NVML_TOPOLOGY_NODE;
	return NVML_TOPOLOGY_SYSTEM;
}

NVML_API(nvmlDeviceGetTopologyCommonAncestor, nvmlDevice_t device1,
	 nvmlDevice_t device2, unsigned *level)
{
	struct mdev *a, *b;
	nvmlReturn_t rc = nvml_dev(device1, &a);

	if (rc || (rc = nvml_dev(device2, &b)))
		return rc;
	if (!level)
		return NVML_ERROR_INVALID_ARGUMENT;
	*level = (unsigned)nvml_topology_level(a, b);
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetNumaNodeId, nvmlDevice_t device, unsigned *node)
{
	struct mdev *d;
	int n;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!node)
		return NVML_ERROR_INVALID_ARGUMENT;
	n = mdev_numa_node(d);
	if (n < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*node = (unsigned)n;
	return NVML_SUCCESS;
}

/* Fills a device list the NVML way: with *count 0 only the size is
 * reported; otherwise up to *count entries. */
static nvmlReturn_t device_list(struct mdev *const *found, unsigned n,
				unsigned *count, nvmlDevice_t *out)
{
	if (*count == 0 || !out) {
		*count = n;
		return NVML_SUCCESS;
	}
	if (*count < n) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned i = 0; i < n; i++)
		out[i] = found[i];
	*count = n;
	return NVML_SUCCESS;
}

NVML_API(nvmlDeviceGetTopologyNearestGpus, nvmlDevice_t device, unsigned level,
	 unsigned *count, nvmlDevice_t *devices)
{
	struct mdev *d, *found[ENG_MAX_DEVICES];
	unsigned n = 0;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!count || level > NVML_TOPOLOGY_SYSTEM)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < engine_device_count() && n < ENG_MAX_DEVICES; i++) {
		struct mdev *o = engine_device(i);

		if (o && o != d && (unsigned)nvml_topology_level(d, o) <= level)
			found[n++] = o;
	}
	return device_list(found, n, count, devices);
}

/* ---- CPU lists --------------------------------------------------------- */

/* Calls fn for every CPU of a cpulist ("0-55,112-167"). */
static void each_cpu(const char *list, void (*fn)(unsigned cpu, void *arg), void *arg)
{
	const char *p = list;

	while (p && *p) {
		char *end;
		unsigned long lo = strtoul(p, &end, 10), hi = lo;

		if (end == p)
			break;
		if (*end == '-')
			hi = strtoul(end + 1, &end, 10);
		for (unsigned long c = lo; c <= hi && c < 65536; c++)
			fn((unsigned)c, arg);
		p = *end == ',' ? end + 1 : NULL;
	}
}

struct cpu_mask {
	unsigned long *bits;
	unsigned words;
};

static void set_cpu(unsigned cpu, void *arg)
{
	struct cpu_mask *m = arg;
	unsigned w = cpu / (8 * sizeof(unsigned long));

	if (w < m->words)
		m->bits[w] |= 1UL << (cpu % (8 * sizeof(unsigned long)));
}

/* The host's online CPUs (sched affinity when sysfs does not say). */
static bool host_cpus(struct cpu_mask *m)
{
	char buf[4096];
	ssize_t n = -1;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	cpu_set_t set;

	memset(m->bits, 0, m->words * sizeof(*m->bits));
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n > 0) {
		buf[n] = '\0';
		each_cpu(buf, set_cpu, m);
		return true;
	}
	if (sched_getaffinity(0, sizeof(set), &set))
		return false;
	for (unsigned c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			set_cpu(c, m);
	return true;
}

/* The device's CPUs: its root complex's cpulist, clamped to the CPUs this
 * host has (consumers such as Slurm reject CPUs that do not exist), or all
 * of the host's when none of the profile's exists here. */
#define CPU_WORDS (CPU_SETSIZE / (8 * sizeof(unsigned long)))

static bool affinity_mask(struct mdev *d, struct cpu_mask *m)
{
	unsigned long online[CPU_WORDS];
	struct cpu_mask host = { online, CPU_WORDS };
	const char *list = mdev_cpu_affinity(d);
	bool any = false;

	if (!list || !*list)
		return false;
	memset(m->bits, 0, m->words * sizeof(*m->bits));
	each_cpu(list, set_cpu, m);
	if (!host_cpus(&host))
		return true;
	for (unsigned w = 0; w < m->words; w++)
		any |= (m->bits[w] &= w < CPU_WORDS ? online[w] : 0) != 0;
	if (!any)
		for (unsigned w = 0; w < m->words && w < CPU_WORDS; w++)
			m->bits[w] = online[w];
	return true;
}

NVML_API(nvmlDeviceGetCpuAffinity, nvmlDevice_t device, unsigned size,
	 unsigned long *cpu_set)
{
	struct mdev *d;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!size || !cpu_set)
		return NVML_ERROR_INVALID_ARGUMENT;
	return affinity_mask(d, &(struct cpu_mask){ cpu_set, size }) ? NVML_SUCCESS
								      : NVML_ERROR_NOT_SUPPORTED;
}

NVML_API(nvmlDeviceGetCpuAffinityWithinScope, nvmlDevice_t device, unsigned size,
	 unsigned long *cpu_set, unsigned scope)
{
	if (scope > NVML_AFFINITY_SCOPE_SOCKET)
		return nvml_ready() ? NVML_ERROR_UNINITIALIZED : NVML_ERROR_INVALID_ARGUMENT;
	return nvmlDeviceGetCpuAffinity(device, size, cpu_set);
}

NVML_API(nvmlDeviceGetMemoryAffinity, nvmlDevice_t device, unsigned size,
	 unsigned long *node_set, unsigned scope)
{
	struct mdev *d;
	int node;
	nvmlReturn_t rc = nvml_dev(device, &d);

	if (rc)
		return rc;
	if (!size || !node_set || scope > NVML_AFFINITY_SCOPE_SOCKET)
		return NVML_ERROR_INVALID_ARGUMENT;
	node = mdev_numa_node(d);
	if (node < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	memset(node_set, 0, size * sizeof(*node_set));
	set_cpu((unsigned)node, &(struct cpu_mask){ node_set, size });
	return NVML_SUCCESS;
}

/* The GPUs whose (clamped) affinity includes the CPU. */
NVML_API(nvmlSystemGetTopologyGpuSet, unsigned cpu, unsigned *count,
	 nvmlDevice_t *devices)
{
	struct mdev *found[ENG_MAX_DEVICES];
	unsigned long bits[CPU_WORDS];
	unsigned n = 0, bpw = 8 * sizeof(unsigned long);
	nvmlReturn_t rc = nvml_ready();

	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < engine_device_count() && n < ENG_MAX_DEVICES; i++) {
		struct mdev *o = engine_device(i);

		if (o && cpu / bpw < CPU_WORDS &&
		    affinity_mask(o, &(struct cpu_mask){ bits, CPU_WORDS }) &&
		    (bits[cpu / bpw] >> (cpu % bpw) & 1))
			found[n++] = o;
	}
	return device_list(found, n, count, devices);
}

/* ---- peer-to-peer ------------------------------------------------------ */

/* NVLink peers can do everything; over PCIe, reads and writes stay within
 * a NUMA node and NVLink-only capabilities are unavailable. */
NVML_API(nvmlDeviceGetP2PStatus, nvmlDevice_t device1, nvmlDevice_t device2,
	 unsigned caps, unsigned *status)
{
	struct mdev *a, *b;
	nvmlReturn_t rc = nvml_dev(device1, &a);

	if (rc || (rc = nvml_dev(device2, &b)))
		return rc;
	if (!status || caps >= NVML_P2P_CAPS_INDEX_UNKNOWN)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (a == b || nvml_nvlink_peers(a, b))
		*status = NVML_P2P_STATUS_OK;
	else if (caps == NVML_P2P_CAPS_INDEX_NVLINK)
		*status = NVML_P2P_STATUS_NOT_SUPPORTED;
	else if (nvml_topology_level(a, b) <= NVML_TOPOLOGY_NODE)
		*status = NVML_P2P_STATUS_OK;
	else
		*status = NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED;
	return NVML_SUCCESS;
}
