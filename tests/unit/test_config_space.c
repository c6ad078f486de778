/* config_space_build: the bytes lspci and libpci decode. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <string.h>

#include "workers/pcibus/config_space.h"

static uint8_t cs[CONFIG_SPACE_SIZE];

static unsigned rd16(unsigned off)
{
	return cs[off] | cs[off + 1] << 8;
}

static uint32_t rd32(unsigned off)
{
	return rd16(off) | (uint32_t)rd16(off + 2) << 16;
}

static struct config_space_params gpu(int gen, int width)
{
	struct config_space_params p = {
		.type = CONFIG_SPACE_ENDPOINT,
		.vendor = 0x10de, .device = 0x2330,
		.subsys_vendor = 0x10de, .subsys_device = 0x16c1,
		.class_code = 0x030200, .revision = 0xa1, .irq_line = 42,
		.max_gen = gen, .max_width = width, .cur_gen = gen, .cur_width = width,
	};
	p.bars[0] = (struct config_space_bar){ 0x90000000, 16 << 20, false, false };
	p.bars[1] = (struct config_space_bar){ 0x200000000000ULL, 128ULL << 30, true, true };
	p.bars[3] = (struct config_space_bar){ 0x202000000000ULL, 32 << 20, true, true };
	return p;
}

static struct config_space_params port(void)
{
	struct config_space_params p = {
		.type = CONFIG_SPACE_ROOT_PORT,
		.vendor = 0x8086, .device = 0x2030, .subsys_vendor = 0x8086,
		.class_code = 0x060400, .revision = 0x04, .port_number = 3,
		.max_gen = 5, .max_width = 16, .cur_gen = 5, .cur_width = 16,
		.primary_bus = 0x80, .secondary_bus = 0x81, .subordinate_bus = 0x81,
		.mem = { 0x91000000, 16 << 20 },
		.prefetch = { 0x210000000000ULL, (128ULL << 30) + (32 << 20) },
	};
	return p;
}

/* Walk the capability list; the offset of cap id, 0 when absent.  Fails
 * the test on a list that does not terminate or points into the header. */
static unsigned find_cap(uint8_t id)
{
	unsigned off = cs[0x34], found = 0;

	for (int hops = 0; off; hops++) {
		cr_assert_lt(hops, 48, "capability list does not terminate");
		cr_assert_geq(off, 0x40, "capability at 0x%x inside the header", off);
		cr_assert_eq(off & 3, 0, "capability at 0x%x not dword aligned", off);
		if (cs[off] == id && !found)
			found = off;
		off = cs[off + 1];
	}
	return found;
}

Test(config_space, endpoint_identity)
{
	struct config_space_params p = gpu(5, 16);

	cr_assert_eq(config_space_build(cs, &p), 0);
	cr_assert_eq(cs[0], 0xde);
	cr_assert_eq(cs[1], 0x10);
	cr_assert_eq(rd16(0x02), 0x2330);
	cr_assert_eq(cs[0x08], 0xa1, "revision");
	cr_assert_eq(cs[0x09], 0x00, "prog-if");
	cr_assert_eq(cs[0x0a], 0x02, "subclass");
	cr_assert_eq(cs[0x0b], 0x03, "base class");
	cr_assert_eq(cs[0x0e], 0x00, "header type 0");
	cr_assert_eq(rd16(0x2c), 0x10de);
	cr_assert_eq(rd16(0x2e), 0x16c1);
	cr_assert(rd16(0x06) & 0x10, "status: capability list");
	cr_assert(rd16(0x04) & 0x2, "command: memory space");
	cr_assert_eq(cs[0x3c], 42);
	cr_assert_eq(cs[0x3d], 1, "INTA");
}

Test(config_space, endpoint_bars_match_layout)
{
	struct config_space_params p = gpu(5, 16);

	cr_assert_eq(config_space_build(cs, &p), 0);
	cr_assert_eq(rd32(0x10), 0x90000000, "BAR0: 32-bit non-prefetchable");
	cr_assert_eq(rd32(0x14), 0x0000000c, "BAR1 low: 64-bit prefetchable");
	cr_assert_eq(rd32(0x18), 0x00002000, "BAR1 high");
	cr_assert_eq(rd32(0x1c), 0x0000000c, "BAR3 low");
	cr_assert_eq(rd32(0x20), 0x00002020, "BAR3 high");
	cr_assert_eq(rd32(0x24), 0, "BAR5 unused");
}

Test(config_space, endpoint_capabilities_present)
{
	struct config_space_params p = gpu(4, 16);
	unsigned exp;

	cr_assert_eq(config_space_build(cs, &p), 0);
	cr_assert_neq(find_cap(0x01), 0, "power management");
	cr_assert_neq(find_cap(0x05), 0, "MSI");
	cr_assert_neq(find_cap(0x11), 0, "MSI-X");
	exp = find_cap(0x10);
	cr_assert_neq(exp, 0, "PCI Express");
	cr_assert_eq((rd16(exp + 2) >> 4) & 0xf, 0, "device/port type: endpoint");
	cr_assert_eq(rd16(exp + 2) & 0xf, 2, "capability version 2");
	cr_assert(rd32(exp + 4) & (1u << 28), "function level reset");
}

struct link_case {
	int gen, width;
};

