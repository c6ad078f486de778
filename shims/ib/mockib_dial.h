/* Opening a session with mock-ib (see mockib_proto.h). */
#ifndef MOKKA_SHIMS_IB_MOCKIB_DIAL_H
#define MOKKA_SHIMS_IB_MOCKIB_DIAL_H

#include <stdint.h>

/* A SEQPACKET socket connected to `path`, created with `sock_flags`
 * (SOCK_CLOEXEC / SOCK_NONBLOCK; the connect itself always blocks).
 * Returns the fd or -errno. */
int mockib_dial(const char *path, int sock_flags);

/* Sends the hello frame.  0 or -errno. */
int mockib_hello(int fd, uint32_t kind, uint32_t index, uint32_t pid);

#endif
