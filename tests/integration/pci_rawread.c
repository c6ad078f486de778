/* A reader the way Go's runtime reads files: raw system calls (openat,
 * read, write, readlinkat, getdents64), no libc file API a shim could
 * interpose, linked statically.  `pci_rawread OP PATH [VALUE]...` with OP
 * cat | readlink | ls | write; prints what it read, or "errno N" and
 * exits 1. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct dirent64_raw {
	unsigned long long ino;
	long long off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

static long sys_open(const char *p, int flags)
{
	return syscall(SYS_openat, AT_FDCWD, p, flags | O_CLOEXEC, 0);
}

/* syscall(2) is the bare trap: -1 and errno, nothing else in between. */
static int fail(void)
{
	printf("errno %d\n", errno);
	return 1;
}

int main(int argc, char **argv)
{
	char buf[8192];
	long fd, n;

	for (int i = 1; i + 1 < argc; i += 2) {
		const char *op = argv[i], *path = argv[i + 1];

		if (!strcmp(op, "readlink")) {
			n = syscall(SYS_readlinkat, AT_FDCWD, path, buf, sizeof(buf) - 1);
			if (n < 0)
				return fail();
			buf[n] = '\0';
			printf("%s\n", buf);
		} else if (!strcmp(op, "cat") || !strcmp(op, "ls")) {
			if ((fd = sys_open(path, O_RDONLY | (op[0] == 'l' ? O_DIRECTORY : 0))) < 0)
				return fail();
			while ((n = syscall(op[0] == 'l' ? SYS_getdents64 : SYS_read, fd, buf,
					    sizeof(buf))) > 0) {
				if (op[0] == 'c') {
					(void)!write(1, buf, (size_t)n);
					continue;
				}
				for (long off = 0; off < n;) {
					struct dirent64_raw *d = (struct dirent64_raw *)(buf + off);

					if (strcmp(d->name, ".") && strcmp(d->name, ".."))
						printf("%s\n", d->name);
					off += d->reclen;
				}
			}
			syscall(SYS_close, fd);
			if (n < 0)
				return fail();
		} else if (!strcmp(op, "write") && i + 2 < argc) {
			if ((fd = sys_open(path, O_WRONLY)) < 0)
				return fail();
			n = syscall(SYS_write, fd, argv[i + 2], strlen(argv[i + 2]));
			syscall(SYS_close, fd);
			if (n < 0)
				return fail();
			i++;
		} else {
			fprintf(stderr, "usage: %s cat|readlink|ls PATH | write PATH VALUE ...\n", argv[0]);
			return 2;
		}
		fflush(stdout);
	}
	return 0;
}
