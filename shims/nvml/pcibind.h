/* The PCI binding file mokka-pcifs keeps beside the engine config
 * (R/driver/config/pci-drivers, "<bdf> <driver>|-|removed" per line): a
 * GPU the nvidia driver does not hold (bound to vfio-pci, unbound,
 * removed) is not an NVML device, as on a real node.  No file: nothing
 * is hidden. */
#ifndef MOKKA_SHIMS_NVML_PCIBIND_H
#define MOKKA_SHIMS_NVML_PCIBIND_H

#include <stdbool.h>
#include <stdio.h>

/* Beside the engine config in R (mokka-pcifs writes it). */
#define PCIBIND_FILE "/driver/config/pci-drivers"

/* config_path: the engine config; bus_id: the profile's pci.bus_id. */
bool pcibind_detached(const char *config_path, const char *bus_id);
/* The same from the binding file, open (read from its start). */
bool pcibind_detached_in(FILE *f, const char *bus_id);

#endif
