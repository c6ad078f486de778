/* A mokka-pcifs instance killed with SIGKILL leaves its mount behind
 * ("Transport endpoint is not connected"): detach every mount at dir
 * before mounting again.  Shared with the worker's Discard. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

#include "ipc/log.h"
#include "workers/pcibus/pcifs/pcifs.h"

/* mountinfo's field 5 escapes space, tab, newline and backslash as \ooo. */
void pcifs_mountinfo_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		unsigned v;

		if (*s == '\\' && sscanf(s + 1, "%3o", &v) == 1) {
			*o++ = (char)v;
			s += 3;
		} else
			*o++ = *s;
	}
	*o = '\0';
}

int pcifs_stale_unmount(const char *dir)
{
	char line[8192], mnt[4096];
	int n = 0, found;

	do {
		FILE *f = fopen("/proc/self/mountinfo", "re");

		found = 0;
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1) {
				pcifs_mountinfo_unescape(mnt);
				found |= !strcmp(mnt, dir);
			}
		if (f)
			fclose(f);
		if (found && umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
			log_warn("%s: stale mount: umount: %s", dir, strerror(errno));
			return -errno;
		}
		if (found)
			log_info("%s: detached a stale mount", dir);
	} while (found && ++n < 8);
	return n;
}
