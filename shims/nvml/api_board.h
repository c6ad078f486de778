/* Board facts nvidia-smi 535 reads through export-table slots (slot numbers
 * and argument shapes found by disassembling its callers; see
 * shims/nvml/api_board.c).  Each takes the table's four machine words. */
#ifndef MOKKA_NVML_API_BOARD_H
#define MOKKA_NVML_API_BOARD_H

#include <stdint.h>

#include "shims/nvml/nvml_types.h"

/* 226: PCIe atomics (dev, struct { unsigned outbound, inbound; } *). */
nvmlReturn_t nvml_slot_atomic_caps(uintptr_t dev, uintptr_t out, uintptr_t a2, uintptr_t a3);
/* 209: graphics voltage (dev, unsigned *microvolts); nvidia-smi prints mV. */
nvmlReturn_t nvml_slot_graphics_voltage(uintptr_t dev, uintptr_t out, uintptr_t a2, uintptr_t a3);
/* 242: addressing mode (dev, unsigned *): 0 None, 1 HMM, 2 ATS. */
nvmlReturn_t nvml_slot_addressing_mode(uintptr_t dev, uintptr_t out, uintptr_t a2, uintptr_t a3);
/* 243: sparse operation mode (dev, unsigned *): 0 Disabled, else Enabled. */
nvmlReturn_t nvml_slot_sparse_mode(uintptr_t dev, uintptr_t out, uintptr_t a2, uintptr_t a3);

#endif
