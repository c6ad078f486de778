/*
 * libibmockverbs.so, part 1: the libibverbs device API, answered from the
 * device's sysfs files.
 *
 * Device discovery stays the real libibverbs' (sysfs scan through
 * libibmocksys or an overlay, or NLDEV through the netlink emulation in
 * ibmockverbs_netlink.c).  What it cannot do without a kernel driver is
 * open the uverbs char device, so with MOCK_IB=full or sysfs these entry
 * points are replaced: ibv_open_device returns a plain context (abi_compat
 * is not the "extended" marker, so the inline helpers fall back to the
 * exported query functions below), and every query reads
 * <ibdev_path>/... through open(), which a redirect shim maps when it is
 * preloaded too.  Data-path verbs are out of scope.
 *
 * Unversioned definitions in a preload satisfy the tools' versioned
 * references (ibv_query_port@IBVERBS_1.1 etc.).  No libibverbs symbol is
 * referenced at link time: with MOCK_IB off (or for a context this shim
 * did not make) calls go to the next definition, looked up by name.
 */
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "shims/ib/ibshim.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Not in the installed headers: rdma-core's private driver.h. */
enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
	IBV_GID_TYPE_SYSFS_ROCE_V2,
};

EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
			      unsigned int index,
			      enum ibv_gid_type_sysfs *type);

#define MLX_VENDOR_ID 0x02c9	/* IEEE OUI Mellanox, as mlx5 reports it */
#define MOCK_MAX_PORTS 32

/* Our contexts carry this in abi_compat: not __VERBS_ABI_IS_EXTENDED, so
 * libibverbs' inline helpers use the legacy exported entry points. */
static const char ctx_marker;

struct mock_ctx {
	struct ibv_context ctx;
	int nports;
};

static bool active(void)
{
	return ibshim_cfg()->mode != IBSHIM_OFF;
}

static bool is_mock(const struct ibv_context *ctx)
{
	return ctx && ctx->abi_compat == (void *)&ctx_marker;
}

/* ---- sysfs reads ------------------------------------------------------- */

/* Reads <ibdev_path>/<fmt...> into out (trailing whitespace cut).
 * Returns the length or -errno. */
static int read_attr(const struct ibv_device *dev, char *out, size_t len,
		     const char *fmt, ...)
{
	char rel[128], path[PATH_MAX];
	va_list ap;
	ssize_t n;
	int fd, err;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	if (snprintf(path, sizeof(path), "%s/%s", dev->ibdev_path, rel) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);	/* global: redirected */
	if (fd < 0)
		return -errno;
	n = read(fd, out, len - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	while (n > 0 && isspace((unsigned char)out[n - 1]))
		n--;
	out[n] = '\0';
	return (int)n;
}

static unsigned long attr_ul(const struct ibv_device *dev, unsigned long dflt,
			     const char *fmt, unsigned port)
{
	char b[64];

	if (read_attr(dev, b, sizeof(b), fmt, port) <= 0)
		return dflt;
	return strtoul(b, NULL, 0);	/* "0x101", "4: ACTIVE", "0" */
}

/* "xxxx:xxxx:xxxx:xxxx" -> big-endian u64 as verbs reports GUIDs. */
static __be64 attr_guid(const struct ibv_device *dev, const char *name)
{
	char b[64], hex[17];
	size_t k = 0;

	if (read_attr(dev, b, sizeof(b), "%s", name) <= 0)
		return 0;
	for (const char *s = b; *s && k < 16; s++)
		if (isxdigit((unsigned char)*s))
			hex[k++] = *s;
	hex[k] = '\0';
	return htobe64(strtoull(hex, NULL, 16));
}

/* Entries of <ibdev_path>/<rel> that are numbers (ports, gids, pkeys). */
static int count_entries(const struct ibv_device *dev, const char *rel)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int n = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dev->ibdev_path, rel) >=
	    (int)sizeof(path))
		return 0;
	d = opendir(path);	/* global: redirected */
	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (isdigit((unsigned char)e->d_name[0]))
			n++;
	closedir(d);
	return n;
}

/* ---- rate -> width / speed --------------------------------------------- */

static const struct { unsigned lanes; uint8_t width; } widths[] = {
	{ 1, 1 }, { 4, 2 }, { 8, 4 }, { 12, 8 }, { 2, 16 },
};

