/* The calls shims/compat/glibc217.h renames, built from what glibc 2.2.5
 * already exported (syscall, dl_iterate_phdr), so a shim built on a new
 * glibc needs no symbol version newer than GLIBC_2.17.  Hidden: each shim
 * links its own copy and exports none of it. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HIDDEN __attribute__((visibility("hidden")))

/* The kernel's struct stat is glibc's on the 64-bit ABIs the shims ship for
 * (x86_64, aarch64), so the syscalls fill the caller's buffer directly. */
HIDDEN int mokka_compat_fstatat(int dirfd, const char *path, struct stat *st, int flags);
HIDDEN int mokka_compat_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return (int)syscall(SYS_newfstatat, dirfd, path, st, flags);
}

HIDDEN int mokka_compat_stat(const char *path, struct stat *st);
HIDDEN int mokka_compat_stat(const char *path, struct stat *st)
{
	return mokka_compat_fstatat(AT_FDCWD, path, st, 0);
}

HIDDEN int mokka_compat_lstat(const char *path, struct stat *st);
HIDDEN int mokka_compat_lstat(const char *path, struct stat *st)
{
	return mokka_compat_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

HIDDEN int mokka_compat_fstat(int fd, struct stat *st);
HIDDEN int mokka_compat_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

/* pthread_once over a futex: 0 not run, 1 running, 2 done.  No
 * cancellation points in the init routines of the shims. */
HIDDEN int mokka_compat_pthread_once(pthread_once_t *once, void (*fn)(void));
HIDDEN int mokka_compat_pthread_once(pthread_once_t *once, void (*fn)(void))
{
	int *state = (int *)once;
	int expect = 0;

	if (__atomic_load_n(state, __ATOMIC_ACQUIRE) == 2)
		return 0;
	if (__atomic_compare_exchange_n(state, &expect, 1, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		fn();
		__atomic_store_n(state, 2, __ATOMIC_RELEASE);
		syscall(SYS_futex, state, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
		return 0;
	}
	while (__atomic_load_n(state, __ATOMIC_ACQUIRE) == 1)
		syscall(SYS_futex, state, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0);
	return 0;
}

/* Load address of an object's dynamic-section pointer: glibc relocates most
 * of them in place, the vDSO's and read-only ones it does not. */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
	return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

static int contains(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= lo && addr < lo + ph->p_memsz)
			return 1;
	}
	return 0;
}

struct dladdr_walk {
	uintptr_t addr;
	Dl_info *info;
	int found;
};

static int dladdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct dladdr_walk *w = arg;

	(void)size;
	if (!contains(info, w->addr))
		return 0;
	w->info->dli_fname = info->dlpi_name;
	w->info->dli_fbase = (void *)info->dlpi_addr;
	w->info->dli_sname = NULL;
	w->info->dli_saddr = NULL;
	w->found = 1;
	return 1;
}

/* dladdr as far as the shims use it: which file holds this address. */
HIDDEN int mokka_compat_dladdr(const void *addr, Dl_info *info);
HIDDEN int mokka_compat_dladdr(const void *addr, Dl_info *info)
{
	struct dladdr_walk w = { (uintptr_t)addr, info, 0 };

	dl_iterate_phdr(dladdr_cb, &w);
	return w.found;
}

struct symtab {
	const ElfW(Sym) *sym;
	const char *str;
	const ElfW(Half) *versym;
	const uint32_t *hash, *gnu_hash;
};

static int symtab_of(const struct dl_phdr_info *info, struct symtab *t)
{
	const ElfW(Dyn) *d = NULL;

	memset(t, 0, sizeof(*t));
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			d = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	for (; d && d->d_tag != DT_NULL; d++) {
		uintptr_t p = dyn_ptr(info, d->d_un.d_ptr);

		switch (d->d_tag) {
		case DT_SYMTAB: t->sym = (const void *)p; break;
		case DT_STRTAB: t->str = (const void *)p; break;
		case DT_VERSYM: t->versym = (const void *)p; break;
		case DT_HASH: t->hash = (const void *)p; break;
		case DT_GNU_HASH: t->gnu_hash = (const void *)p; break;
		}
	}
	return t->sym && t->str && (t->hash || t->gnu_hash) ? 0 : -ENOENT;
}

/* A defined function or object under its default (not hidden) version. */
static void *match(const struct dl_phdr_info *info, const struct symtab *t,
		   uint32_t i, const char *name)
{
	const ElfW(Sym) *s = &t->sym[i];
	int type = ELF64_ST_TYPE(s->st_info);
	uintptr_t addr;

	if (s->st_shndx == SHN_UNDEF || !s->st_value || strcmp(t->str + s->st_name, name))
		return NULL;
	if (t->versym && (t->versym[i] & 0x8000))
		return NULL;
	if (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC)
		return NULL;
	addr = info->dlpi_addr + s->st_value;
	if (type == STT_GNU_IFUNC)
		addr = (uintptr_t)((void *(*)(void))addr)();
	return (void *)addr;
}

static void *lookup(const struct dl_phdr_info *info, const char *name)
{
	struct symtab t;
	uint32_t h = 5381;
	void *p;

	if (symtab_of(info, &t))
		return NULL;
	if (t.hash) {	/* SysV hash: nchain symbols */
		for (uint32_t i = 1; i < t.hash[1]; i++)
			if ((p = match(info, &t, i, name)))
				return p;
		return NULL;
	}
	for (const unsigned char *c = (const void *)name; *c; c++)
		h = h * 33 + *c;
	{
		uint32_t nbuckets = t.gnu_hash[0], symoffset = t.gnu_hash[1];
		const ElfW(Addr) *bloom = (const void *)&t.gnu_hash[4];
		const uint32_t *buckets = (const void *)&bloom[t.gnu_hash[2]];
		const uint32_t *chain = &buckets[nbuckets];
		uint32_t i = nbuckets ? buckets[h % nbuckets] : 0;

		for (; i >= symoffset; i++) {
			uint32_t h2 = chain[i - symoffset];

			if ((h | 1) == (h2 | 1) && (p = match(info, &t, i, name)))
				return p;
			if (h2 & 1)
				break;
		}
	}
	return NULL;
}

struct dlsym_walk {
	const char *name;
	uintptr_t self;
	int after_self;	/* RTLD_NEXT: only objects loaded after ours */
	void *result;
};

static int dlsym_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct dlsym_walk *w = arg;

	(void)size;
	if (w->after_self) {
		if (contains(info, w->self))
			w->after_self = 0;
		return 0;
	}
	w->result = lookup(info, w->name);
	return w->result != NULL;
}

/* dlsym for RTLD_NEXT and RTLD_DEFAULT (all the shims ask for): the first
 * definition in load order, after this shim for RTLD_NEXT. */
HIDDEN void *mokka_compat_dlsym(void *handle, const char *name);
HIDDEN void *mokka_compat_dlsym(void *handle, const char *name)
{
	struct dlsym_walk w = { name, (uintptr_t)&mokka_compat_dlsym, handle == RTLD_NEXT, NULL };

	if (handle != RTLD_NEXT && handle != RTLD_DEFAULT)
		return NULL;
	dl_iterate_phdr(dlsym_cb, &w);
	return w.result;
}
