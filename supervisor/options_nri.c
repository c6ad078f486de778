/* The NRI plugin's settings of mokka-supervisor, derived at start: on by
 * default (--nri-plugin=false opts out), it reads the staging gate where
 * the supervisor keeps it, the lock (--staging-lock-path) and /stagedz on
 * the health listener (--health-addr: a wildcard address is reached on
 * loopback). */
#include <stdio.h>
#include <string.h>

#include "supervisor/options.h"

static bool wildcard(const char *host, size_t n)
{
	static const char *const any[] = { "", "0.0.0.0", "::", "[::]", "*" };

	for (size_t i = 0; i < sizeof(any) / sizeof(any[0]); i++)
		if (strlen(any[i]) == n && strncmp(host, any[i], n) == 0)
			return true;
	return false;
}

void options_nri(struct options *o)
{
	const char *addr = o->health_addr ? o->health_addr : "";
	const char *colon = strrchr(addr, ':');
	size_t n = colon ? (size_t)(colon - addr) : 0;

	if (!colon)	/* refused by the health listener at start */
		snprintf(o->nri_stagedz, sizeof(o->nri_stagedz), "127.0.0.1:%s", addr);
	else if (wildcard(addr, n))
		snprintf(o->nri_stagedz, sizeof(o->nri_stagedz), "127.0.0.1%s", colon);
	else
		snprintf(o->nri_stagedz, sizeof(o->nri_stagedz), "%s", addr);
	o->compile.cri_nri_stagedz = o->nri_stagedz;
	o->compile.cri_nri_lock = o->staging_lock;
}