ParameterizedTestParameters(config_space, link_fields)
{
	static struct link_case cases[] = {
		{ 1, 1 }, { 2, 4 }, { 3, 8 }, { 4, 16 }, { 5, 16 }, { 6, 32 }, { 5, 12 },
	};
	return cr_make_param_array(struct link_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct link_case *c, config_space, link_fields)
{
	struct config_space_params p = gpu(c->gen, c->width);
	unsigned exp;
	uint32_t lnkcap;

	cr_assert_eq(config_space_build(cs, &p), 0);
	exp = find_cap(0x10);
	lnkcap = rd32(exp + 0x0c);
	cr_assert_eq(lnkcap & 0xf, (unsigned)c->gen, "LnkCap speed");
	cr_assert_eq((lnkcap >> 4) & 0x3f, (unsigned)c->width, "LnkCap width");
	cr_assert_eq(lnkcap >> 24, 0, "endpoint port number 0");
	cr_assert_eq(rd16(exp + 0x12) & 0xf, (unsigned)c->gen, "LnkSta speed");
	cr_assert_eq((rd16(exp + 0x12) >> 4) & 0x3f, (unsigned)c->width, "LnkSta width");
	cr_assert_eq(rd32(exp + 0x2c), ((1u << c->gen) - 1) << 1, "LnkCap2 speed vector");
	cr_assert_eq(rd16(exp + 0x30) & 0xf, (unsigned)c->gen, "LnkCtl2 target speed");
}

Test(config_space, downgraded_link_status)
{
	struct config_space_params p = gpu(5, 16);
	unsigned exp;

	p.cur_gen = 3;
	p.cur_width = 8;
	cr_assert_eq(config_space_build(cs, &p), 0);
	exp = find_cap(0x10);
	cr_assert_eq(rd32(exp + 0x0c) & 0x3ff, 5 | 16 << 4);
	cr_assert_eq(rd16(exp + 0x12) & 0x3ff, 3 | 8 << 4);
}

Test(config_space, extended_capability_chain)
{
	struct config_space_params p = gpu(5, 16);

	cr_assert_eq(config_space_build(cs, &p), 0);
	cr_assert_eq(rd32(0x100) & 0xffff, 0x0001, "AER first");
	cr_assert_eq((rd32(0x100) >> 16) & 0xf, 2, "AER version 2");
	cr_assert_eq(rd32(0x100) >> 20, 0, "last extended capability");
	for (unsigned off = 0x148; off < CONFIG_SPACE_SIZE; off++)
		cr_assert_eq(cs[off], 0, "stray byte at 0x%x", off);
}

Test(config_space, root_port_bridge_header)
{
	struct config_space_params p = port();
	unsigned exp;

	cr_assert_eq(config_space_build(cs, &p), 0);
	cr_assert_eq(rd16(0x00), 0x8086);
	cr_assert_eq(cs[0x0e], 0x01, "header type 1");
	cr_assert_eq(cs[0x0b], 0x06);
	cr_assert_eq(cs[0x0a], 0x04);
	cr_assert_eq(cs[0x18], 0x80, "primary");
	cr_assert_eq(cs[0x19], 0x81, "secondary");
	cr_assert_eq(cs[0x1a], 0x81, "subordinate");
	cr_assert_eq(rd16(0x20), 0x9100, "memory base");
	cr_assert_eq(rd16(0x22), 0x91f0, "memory limit");
	cr_assert_eq(rd16(0x24), 0x0001, "prefetch base, 64-bit");
	cr_assert_eq(rd32(0x28), 0x2100, "prefetch base upper");
	cr_assert_eq(rd16(0x26), 0x01f1, "prefetch limit, 64-bit");
	cr_assert_eq(rd32(0x2c), 0x2120, "prefetch limit upper");
	cr_assert_gt(cs[0x1c], cs[0x1d], "I/O window closed");
	exp = find_cap(0x10);
	cr_assert_neq(exp, 0);
	cr_assert_eq((rd16(exp + 2) >> 4) & 0xf, 4, "root port");
	cr_assert_eq(rd32(exp + 0x0c) >> 24, 3, "port number");
	cr_assert(rd16(exp + 0x12) & (1u << 13), "data link layer active");
	cr_assert_neq(find_cap(0x0d), 0, "subsystem id capability");
	cr_assert_eq(rd16(find_cap(0x0d) + 4), 0x8086);
	cr_assert_neq(find_cap(0x01), 0);
}

Test(config_space, rejects_unencodable)
{
	struct config_space_params p;

	p = gpu(7, 16);
	cr_assert_eq(config_space_build(cs, &p), -EINVAL, "gen 7");
	p = gpu(5, 3);
	cr_assert_eq(config_space_build(cs, &p), -EINVAL, "width 3");
	p = gpu(4, 8);
	p.cur_gen = 5;
	cr_assert_eq(config_space_build(cs, &p), -EINVAL, "current above max");
	p = gpu(4, 16);
	p.bars[0].addr = 0x90100000;
	cr_assert_eq(config_space_build(cs, &p), -EINVAL, "BAR not size aligned");
	p = gpu(4, 16);
	p.bars[5] = (struct config_space_bar){ 0x100000000ULL, 1 << 20, true, true };
	cr_assert_eq(config_space_build(cs, &p), -EINVAL, "64-bit BAR in the last slot");
	p = port();
	p.secondary_bus = 0x80;
	cr_assert_eq(config_space_build(cs, &p), -EINVAL, "secondary bus not below primary");
	p = port();
	p.mem.base = 0x91080000;
	cr_assert_eq(config_space_build(cs, &p), -EINVAL, "window not 1 MiB aligned");
}
