/* Fuzz the PF SR-IOV capability writer of mokka-pcifs (sriov_cap.c): it
 * walks a config space's extended capability chain, which comes from a
 * file, to append its capability.  Any 4096 bytes: no read or write out
 * of the space, the walk ends, and where it wrote, the chain as the kernel
 * and lspci walk it (next offsets' low two bits masked) reaches the
 * capability.  The input's first two bytes pick TotalVFs and NumVFs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/pcibus/pcifs/view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pcifs_model m;
	uint8_t *cs = calloc(1, 4096);
	struct pcifs_fn f = { .vendor = 0x10de, .device = 0x26b9, .present = true, .driver = -1 };
	int total = size > 0 ? data[0] % 33 : 4;

	if (!cs)
		return 0;
	memset(&m, 0, sizeof(m));
	snprintf(f.bdf, sizeof(f.bdf), "0000:17:00.0");
	snprintf(f.devpath, sizeof(f.devpath), "devices/pci0000:00/0000:17:00.0");
	pcifs_model_add(&m, &f);
	pcifs_model_add_vfs(&m, 0, &(struct pcifs_sriov){ total, 4, 1, 0 });
	m.fns[0].numvfs = size > 1 && total ? data[1] % (total + 1) : 0;
	memcpy(cs, data, size < 4096 ? size : 4096);
	if (pcifs_sriov_cap(cs, 4096, &m, &m.fns[0]) == 0 && total) {
		unsigned off = 0x100, hops = 0;
		uint32_t h;

		/* The chain from 0x100 reaches an SR-IOV header. */
		do {
			h = (uint32_t)cs[off] | (uint32_t)cs[off + 1] << 8 |
			    (uint32_t)cs[off + 2] << 16 | (uint32_t)cs[off + 3] << 24;
			if ((h & 0xffff) == 0x0010)
				break;
			off = (h >> 20) & 0xffc;
		} while (off >= 0x100 && off <= 4092 && ++hops < 64);
		if ((h & 0xffff) != 0x0010 && hops < 64 && off) {
			fprintf(stderr, "chain does not reach the SR-IOV capability\n");
			abort();
		}
	}
	pcifs_model_free(&m);
	free(cs);
	return 0;
}
