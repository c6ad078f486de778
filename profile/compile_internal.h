/* Shared by the profile compiler's files, not part of its API (that is
 * profile/compile.h):
 *   compile.c           entry point, system/fabric/options, state assembly
 *   compile_schema.c    key tables and schema walk; error reporting and
 *                       typed, range-checked extraction (cc_*)
 *   compile_devices.c   devices[] merged over device_defaults
 *   compile_topology.c  pcie_topology root complexes; the ComputeDomain
 *                       topology document */
#ifndef MOKKA_SUPERVISOR_COMPILE_INTERNAL_H
#define MOKKA_SUPERVISOR_COMPILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/state.h"
#include "profile/yaml_tree.h"

/* The file source caps what it reads; the compiler refuses more anyway so
 * a direct caller cannot make it build a huge tree. */
#define COMPILE_MAX_INPUT (4u << 20)
#define KEY_PATH_MAX 192

struct cctx {
	const char *file;
	char *err;
	size_t errlen;
	bool strict;		/* unknown keys are errors, not warnings */
};

/* A device entry while compiling: the compiled fields plus the nodes that
 * errors found later (duplicates, topology) must point at. */
struct dev_build {
	struct state_device d;
	const struct ynode *entry, *bus;
	char bus_path[KEY_PATH_MAX];
};

/* compile_schema.c: errors and paths. */

/* Fills err with "FILE:LINE:COL: PATH: why"; returns -EINVAL. */
int cc_fail(struct cctx *c, const struct ynode *at, const char *path,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void cc_join_key(char *dst, const char *base, const char *key);
void cc_join_index(char *dst, const char *base, size_t i);
const char *cc_text(const struct ynode *n);

/* compile_schema.c: the schema walk (unknown keys warned, types checked). */
int compile_check_profile(struct cctx *c, const struct ynode *root);
int compile_check_topology(struct cctx *c, const struct ynode *doc);

/* compile_schema.c: typed extraction. */
const struct ynode *cc_lookup(const struct ynode *map, const char *dotted);
int cc_get_int(struct cctx *c, const struct ynode *n, const char *path,
	       int64_t lo, int64_t hi, int64_t *out);
int cc_get_u64(struct cctx *c, const struct ynode *n, const char *path,
	       uint64_t hi, uint64_t *out);
/* Copy a scalar into buf; a null or absent node gives "". */
int cc_get_str(struct cctx *c, const struct ynode *n, const char *path,
	       char *buf, size_t size);
/* A BDF value: lowercased, pattern-checked, safe as a path component. */
int cc_get_bdf(struct cctx *c, const struct ynode *n, const char *path,
	       char *buf, size_t size);
void cc_lowercase(char *s);
bool cc_all_chars(const char *s, const char *set);

/* compile_devices.c: fills b[0..*count) sorted by index. */
int compile_devices(struct cctx *c, const struct ynode *root,
		    struct dev_build *b, int *count);

/* compile_ib.c: after devices and topology (HCAs sit next to GPUs). */
struct compile_opts;
int compile_ib(struct cctx *c, const struct ynode *root, const struct compile_opts *o,
	       struct state *s);
uint32_t compile_ib_fnv1a32(const char *s);

/* compile_accel.c: other vendors' accelerators (input to the PCI plan). */
int compile_accel(struct cctx *c, const struct ynode *root, struct state *s);
/* compile_sriov.c: pcie_topology.gpu_sriov, checked (mokka-pcifs reads it). */
int compile_sriov(struct cctx *c, const struct ynode *root);

/* compile_cri.c: the container runtime flags (defaults when unset). */
int compile_cri(struct cctx *c, const struct compile_opts *o, struct state_cri *cri);

/* compile_imex.c: the IMEX settings (on by the flag, or by a multi-node
 * NVLink profile), the IMEXDownload gate and the kernel log path. */
int compile_imex(struct cctx *c, const struct ynode *root, const struct compile_opts *o,
		 struct state *s);

/* compile_pci.c: the PCI plan, last (it places everything above); its
 * first problem is the compile error. */
int compile_pci_plan(struct cctx *c, const struct ynode *root, const struct dev_build *devs,
		     int ndevs, struct state *s);

/* compile_topology.c */
int compile_topology(struct cctx *c, const struct ynode *root,
		     struct dev_build *devs, int ndevs, struct state *s);
int compile_topology_doc(struct cctx *c, const char *topo, size_t len,
			 const char *node_name, bool has_fabric, struct state *s);

/* compile_mig.c: declared MIG layouts (mig-enabled, mig-devices) fit their board. */
int compile_mig(struct cctx *c, const struct ynode *root);

#endif
