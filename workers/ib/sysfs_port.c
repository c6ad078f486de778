/* infiniband/mlx5_N/ports/1, in the kernel's formats
 * (drivers/infiniband/core/sysfs.c): what ibstat, ibstatus, libibumad,
 * libibverbs and node-exporter parse. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "workers/ib/ib.h"

static const char *const port_states[] = {
	"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
};

static const char *const phys_states[] = {
	"<unknown>", "Sleep", "Polling", "Disabled", "PortConfigurationTraining",
	"LinkUp", "LinkErrorRecovery", "Phy Test",
};

/* 4X rates the kernel can print, with their speed name. */
static const struct {
	int gbps;
	const char *speed;
} rates[] = {
	{ 10, "SDR" }, { 20, "DDR" }, { 40, "QDR" }, { 56, "FDR" },
	{ 100, "EDR" }, { 200, "HDR" }, { 400, "NDR" }, { 800, "XDR" },
};

/* mlx5's per-port driver counters (mlx5_ib counters.c names, IB link). */
static const char *const hw_counters[] = {
	"duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err",
	"out_of_buffer", "out_of_sequence", "packet_seq_err", "req_cqe_error",
	"req_cqe_flush_error", "req_remote_access_errors", "req_remote_invalid_request",
	"resp_cqe_error", "resp_cqe_flush_error", "resp_local_length_error",
	"resp_remote_access_errors", "rnr_nak_retry_err", "rx_atomic_requests",
	"rx_read_requests", "rx_write_requests",
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

void ib_rate_text(int gbps, char *buf, size_t len)
{
	for (size_t i = 0; i < N(rates); i++)
		if (rates[i].gbps == gbps) {
			snprintf(buf, len, "%d Gb/sec (4X %s)", gbps, rates[i].speed);
			return;
		}
	snprintf(buf, len, "%d Gb/sec (4X)", gbps);
}

void ib_state_text(int state, char *buf, size_t len)
{
	snprintf(buf, len, "%d: %s", state,
		 state >= 0 && state < (int)N(port_states) ? port_states[state] : "UNKNOWN");
}

void ib_phys_state_text(int phys, char *buf, size_t len)
{
	snprintf(buf, len, "%d: %s", phys,
		 phys > 0 && phys < (int)N(phys_states) ? phys_states[phys] : phys_states[0]);
}

/* %pI6: eight zero-padded 16-bit groups. */
static void gid_text(uint64_t prefix, uint64_t guid, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x:%04x:%04x:%04x:%04x",
		 (unsigned)(prefix >> 48) & 0xffff, (unsigned)(prefix >> 32) & 0xffff,
		 (unsigned)(prefix >> 16) & 0xffff, (unsigned)prefix & 0xffff,
		 (unsigned)(guid >> 48) & 0xffff, (unsigned)(guid >> 32) & 0xffff,
		 (unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);
}

static void tables(struct ib_out *o, const struct state_hca *h, const char *port)
{
	char path[4200], gid[64];

	for (int i = 0; i < IB_NUM_GIDS; i++) {
		/* GID 0 is the link-local prefix + port GUID; the rest unused. */
		gid_text(i ? 0 : 0xfe80000000000000ULL, i ? 0 : h->port_guid, gid, sizeof(gid));
		snprintf(path, sizeof(path), "%s/gids/%d", port, i);
		ib_put(o, path, 0444, "%s\n", gid);
		snprintf(path, sizeof(path), "%s/gid_attrs/types/%d", port, i);
		ib_put(o, path, 0444, "IB/RoCE v1\n");
	}
	for (int i = 0; i < IB_NUM_PKEYS; i++) {
		snprintf(path, sizeof(path), "%s/pkeys/%d", port, i);
		ib_put(o, path, 0444, "0x%04x\n", i ? 0 : 0xffff);
	}
}

static void counters(struct ib_out *o, const struct state_hca *h, const char *port)
{
	char path[4200];

	for (int i = 0; i < STATE_IB_COUNTERS; i++) {
		snprintf(path, sizeof(path), "%s/counters/%s", port, state_ib_counter_names[i]);
		ib_put(o, path, 0444, "%" PRIu64 "\n", h->counters[i]);
	}
	for (size_t i = 0; i < N(hw_counters); i++) {
		snprintf(path, sizeof(path), "%s/hw_counters/%s", port, hw_counters[i]);
		ib_put(o, path, 0444, "0\n");
	}
	snprintf(path, sizeof(path), "%s/hw_counters/lifespan", port);
	ib_put(o, path, 0644, "10\n");
}

int ib_render_port(struct ib_out *o, const struct state_ib *ib, const struct state_hca *h,
		   const char *dir)
{
	char port[4096], path[4200], text[64];
	int before = o->first;

	if ((size_t)snprintf(port, sizeof(port), "%s/ports/1", dir) >= sizeof(port))
		return ib_fail(o, dir, -ENAMETOOLONG, "ports/1: path too long");
	o->first = 0;
	ib_state_text(h->port_state, text, sizeof(text));
	snprintf(path, sizeof(path), "%s/state", port);
	ib_put(o, path, 0444, "%s\n", text);
	ib_phys_state_text(h->phys_state, text, sizeof(text));
	snprintf(path, sizeof(path), "%s/phys_state", port);
	ib_put(o, path, 0444, "%s\n", text);
	ib_rate_text(ib->rate_gbps, text, sizeof(text));
	snprintf(path, sizeof(path), "%s/rate", port);
	ib_put(o, path, 0444, "%s\n", text);
	snprintf(path, sizeof(path), "%s/lid", port);
	ib_put(o, path, 0444, "0x%x\n", h->lid);
	snprintf(path, sizeof(path), "%s/lid_mask_count", port);
	ib_put(o, path, 0444, "0\n");
	snprintf(path, sizeof(path), "%s/sm_lid", port);
	ib_put(o, path, 0444, "0x%x\n", ib->sm_lid);
	snprintf(path, sizeof(path), "%s/sm_sl", port);
	ib_put(o, path, 0444, "0\n");
	snprintf(path, sizeof(path), "%s/cap_mask", port);
	ib_put(o, path, 0444, "0x%08x\n", ib->cap_mask);
	snprintf(path, sizeof(path), "%s/link_layer", port);
	ib_put(o, path, 0444, "%s\n", ib->link_layer);
	tables(o, h, port);
	counters(o, h, port);
	int r = o->first;
	o->first = before ? before : r;
	return r;
}
