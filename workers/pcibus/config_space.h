/* PCI configuration space of one simulated function, as the kernel exposes
 * it in sysfs <bdf>/config and /proc/bus/pci/<bus>/<dev>.<fn>: a PCIe
 * endpoint (the GPU, header type 0) or a PCIe root port (header type 1). */
#ifndef MOKKA_WORKERS_PCIBUS_CONFIG_SPACE_H
#define MOKKA_WORKERS_PCIBUS_CONFIG_SPACE_H

#include <stdbool.h>
#include <stdint.h>

#define CONFIG_SPACE_SIZE 4096		/* PCIe extended config space */
#define CONFIG_SPACE_LEGACY_SIZE 256	/* what conventional PCI has */

enum config_space_type {
	CONFIG_SPACE_ENDPOINT,		/* type 0 header, PCIe endpoint */
	CONFIG_SPACE_ROOT_PORT,		/* type 1 header, PCIe root port */
};

struct config_space_bar {
	uint64_t addr;		/* bus address, aligned to size */
	uint64_t size;		/* power of two >= 16; 0 = unused slot */
	bool mem64;		/* 64-bit: also takes the next slot */
	bool prefetch;
};

/* A bridge forwarding window; size 0 = closed. 1 MiB granularity. */
struct config_space_window {
	uint64_t base, size;
};

struct config_space_params {
	enum config_space_type type;
	uint16_t vendor, device;
	uint16_t subsys_vendor, subsys_device;
	uint32_t class_code;		/* base<<16 | sub<<8 | prog-if */
	uint8_t revision;
	uint8_t irq_line;
	uint8_t port_number;		/* Link Capabilities "Port #" */
	int max_gen, max_width;		/* gen 1..6; width 1,2,4,8,12,16,32 */
	int cur_gen, cur_width;		/* negotiated, <= max */
	struct config_space_bar bars[6];	/* endpoint only */
	/* root port only */
	uint8_t primary_bus, secondary_bus, subordinate_bus;
	struct config_space_window mem;		/* 32-bit non-prefetchable */
	struct config_space_window prefetch;	/* 64-bit prefetchable */
};

/* Fill out with the whole 4096-byte space.  0, or -EINVAL when a parameter
 * is outside what the hardware can encode (link gen/width, BAR layout,
 * window alignment). */
int config_space_build(uint8_t out[CONFIG_SPACE_SIZE], const struct config_space_params *p);

#endif
