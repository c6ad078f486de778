/* nvidia-imex-shim, staged as R/driver/usr/bin/nvidia-imex (SURFACES.md
 * §3): the compute-domain daemon runs `nvidia-imex -c <cfg>`; on a node
 * without GPUs the real daemon must run with --nogpu.  So: exec the real
 * binary ($IMEX_SHIM_REAL_BIN, else /usr/bin/nvidia-imex.real) with the
 * same arguments plus --nogpu unless one is there already.  No fork, so
 * signals reach the daemon; exit 127 when the exec fails.  Self-contained
 * (glibc only): it runs inside the compute-domain daemon's container. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *real = getenv("IMEX_SHIM_REAL_BIN");
	char **args = calloc((size_t)argc + 2, sizeof(*args));
	int n = 0, has = 0;

	if (!real || !*real)
		real = "/usr/bin/nvidia-imex.real";
	if (!args) {
		fprintf(stderr, "nvidia-imex (shim): out of memory\n");
		return 127;
	}
	args[n++] = (char *)real;
	for (int i = 1; i < argc; i++) {
		has |= !strcmp(argv[i], "--nogpu") || !strcmp(argv[i], "-nogpu");
		args[n++] = argv[i];
	}
	if (!has)
		args[n++] = "--nogpu";
	args[n] = NULL;
	execv(real, args);
	fprintf(stderr, "nvidia-imex (shim): exec %s: %s\n", real, strerror(errno));
	return 127;
}
