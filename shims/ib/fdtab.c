/* fd -> session table, two levels so huge fd numbers cost nothing until
 * used (see fdtab.h), and the close/dup interposers that keep it in step
 * with the process's fds. */
#include "shims/ib/fdtab.h"
#include "shims/ib/ibshim.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define LEAF_BITS 10
#define LEAF_SIZE (1u << LEAF_BITS)
#define TOP_SIZE 4096u		/* fds below 4M */

static struct ibfd **top[TOP_SIZE];	/* leaves, allocated on first use */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* A fork while another thread holds the lock must not leave the child's
 * copy locked forever. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&mu);
}

static void fork_done(void)
{
	pthread_mutex_unlock(&mu);
}

__attribute__((constructor)) static void fdtab_init(void)
{
	pthread_atfork(fork_prepare, fork_done, fork_done);
}

static struct ibfd **slot(int fd, bool create)
{
	unsigned t, l;
	struct ibfd **leaf;

	if (fd < 0 || (unsigned)fd >= TOP_SIZE * LEAF_SIZE)
		return NULL;
	t = (unsigned)fd >> LEAF_BITS;
	l = (unsigned)fd & (LEAF_SIZE - 1);
	leaf = __atomic_load_n(&top[t], __ATOMIC_ACQUIRE);
	if (!leaf && create) {
		leaf = calloc(LEAF_SIZE, sizeof(*leaf));
		if (!leaf)
			return NULL;
		__atomic_store_n(&top[t], leaf, __ATOMIC_RELEASE);
	}
	return leaf ? &leaf[l] : NULL;
}

bool fdtab_has(int fd)
{
	struct ibfd **s = slot(fd, false);

	return s && __atomic_load_n(s, __ATOMIC_ACQUIRE) != NULL;
}

void fdtab_lock(void)
{
	pthread_mutex_lock(&mu);
}

void fdtab_unlock(void)
{
	pthread_mutex_unlock(&mu);
}

struct ibfd *fdtab_get(int fd)
{
	struct ibfd **s = slot(fd, false);

	return s ? *s : NULL;
}

static void put(struct ibfd **s, struct ibfd *v)
{
	struct ibfd *old = *s;

	if (old && --old->refs == 0)
		free(old);
	if (v)
		v->refs++;
	__atomic_store_n(s, v, __ATOMIC_RELEASE);
}

int fdtab_add(int fd, int kind)
{
	struct ibfd *v = calloc(1, sizeof(*v));
	struct ibfd **s;
	int rc = 0;

	if (!v)
		return -ENOMEM;
	v->kind = kind;
	v->hdr_size = 56;
	pthread_mutex_lock(&mu);
	s = slot(fd, true);
	if (s)
		put(s, v);
	else
		rc = fd < 0 ? -EBADF : -EMFILE;
	pthread_mutex_unlock(&mu);
	if (rc)
		free(v);
	return rc;
}

void fdtab_dup(int oldfd, int newfd)
{
	struct ibfd **from, **to;

	if (oldfd == newfd)
		return;
	pthread_mutex_lock(&mu);
	from = slot(oldfd, false);
	/* dup2 onto an emulated fd closes it: drop that session either way */
	to = slot(newfd, from && *from);
	if (to)
		put(to, from ? *from : NULL);
	pthread_mutex_unlock(&mu);
}

void fdtab_del(int fd)
{
	struct ibfd **s;

	if (!fdtab_has(fd))
		return;
	pthread_mutex_lock(&mu);
	s = slot(fd, false);
	if (s)
		put(s, NULL);
	pthread_mutex_unlock(&mu);
}

void fdtab_each(void (*fn)(int fd, struct ibfd *s, void *arg), void *arg)
{
	for (unsigned t = 0; t < TOP_SIZE; t++) {
		struct ibfd **leaf = top[t];

		if (!leaf)
			continue;
		for (unsigned l = 0; l < LEAF_SIZE; l++)
			if (leaf[l])
				fn((int)(t * LEAF_SIZE + l), leaf[l], arg);
	}
}

/* ---- close / dup: every shim with emulated fds exports these --------- */

EXPORT int close(int fd)
{
	REAL(close, -1);
	fdtab_del(fd);
	return real(fd);
}

EXPORT int dup(int fd)
{
	REAL(dup, -1);
	int nfd = real(fd);
	if (nfd >= 0)
		fdtab_dup(fd, nfd);
	return nfd;
}

EXPORT int dup2(int fd, int nfd)
{
	REAL(dup2, -1);
	int rc = real(fd, nfd);
	if (rc >= 0)
		fdtab_dup(fd, rc);
	return rc;
}

EXPORT int dup3(int fd, int nfd, int flags)
{
	REAL(dup3, -1);
	int rc = real(fd, nfd, flags);
	if (rc >= 0)
		fdtab_dup(fd, rc);
	return rc;
}
