/* mokka-nri: the NRI plugin (SURFACES.md §2.6) containerd 1.7+/2.x talks
 * to over its NRI socket.  Everything here is our own small code over the
 * wire format (facts from the NRI and ttrpc protocols):
 *
 *   pb.c      protobuf wire format: a field reader and an append writer
 *   wire.c    NRI's connection multiplexer (frames: 4-byte connection id,
 *             4-byte length, big endian; conn 1 = the plugin service
 *             containerd calls, conn 2 = the runtime service we call) and
 *             ttrpc (10-byte header: length, stream id, type, flags; a
 *             Request {service, method, payload} / Response {status,
 *             payload} message)
 *   adjust.c  CreateContainerRequest -> ContainerAdjustment: the mock
 *             driver view for every container unless the pod opts out
 *   gate.c    the staging gate: a shared flock on the staging lock and
 *             GET /stagedz before an injection, bounded, failing open
 *   root.c    host paths opened inside the host root (/var/run -> /run)
 *   opts.c    the command line (NVIDIA's nvml-mock-nri names, ours)
 *   main.c    connect, RegisterPlugin, serve Configure, Synchronize,
 *             CreateContainer (every other call answers Empty)
 *
 * protobuf-c (Debian) was allowed; the handful of fields the plugin reads
 * and writes did not need a code generator, so no dependency is added. */
#ifndef MOKKA_NRI_NRI_H
#define MOKKA_NRI_NRI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- pb.c ---- */
enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };
struct pb_reader {
	const uint8_t *p, *end;
};
struct pb_field {
	uint32_t num;
	int type;
	uint64_t v;			/* VARINT, I64, I32 */
	const uint8_t *data;		/* LEN */
	size_t len;
};
/* 1 with the next field in f, 0 at the end, -EINVAL when malformed. */
int pb_next(struct pb_reader *r, struct pb_field *f);
struct pb_buf {
	uint8_t *b;
	size_t n, cap;
	int err;			/* -ENOMEM once an append failed */
};
void pb_raw(struct pb_buf *b, const void *data, size_t len);
void pb_varint(struct pb_buf *b, uint32_t num, uint64_t v);
void pb_bytes(struct pb_buf *b, uint32_t num, const void *data, size_t len);
void pb_str(struct pb_buf *b, uint32_t num, const char *s);
/* child's bytes as field num of b; child freed. */
void pb_msg(struct pb_buf *b, uint32_t num, struct pb_buf *child);
void pb_free(struct pb_buf *b);

/* ---- wire.c ---- */
#define NRI_MUX_HDR 8
#define NRI_TTRPC_HDR 10
#define NRI_TTRPC_MAX (4u << 20)
#define NRI_CONN_PLUGIN 1		/* containerd calls our Plugin service */
#define NRI_CONN_RUNTIME 2		/* we call its Runtime service */
#define TTRPC_REQUEST 1
#define TTRPC_RESPONSE 2

/* One mux frame at the head of buf: its length (> 0), 0 when incomplete,
 * -EINVAL when the length is over the protocol's limit. */
ssize_t nri_mux_frame(const uint8_t *buf, size_t len, uint32_t *conn, const uint8_t **payload,
		      size_t *plen);
struct ttrpc_msg {
	uint32_t stream;
	uint8_t type, flags;
	const uint8_t *data;
	size_t len;
};
/* One ttrpc message at the head of a connection's bytes: as above. */
ssize_t nri_ttrpc_msg(const uint8_t *buf, size_t len, struct ttrpc_msg *m);
struct ttrpc_request {
	char service[128], method[64];
	const uint8_t *payload;
	size_t len;
};
int nri_ttrpc_request(const uint8_t *buf, size_t len, struct ttrpc_request *r);
/* The response's status code (0 = OK) and payload. */
int nri_ttrpc_response(const uint8_t *buf, size_t len, int *code, char *msg, size_t msglen,
		       const uint8_t **payload, size_t *plen);
/* A whole mux frame carrying one ttrpc message (the payload's bytes). */
int nri_frame(struct pb_buf *out, uint32_t conn, uint32_t stream, uint8_t type,
	      const struct pb_buf *msg);

/* ---- adjust.c ---- */
struct nri_config {
	char host_root[4096];		/* "" = / */
	char mock_root[256];		/* R, a host path */
	char container_root[64];	/* "/opt/nvml-mock" */
	char cdi_spec[256];		/* host path of nvml-mock-nri.yaml */
	char node_name[128];
	char exclude[512];		/* namespaces, comma-separated */
	bool cdi_ok;			/* the runtime resolves NRI CDI devices */
};
/* The adjustment for one CreateContainerRequest (its payload): *adj holds
 * a ContainerAdjustment (empty when the container is left alone); why
 * says what was done or why not, for the log.  0 or -EINVAL (malformed
 * request; the caller answers an empty adjustment). */
int nri_adjust(const struct nri_config *c, const uint8_t *req, size_t len, struct pb_buf *adj,
	       char *why, size_t whylen);

/* ---- opts.c ---- */
struct nri_opts {
	char socket[256], name[64], idx[8];
	char lock[512];			/* host path of the staging lock, "" = none */
	char stagedz[128];		/* host:port of the supervisor's /stagedz */
	struct nri_config cf;
	bool once;			/* one connection, then exit */
};
/* Defaults, then the environment, then argv over them: 0 to run, 1 for
 * --help, 2 for --version, -EINVAL with why in err. */
int nri_parse_opts(int argc, char **argv, struct nri_opts *o, char *err, size_t errlen);

/* ---- root.c ---- */
/* path (a host path) opened inside the host root root ("" or "/" = this
 * machine's), every link resolved with root as "/": fd or -errno. */
int nri_root_open(const char *root, const char *path, int flags);
bool nri_root_exists(const char *root, const char *path);
/* A name for the socket at host path path that connect(2) can use: the
 * socket's directory opened inside the root (*dirfd, close it after the
 * connect; -1 when none was needed) and "/proc/self/fd/N/<leaf>".  0 or
 * -errno. */
int nri_root_socket_path(const char *root, const char *path, char *out, size_t len, int *dirfd);

/* ---- gate.c ---- */
/* Wait for the staging gate at most budget_ms: 0 when the tree is staged
 * (the shared lock held in *lock_fd, release with nri_gate_release), or
 * -ETIMEDOUT / -errno when it failed open (nothing held). */
int nri_gate_wait(const char *lock_path, const char *stagedz_addr, int budget_ms,
		  int *lock_fd, char *why, size_t whylen);
void nri_gate_release(int lock_fd);

#endif
