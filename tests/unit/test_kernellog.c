/* kernellog's text (workers/kernellog/announce.c): the driver's lines,
 * the catalog, the device map's checks against log injection, and the
 * announced state round trip. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "workers/kernellog/kernellog.h"

static const struct klog_dev gpu2 = {
	.index = 2, .bdf = "0000:3a:00.0",
	.uuid = "GPU-33f5f413-57a2-5cf8-5aa0-7d60d5ee907a", .serial = "1653923026510",
};

TestSuite(kernellog);

Test(kernellog, xid79_with_identity)
{
	char l[KLOG_MAX_LINES][KLOG_LINE_MAX];

	cr_assert_eq(klog_render(&gpu2, 79, true, l), 4);
	cr_assert_str_eq(l[0], "<4>kernel: NVRM: GPU at PCI:0000:3a:00: "
			       "GPU-33f5f413-57a2-5cf8-5aa0-7d60d5ee907a\n");
	cr_assert_str_eq(l[1], "<4>kernel: NVRM: GPU Board Serial Number: 1653923026510\n");
	cr_assert_str_eq(l[2], "<3>kernel: NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', "
			       "name=<unknown>, GPU has fallen off the bus.\n");
	cr_assert_str_eq(l[3], "<3>kernel: NVRM: GPU 0000:3a:00.0: GPU has fallen off the bus.\n");
}

Test(kernellog, later_xids_without_identity)
{
	char l[KLOG_MAX_LINES][KLOG_LINE_MAX];
	struct klog_dev noserial = gpu2;

	cr_assert_eq(klog_render(&gpu2, 48, false, l), 1);
	cr_assert_str_eq(l[0], "<3>kernel: NVRM: Xid (PCI:0000:3a:00): 48, pid='<unknown>', "
			       "name=<unknown>, DBE (Double Bit Error) ECC Error\n");
	noserial.serial[0] = '\0';
	cr_assert_eq(klog_render(&noserial, 13, true, l), 2, "no serial line without a serial");
	/* gpud's pattern wants the comma after the code */
	cr_assert(strstr(l[1], ": 13, pid="));
}

Test(kernellog, catalog)
{
	static const unsigned codes[] = { 13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95,
					  119, 120, 136, 140, 143, 144, 145, 146, 147, 148, 149,
					  150, 154 };

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		cr_assert_str_neq(klog_xid_text(codes[i]), "Error", "Xid %u has no text", codes[i]);
	cr_assert_str_eq(klog_xid_text(999), "Error");
	for (unsigned c = 144; c <= 150; c++)
		cr_assert(strstr(klog_xid_text(c), "Link 0 (0x"), "NVL5 pattern for %u", c);
}

static void warn_count(const char *msg)
{
}

Test(kernellog, device_map_rejects_injection)
{
	struct klog_dev d[8];
	int n = klog_devices_parse(
		"# comment\n"
		"0 0000:1a:00.0 GPU-0000 S1\n"
		"1 0000:1B:00.0 GPU-1111 S2\n"			/* uppercase address */
		"2 0000:2a:00.0 GPU-2222;rm S3\n"		/* junk in the uuid */
		"3 0000:3a:00.0 GPU-3333 S3 extra\n"		/* too many fields */
		"4 ../../etc GPU-4444 -\n"
		"5 0000:5a:00.0 GPU-5555 \x1b[31m\n"
		"6 0000:6a:00.0 GPU-6666 -\n",
		d, 8, warn_count);

	cr_assert_eq(n, 2);
	cr_assert_eq(d[0].index, 0);
	cr_assert_str_eq(d[0].serial, "S1");
	cr_assert_eq(d[1].index, 6);
	cr_assert_str_eq(d[1].serial, "", "'-' is no serial");
	cr_assert_not(klog_valid_uuid("GPU-"));
	cr_assert_not(klog_valid_uuid("MIG-1234"));
	cr_assert_not(klog_valid_serial("a b"));
}

Test(kernellog, announced_round_trip)
{
	struct klog_announced a = { 0 }, b = { 0 };
	char *text;

	klog_announced_parse("# header\n2 0000:3a:00.0 79 1700000000000000\n"
			     "2 0000:3a:00.0 48 1\n"		/* a second entry for 2: ignored */
			     "3 0000:4a:00.0 0 5\n"		/* code 0: nothing announced */
			     "4 bad 79 1\nx\n5 0000:5a:00.0 48 0\n", &a);
	cr_assert_eq(a.n, 2);
	cr_assert_eq(klog_announced_find(&a, 2)->seq, 1700000000000000ull);
	text = klog_announced_render(&a);
	klog_announced_parse(text, &b);
	free(text);
	cr_assert_eq(b.n, 2);
	cr_assert_eq(klog_announced_find(&b, 5)->code, 48);
	klog_announced_drop(&b, 2);
	cr_assert_null(klog_announced_find(&b, 2));
	cr_assert_eq(b.n, 1);
}

/* The state since issue 20: the journal mark, and per GPU the journal seq
 * and the identity flag; a cleared document Xid (code 0) keeps its entry. */
Test(kernellog, announced_state_with_journal)
{
	struct klog_announced a = { 0 }, b = { 0 };
	struct klog_entry *e;
	char *text;

	klog_announced_parse("journal 1700000000000042\n"
			     "2 0000:3a:00.0 79 5 1700000000000042 1\n"
			     "3 0000:4a:00.0 0 0 1700000000000040 0\n"	/* cleared, journal kept */
			     "4 0000:5a:00.0 48 1\n"			/* the older four fields */
			     "5 0000:6a:00.0 48 1 2 7\n"		/* identified not 0/1 */
			     "6 0000:7a:00.0 48 1 2\n"			/* five fields */
			     "journal x\n", &a);
	cr_assert_eq(a.journal, 1700000000000042ull);
	cr_assert_eq(a.n, 3);
	cr_assert(klog_announced_find(&a, 2)->identified);
	cr_assert_eq(klog_announced_find(&a, 3)->jseq, 1700000000000040ull);
	cr_assert_eq(klog_announced_find(&a, 4)->jseq, 0);
	cr_assert_not(klog_announced_find(&a, 4)->identified);
	text = klog_announced_render(&a);
	klog_announced_parse(text, &b);
	free(text);
	cr_assert_eq(b.n, 3);
	cr_assert_eq(b.journal, a.journal);
	cr_assert_eq(klog_announced_find(&b, 3)->code, 0);
	e = klog_announced_get(&b, 9, "0000:9a:00.0");
	cr_assert_not_null(e);
	cr_assert_eq(b.n, 4);
	cr_assert_eq(e->jseq, 0);
	cr_assert_eq(klog_announced_get(&b, 9, "x"), e, "an existing entry is returned");
}
