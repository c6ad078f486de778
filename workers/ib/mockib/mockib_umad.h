/* struct ib_user_mad, the header the kernel's umad char device puts in
 * front of every MAD (IB.md §2.2), parsed from and built into bytes:
 * host-endian u32 agent_id@0 status@4 timeout_ms@8 retries@12 length@16;
 * big-endian qpn@20 qkey@24 lid@28 (u16); sl@30 path_bits@31
 * grh_present@32 gid_index@33 hop_limit@34 tclass@35 gid[16]@36
 * flow_label@52 (BE u32); pkey_index@56 (host u16, 64-byte header only).
 * The MAD follows at 64 (after ENABLE_PKEY) or 56 (legacy). */
#ifndef MOKKA_WORKERS_IB_MOCKIB_UMAD_H
#define MOKKA_WORKERS_IB_MOCKIB_UMAD_H

#include <stddef.h>
#include <stdint.h>

struct mib_uhdr {
	uint32_t agent_id, status, timeout_ms, retries, length;
	uint32_t qpn, qkey;		/* host order here */
	uint16_t lid;
	uint8_t sl, path_bits, grh_present, gid_index, hop_limit, tclass;
	uint8_t gid[16];
	uint32_t flow_label;
	uint16_t pkey_index;
};

/* hdr_len is 64 or 56; buf holds at least hdr_len bytes.  0 or -EINVAL. */
int mib_uhdr_parse(const uint8_t *buf, size_t len, size_t hdr_len, struct mib_uhdr *h);
/* Writes hdr_len bytes (the reserved tail zeroed). */
void mib_uhdr_build(uint8_t *buf, size_t hdr_len, const struct mib_uhdr *h);

/* MAD header fields every part of the daemon looks at (IB.md §2.7). */
#define MIB_MAD_HDR 24
static inline uint8_t mib_mad_class(const uint8_t *m) { return m[1]; }
static inline uint8_t mib_mad_version(const uint8_t *m) { return m[2]; }
static inline uint8_t mib_mad_method(const uint8_t *m) { return m[3]; }
uint64_t mib_be64(const uint8_t *p);
void mib_put_be64(uint8_t *p, uint64_t v);
static inline uint64_t mib_mad_tid(const uint8_t *m) { return mib_be64(m + 8); }
/* Vendor range 2 (0x30..0x4f) carries an OUI at MAD bytes 37..39. */
static inline int mib_class_has_oui(uint8_t c) { return c >= 0x30 && c <= 0x4f; }
#define MIB_MAD_VENDOR_HDR 40		/* common + RMPP header, reserved byte, OUI */
/* Whether len bytes hold every header field the daemon reads of this MAD:
 * the common header, and the OUI for vendor range 2.  Every MAD from a
 * client or a peer passes this before anyone looks inside. */
static inline int mib_mad_fits(const uint8_t *m, size_t len)
{
	return len >= MIB_MAD_HDR && (!mib_class_has_oui(m[1]) || len >= MIB_MAD_VENDOR_HDR);
}
static inline int mib_method_is_response(uint8_t m) { return (m & 0x80) != 0; }

#endif
