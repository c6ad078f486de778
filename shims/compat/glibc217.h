/* glibc 2.17 compatibility for the shims (forced in with -include by the
 * shim build flags in shims/ and local.am; never included by hand).
 *
 * NVIDIA's libnvidia-ml.so loads on glibc 2.17 and later, so ours must too
 * (Ubuntu 20.04, UBI 8 and other older container images).  Built against a
 * newer glibc, a few calls bind to symbol versions an older loader refuses:
 * stat/fstat/lstat/fstatat (GLIBC_2.33: older glibc had no such symbols,
 * only __xstat behind inline wrappers), dladdr/dlsym (GLIBC_2.34: older
 * glibc kept them in libdl.so.2, which the shims may not need) and
 * pthread_once (GLIBC_2.34: libpthread.so.0 before).  The declarations below
 * give those names an assembler name of our own, so every call in the shim
 * lands in shims/compat/glibc217.c, which uses only calls glibc 2.2.5
 * already exported (syscall, dl_iterate_phdr).  Nothing else changes: the
 * source still calls stat(), dladdr(), pthread_once().
 *
 * A shim that itself defines stat & co. (the path-redirect interposers)
 * builds with -DMOKKA_COMPAT_KEEP_STAT so its definitions keep their names.
 * tests/integration/nvml_glibc217.sh checks the result with objdump -T. */
#ifndef MOKKA_COMPAT_GLIBC217_H
#define MOKKA_COMPAT_GLIBC217_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* Dl_info, stat64 */
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>

#define MOKKA_COMPAT_NAME(x) __asm__("mokka_compat_" #x)

extern int dladdr(const void *addr, Dl_info *info) MOKKA_COMPAT_NAME(dladdr);
extern void *dlsym(void *handle, const char *name) MOKKA_COMPAT_NAME(dlsym);
extern int pthread_once(pthread_once_t *once, void (*fn)(void))
	MOKKA_COMPAT_NAME(pthread_once);

#ifndef MOKKA_COMPAT_KEEP_STAT
extern int stat(const char *restrict path, struct stat *restrict st)
	MOKKA_COMPAT_NAME(stat);
extern int lstat(const char *restrict path, struct stat *restrict st)
	MOKKA_COMPAT_NAME(lstat);
extern int fstat(int fd, struct stat *st) MOKKA_COMPAT_NAME(fstat);
extern int fstatat(int dirfd, const char *restrict path, struct stat *restrict st,
		   int flags) MOKKA_COMPAT_NAME(fstatat);
#endif

#endif