/* Speed codes of ibv_port_attr.active_speed, by kernel name and by
 * per-lane rate (for "(4X)" without a name). */
static const struct { const char *name; unsigned lane_x10; uint8_t code; } speeds[] = {
	{ "SDR", 25, 1 }, { "DDR", 50, 2 }, { "QDR", 100, 4 },
	{ "FDR10", 0, 8 }, { "FDR", 140, 16 }, { "EDR", 250, 32 },
	{ "HDR", 500, 64 }, { "NDR", 1000, 128 },
};

/* "400 Gb/sec (4X NDR)" -> width 2 (4X), speed 128 (NDR). */
static void parse_rate(const char *rate, uint8_t *width, uint8_t *speed)
{
	const char *p = strchr(rate, '(');
	unsigned lanes, total_x10;
	char name[16] = "";
	double gbps;

	*width = 2;
	*speed = 128;
	if (!p || sscanf(p + 1, "%uX %15[A-Z0-9]", &lanes, name) < 1)
		return;
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
		if (widths[i].lanes == lanes)
			*width = widths[i].width;
	if (name[0]) {
		for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
			if (strcmp(speeds[i].name, name) == 0)
				*speed = speeds[i].code;
		return;
	}
	if (sscanf(rate, "%lf", &gbps) != 1 || !lanes)
		return;
	total_x10 = (unsigned)(gbps * 10 / lanes + 0.5);
	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (speeds[i].lane_x10 == total_x10)
			*speed = speeds[i].code;
}

/* ---- next definitions (pass-through) ----------------------------------- */

