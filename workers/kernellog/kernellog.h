/* kernellog: announces injected Xids on the kernel log the way the real
 * driver prints them (SURFACES.md §6, §11.4).
 *
 *   simulator.c  the worker: Stage writes the device map R/kernellog/devices
 *                (index, PCI address, UUID, board serial), and describes
 *                the daemon; Discard also forgets the announced state
 *   daemon.c     mokka-kernellog: every second and on SIGHUP reads the
 *                overrides document and writes each new injection once
 *   announce.c   the driver's lines, the Xid catalog text, the device map
 *                and the announced state R/state/kernellog.announced (so
 *                neither a worker nor a daemon restart repeats an Xid)
 *
 * An injection is a line of mokka-ctl's Xid journal (overrides.h: every
 * one, in order, so 50 at once are 50 announcements), or a GPU's effective
 * failure.xid (code, seq) in the document that no journal line carries (a
 * hand edit); code 0 (none) forgets the GPU's document Xid, so re-injecting
 * a code without a seq is a new event.  Read, announce and record happen
 * under a flock on R/kernellog, so two daemons on one root (an orphan of a
 * killed supervisor beside the new one) never announce one twice; with the
 * device map gone (teardown) a daemon announces and writes nothing. */
#ifndef MOKKA_WORKERS_KERNELLOG_KERNELLOG_H
#define MOKKA_WORKERS_KERNELLOG_KERNELLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KLOG_DIR "/kernellog"				/* under R: the lock */
#define KLOG_DEVICES KLOG_DIR "/devices"		/* under R */
#define KLOG_ANNOUNCED "/state/kernellog.announced"	/* under R */
#define KLOG_MAX_DEVICES 64
#define KLOG_LINE_MAX 384
#define KLOG_MAX_LINES 4

struct klog_dev {
	unsigned index;
	char bdf[16];		/* "0000:4a:00.0", lowercase, validated */
	char uuid[96];		/* "GPU-...", [0-9A-Za-z-] */
	char serial[64];	/* board serial, "" = unknown */
};

/* The device map: one line per GPU, "index bdf uuid serial" ("-" = no
 * serial).  Lines that fail the checks (log injection) are skipped with a
 * message in warn (when not NULL).  Returns the count or -errno. */
int klog_devices_parse(const char *text, struct klog_dev *out, int max,
		       void (*warn)(const char *msg));
bool klog_valid_uuid(const char *s);
bool klog_valid_serial(const char *s);

/* The lines of one announcement, each with the "kernel: " prefix and its
 * "<level>" for /dev/kmsg, newline-terminated: the identity lines when
 * identity is set, the Xid line, and Xid 79's follow-up.  Returns n. */
int klog_render(const struct klog_dev *d, uint64_t code, bool identity,
		char lines[KLOG_MAX_LINES][KLOG_LINE_MAX]);
/* The catalog text of an Xid ("GPU has fallen off the bus." for 79). */
const char *klog_xid_text(uint64_t code);

/* The announced state, re-read under the lock before every pass: per GPU
 * the last document Xid announced (code, seq), the newest journal seq
 * announced for it (jseq) and whether its identity lines were printed;
 * and the journal seq up to which every line was announced on every GPU
 * it names (journal).  Lines: "journal SEQ" and
 * "index bdf code seq jseq identified" (the older "index bdf code seq" is
 * read too). */
struct klog_entry {
	unsigned index;
	char bdf[16];
	uint64_t code, seq;
	uint64_t jseq;
	bool identified;
};
struct klog_announced {
	int n;
	uint64_t journal;
	struct klog_entry e[KLOG_MAX_DEVICES];
};
/* Parse the state file's text (bad lines ignored). */
void klog_announced_parse(const char *text, struct klog_announced *a);
/* Render it; malloc'd. */
char *klog_announced_render(const struct klog_announced *a);
struct klog_entry *klog_announced_find(struct klog_announced *a, unsigned index);
/* The entry of index, added (zeroed, bdf set) when missing; NULL when full. */
struct klog_entry *klog_announced_get(struct klog_announced *a, unsigned index, const char *bdf);
void klog_announced_drop(struct klog_announced *a, unsigned index);

#endif
