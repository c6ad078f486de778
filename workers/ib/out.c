/* Small helpers the ib surfaces share: writes that record their failure,
 * relative link prefixes, device numbers. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "workers/ib/ib.h"

struct ib_chrdev ib_umad_dev(int i)
{
	if (i < IB_UMAD_FIXED)
		return (struct ib_chrdev){ IB_MAJOR, (unsigned)i };
	return (struct ib_chrdev){ IB_DYN_MAD_MAJOR, (unsigned)(i - IB_UMAD_FIXED) };
}

struct ib_chrdev ib_issm_dev(int i)
{
	if (i < IB_UMAD_FIXED)
		return (struct ib_chrdev){ IB_MAJOR, (unsigned)(IB_ISSM_MINOR_BASE + i) };
	return (struct ib_chrdev){ IB_DYN_MAD_MAJOR,
				   (unsigned)(IB_DYN_MAD_MINORS + i - IB_UMAD_FIXED) };
}

struct ib_chrdev ib_uverbs_dev(int i)
{
	if (i < IB_UVERBS_FIXED)
		return (struct ib_chrdev){ IB_MAJOR, (unsigned)(IB_UVERBS_MINOR_BASE + i) };
	return (struct ib_chrdev){ IB_DYN_VERBS_MAJOR, (unsigned)(i - IB_UVERBS_FIXED) };
}

int ib_fail(struct ib_out *o, const char *surface, int r, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sim_error(o->errs, surface, "ib: %s: %s", msg, strerror(-r));
	if (!o->first)
		o->first = r;
	return r;
}

int ib_put(struct ib_out *o, const char *path, mode_t mode, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = host_vwritef(o->h, path, mode, fmt, ap);
	va_end(ap);
	if (r < 0)
		return ib_fail(o, path, r, "%s: write", path);
	return 0;
}

int ib_link(struct ib_out *o, const char *target, const char *path)
{
	int r = host_symlink(o->h, target, path);

	if (r < 0)
		return ib_fail(o, path, r, "%s: symlink -> %s", path, target);
	return 0;
}

int ib_mkdir(struct ib_out *o, const char *path)
{
	int r = host_mkdirs(o->h, path, 0755);

	if (r < 0)
		return ib_fail(o, path, r, "%s: mkdir", path);
	return 0;
}

const char *ib_ups(int n)
{
	static const char dots[] = "../../../../../../../../../../../../../../../../";

	if (n < 0)
		n = 0;
	return dots + sizeof(dots) - 1 - 3 * (size_t)(n < 16 ? n : 16);
}