#define NEXT(name)							\
	static void *slot_##name;					\
	__typeof__(name) *next_fn =					\
		(__typeof__(name) *)ibshim_next(&slot_##name, #name)

/* ---- open / close ------------------------------------------------------ */

EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct mock_ctx *m;
	char b[64];

	if (!active()) {
		NEXT(ibv_open_device);
		if (!next_fn) {
			errno = ENOSYS;
			return NULL;
		}
		return next_fn(device);
	}
	if (!device) {
		errno = EINVAL;
		return NULL;
	}
	/* The same files ibstat needs: a device without them is gone. */
	if (read_attr(device, b, sizeof(b), "node_guid") <= 0) {
		errno = ENODEV;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->ctx.device = device;
	m->ctx.cmd_fd = -1;
	m->ctx.async_fd = -1;
	m->ctx.num_comp_vectors = 1;
	pthread_mutex_init(&m->ctx.mutex, NULL);
	m->ctx.abi_compat = (void *)&ctx_marker;
	m->nports = count_entries(device, "ports");
	if (m->nports < 1)
		m->nports = 1;
	if (m->nports > MOCK_MAX_PORTS)
		m->nports = MOCK_MAX_PORTS;
	return &m->ctx;
}

EXPORT int ibv_close_device(struct ibv_context *context)
{
	if (!is_mock(context)) {
		NEXT(ibv_close_device);
		return next_fn ? next_fn(context) : ENOSYS;
	}
	pthread_mutex_destroy(&context->mutex);
	free(context);
	return 0;
}

/* ---- query_device ------------------------------------------------------ */

/* ConnectX-7 limits as mlx5 reports them. */
static void cx7_limits(struct ibv_device_attr *a)
{
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffffffffffff000ull;
	a->max_qp = 131072;
	a->max_qp_wr = 32768;
	a->device_cap_flags = 0x25321c36;	/* only flags libibverbs names */
	a->max_sge = 30;
	a->max_sge_rd = 30;
	a->max_cq = 16777216;
	a->max_cqe = 4194303;
	a->max_mr = 16777216;
	a->max_pd = 8388608;
	a->max_qp_rd_atom = 16;
	a->max_res_rd_atom = 2097152;
	a->max_qp_init_rd_atom = 16;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mw = 16777216;
	a->max_mcast_grp = 2097152;
	a->max_mcast_qp_attach = 240;
	a->max_total_mcast_qp_attach = 503316480;
	a->max_ah = INT32_MAX;
	a->max_srq = 8388608;
	a->max_srq_wr = 32767;
	a->max_srq_sge = 31;
	a->max_pkeys = 128;
	a->local_ca_ack_delay = 16;
}

EXPORT int ibv_query_device(struct ibv_context *context,
			    struct ibv_device_attr *attr)
{
	const struct ibv_device *dev;
	char b[64];

	if (!is_mock(context)) {
		NEXT(ibv_query_device);
		return next_fn ? next_fn(context, attr) : ENOSYS;
	}
	dev = context->device;
	memset(attr, 0, sizeof(*attr));
	if (read_attr(dev, b, sizeof(b), "fw_ver") > 0)
		snprintf(attr->fw_ver, sizeof(attr->fw_ver), "%s", b);
	attr->node_guid = attr_guid(dev, "node_guid");
	attr->sys_image_guid = attr_guid(dev, "sys_image_guid");
	attr->vendor_id = MLX_VENDOR_ID;
	if (read_attr(dev, b, sizeof(b), "hca_type") > 0 &&
	    strncmp(b, "MT", 2) == 0)
		attr->vendor_part_id = (uint32_t)strtoul(b + 2, NULL, 10);
	attr->hw_ver = (uint32_t)attr_ul(dev, 0, "hw_rev", 0);
	cx7_limits(attr);
	attr->phys_port_cnt = (uint8_t)((struct mock_ctx *)context)->nports;
	return 0;
}

/* ---- query_port -------------------------------------------------------- */

static bool port_ok(struct ibv_context *context, unsigned port)
{
	return port >= 1 && port <= (unsigned)((struct mock_ctx *)context)->nports;
}

/*
 * The exported symbol takes the pre-flags "compat" struct; the inline
 * ibv_query_port() in verbs.h cleared the caller's whole struct first.
 * So fill only the fields up to link_layer.  (The name is parenthesised
 * so the verbs.h macro of the same name does not expand.)
 */
EXPORT int (ibv_query_port)(struct ibv_context *context, uint8_t port_num,
			    struct _compat_ibv_port_attr *compat)
{
	struct ibv_port_attr a;
	const struct ibv_device *dev;
	char b[64], rel[64];

	if (!is_mock(context)) {
		int (*next_fn)(struct ibv_context *, uint8_t,
			       struct _compat_ibv_port_attr *);
		static void *slot;

		next_fn = (int (*)(struct ibv_context *, uint8_t,
				   struct _compat_ibv_port_attr *))
			ibshim_next(&slot, "ibv_query_port");
		return next_fn ? next_fn(context, port_num, compat) : ENOSYS;
	}
	if (!port_ok(context, port_num))
		return EINVAL;
	dev = context->device;
	memset(&a, 0, sizeof(a));
	a.state = (enum ibv_port_state)attr_ul(dev, IBV_PORT_DOWN, "ports/%u/state", port_num);
	a.phys_state = (uint8_t)attr_ul(dev, 3, "ports/%u/phys_state", port_num);
	a.lid = (uint16_t)attr_ul(dev, 0, "ports/%u/lid", port_num);
	a.sm_lid = (uint16_t)attr_ul(dev, 0, "ports/%u/sm_lid", port_num);
	a.lmc = (uint8_t)attr_ul(dev, 0, "ports/%u/lid_mask_count", port_num);
	a.sm_sl = (uint8_t)attr_ul(dev, 0, "ports/%u/sm_sl", port_num);
	a.port_cap_flags = (uint32_t)attr_ul(dev, 0, "ports/%u/cap_mask", port_num);
	a.link_layer = IBV_LINK_LAYER_INFINIBAND;
	if (read_attr(dev, b, sizeof(b), "ports/%u/link_layer", port_num) > 0 &&
	    strcmp(b, "Ethernet") == 0)
		a.link_layer = IBV_LINK_LAYER_ETHERNET;
	a.active_width = 2;
	a.active_speed = 128;
	if (read_attr(dev, b, sizeof(b), "ports/%u/rate", port_num) > 0)
		parse_rate(b, &a.active_width, &a.active_speed);
	a.max_mtu = IBV_MTU_4096;
	a.active_mtu = IBV_MTU_4096;
	snprintf(rel, sizeof(rel), "ports/%u/gids", port_num);
	a.gid_tbl_len = count_entries(dev, rel);
	snprintf(rel, sizeof(rel), "ports/%u/pkeys", port_num);
	a.pkey_tbl_len = (uint16_t)count_entries(dev, rel);
	a.max_msg_sz = 0x40000000;
	a.max_vl_num = 3;	/* encoded: 4 VLs */
	a.subnet_timeout = 18;
	memcpy(compat, &a, offsetof(struct ibv_port_attr, link_layer) + 1);
	return 0;
}

/* ---- GIDs and P_Keys --------------------------------------------------- */

/* gids/N "fe80:0000:...:0001" -> 16 bytes.  0 or -errno. */
static int read_gid(struct ibv_context *context, unsigned port, unsigned index,
		    union ibv_gid *gid)
{
	char b[64];
	int n;

	if (!port_ok(context, port))
		return -EINVAL;
	n = read_attr(context->device, b, sizeof(b), "ports/%u/gids/%u", port, index);
	if (n < 0)
		return n;
	if (inet_pton(AF_INET6, b, gid->raw) != 1)
		return -EINVAL;
	return 0;
}

EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num,
			 int index, union ibv_gid *gid)
{
	int rc;

	if (!is_mock(context)) {
		NEXT(ibv_query_gid);
		return next_fn ? next_fn(context, port_num, index, gid) : -1;
	}
	rc = index < 0 ? -EINVAL : read_gid(context, port_num, (unsigned)index, gid);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

/* The kernel's gid_attrs/types/N; IB ports read "IB/RoCE v1", and a file
 * that is missing or refuses (EINVAL on IB) means the same. */
static enum ibv_gid_type_sysfs read_gid_type(struct ibv_context *context,
					     unsigned port, unsigned index)
{
	char b[32];

	if (read_attr(context->device, b, sizeof(b), "ports/%u/gid_attrs/types/%u",
		      port, index) > 0 && strcmp(b, "RoCE v2") == 0)
		return IBV_GID_TYPE_SYSFS_ROCE_V2;
	return IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
}

EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
			      unsigned int index,
			      enum ibv_gid_type_sysfs *type)
{
	if (!is_mock(context)) {
		NEXT(ibv_query_gid_type);
		return next_fn ? next_fn(context, port_num, index, type) : -1;
	}
	if (!port_ok(context, port_num)) {
		errno = EINVAL;
		return -1;
	}
	*type = read_gid_type(context, port_num, index);
	return 0;
}

EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
			     uint32_t gid_index, struct ibv_gid_entry *entry,
			     uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e = { 0 };
	char b[32];
	int rc;

	if (!is_mock(context)) {
		NEXT(_ibv_query_gid_ex);
		return next_fn ? next_fn(context, port_num, gid_index, entry,
					 flags, entry_size) : ENOSYS;
	}
	if (flags || entry_size < sizeof(e))
		return EINVAL;
	rc = read_gid(context, port_num, gid_index, &e.gid);
	if (rc < 0)
		return -rc;
	if (!e.gid.global.subnet_prefix && !e.gid.global.interface_id)
		return ENODATA;	/* an unused table slot, like the kernel */
	e.gid_index = gid_index;
	e.port_num = port_num;
	if (read_attr(context->device, b, sizeof(b), "ports/%u/link_layer", port_num) > 0 &&
	    strcmp(b, "Ethernet") == 0)
		e.gid_type = read_gid_type(context, port_num, gid_index) ==
			     IBV_GID_TYPE_SYSFS_ROCE_V2 ? IBV_GID_TYPE_ROCE_V2 :
							  IBV_GID_TYPE_ROCE_V1;
	else
		e.gid_type = IBV_GID_TYPE_IB;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num,
			  int index, __be16 *pkey)
{
	char b[32];
	int n;

	if (!is_mock(context)) {
		NEXT(ibv_query_pkey);
		return next_fn ? next_fn(context, port_num, index, pkey) : -1;
	}
	if (!port_ok(context, port_num) || index < 0) {
		errno = EINVAL;
		return -1;
	}
	n = read_attr(context->device, b, sizeof(b), "ports/%u/pkeys/%d", port_num, index);
	if (n <= 0) {
		errno = n < 0 ? -n : EINVAL;
		return -1;
	}
	*pkey = htobe16((uint16_t)strtoul(b, NULL, 16));
	return 0;
}
