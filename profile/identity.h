/* A node of its own (issue 15): the identities a board carries — GPU
 * UUIDs, board serials (nvidia-smi's "Serial Number", shared by the GPUs
 * of one board), chassis serials — and the InfiniBand node/port/system
 * image GUIDs, derived from the node name so that two nodes running the
 * same profile never share one, and the same node gets the same ones on
 * every start.
 *
 * The profile's values are the template: each derived value is a hash of
 * (node name, what it is, the template value, the GPU index), shaped like
 * the real thing: an RFC 4122-shaped "GPU-xxxxxxxx-xxxx-4xxx-yxxx-
 * xxxxxxxxxxxx" UUID, a 13-digit serial keeping the template's first 4
 * digits (NVIDIA's product prefix), a GUID keeping the vendor OUI.  GPUs
 * that share a serial in the profile (a GB200 superchip's pair) share the
 * derived one; different template serials stay different.
 *
 * When: the profile's top-level `node_identity:` says so — `pinned` keeps
 * the profile's identities exactly as written, `derived` derives them
 * from whatever node name the node has — else they derive when the node
 * was named: by $NODE_NAME (the DaemonSet's downward API, the systemd
 * unit's %H) or by --node-name (mokka-supervisor's and the workers'; like
 * NVIDIA's node programs, which take the flag with $NODE_NAME as its
 * default), and stay as written for the hostname fallback (one-off runs;
 * tests that check the profile's literal UUIDs pin them or name no node).
 * The InfiniBand GUIDs always follow the node name (the reference's rule,
 * IB.md §1.3; the profile carries no per-HCA GUIDs to pin). */
#ifndef MOKKA_PROFILE_IDENTITY_H
#define MOKKA_PROFILE_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDENTITY_KEY "node_identity"
#define IDENTITY_UUID_LEN 41		/* "GPU-" + 36 + NUL */
#define IDENTITY_SERIAL_LEN 14		/* 13 digits + NUL */

/* The GPU UUID for GPU index of node, from the profile's uuid tmpl ("" =
 * none).  out holds IDENTITY_UUID_LEN bytes. */
void identity_gpu_uuid(const char *node, const char *tmpl, int index, char *out);

/* A 13-digit serial for node from the template serial tmpl: its first 4
 * digits (when it has 4 leading digits; else "1650") and 9 from the hash
 * of (node, kind, tmpl, salt).  kind separates the serial spaces ("board",
 * "chassis"); salt breaks the rare clash of two templates.  out holds
 * IDENTITY_SERIAL_LEN bytes. */
void identity_serial(const char *node, const char *kind, const char *tmpl, unsigned salt,
		     char *out);

/* FNV-1a-32 of the node name (0 for none): the reference's node id. */
uint32_t identity_node_id(const char *node);

/* HCA idx's node GUID (= its system image GUID): the top 32 bits of the
 * profile's guid_prefix (the vendor OUI and one byte) over 23 bits of the
 * node id and the index; the port GUID is this | 1. */
uint64_t identity_ib_node_guid(uint32_t prefix_hi, const char *node, int idx);

enum identity_mode { IDENTITY_DEFAULT, IDENTITY_PINNED, IDENTITY_DERIVED };

/* The profile's node identity (yaml, len), with node (NULL/"" = none) and
 * by_default (--node-name or $NODE_NAME named the node).  When the identities
 * derive, *out is a malloc'd copy of the profile with every devices[]
 * entry's uuid and serial (and platform.chassis_serial_number, and
 * device_defaults' serials) derived and `node_identity: pinned` set, so
 * that compiling it again keeps them; else *out is NULL and the profile
 * stands as written.  A document libyaml cannot read is left to the
 * compiler to report (0, *out NULL).  0, -EINVAL (a bad node_identity,
 * "NAME:LINE:COL: node_identity: why" in err) or -ENOMEM. */
int identity_apply(const char *name, const char *yaml, size_t len, const char *node,
		   bool by_default, char **out, size_t *olen, char *err, size_t errlen);

#endif
