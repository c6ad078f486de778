/* The NRI plugin's wire format and adjustment (nri/): a frame built by
 * nri_frame decodes back; CreateContainerRequests (built here with the
 * writer) become the adjustments SURFACES.md §2.6 and issue 18 describe,
 * against a temp host root with mock device nodes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "nri/nri.h"

static char root[64];
static struct nri_config cf;

static void mk(const char *rel, int minor)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/var/lib/nvml-mock/%s", root, rel);
	cr_assert_eq(mknod(p, S_IFCHR | 0666, makedev(195, minor)), 0, "mknod %s", p);
}

static void setup(void)
{
	char cmd[256];

	strcpy(root, "/tmp/mokka-nri-test.XXXXXX");
	cr_assert(mkdtemp(root));
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/var/lib/nvml-mock/driver/dev/nvidia-caps-imex-channels "
		 "%s/var/run/cdi", root, root);
	cr_assert_eq(system(cmd), 0);
	mk("driver/dev/nvidia0", 0);
	mk("driver/dev/nvidia1", 1);
	mk("driver/dev/nvidiactl", 255);
	mk("driver/dev/nvidia-caps-imex-channels/channel0", 0);
	memset(&cf, 0, sizeof(cf));
	snprintf(cf.host_root, sizeof(cf.host_root), "%s", root);
	strcpy(cf.mock_root, "/var/lib/nvml-mock");
	strcpy(cf.container_root, "/opt/nvml-mock");
	strcpy(cf.cdi_spec, "/var/run/cdi/nvml-mock-nri.yaml");
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

static void kv(struct pb_buf *b, uint32_t num, const char *k, const char *v)
{
	struct pb_buf e = { 0 };

	pb_str(&e, 1, k);
	pb_str(&e, 2, v);
	pb_msg(b, num, &e);
}

/* A CreateContainerRequest: namespace, one pod annotation, env, a device. */
static void request(struct pb_buf *req, const char *ns, const char *ak, const char *av,
		    const char *dev)
{
	struct pb_buf pod = { 0 }, ctr = { 0 }, lin = { 0 }, d = { 0 };

	pb_str(&pod, 4, ns);
	if (ak)
		kv(&pod, 6, ak, av);
	pb_str(&ctr, 1, "c1");
	pb_str(&ctr, 8, "PATH=/bin:/usr/bin");
	if (dev) {
		pb_str(&d, 1, dev);
		pb_msg(&lin, 2, &d);
		pb_msg(&ctr, 11, &lin);
	}
	pb_msg(req, 1, &pod);
	pb_msg(req, 2, &ctr);
}

/* Text of the adjustment's interesting parts: "mount:<dst>", "env:K=V",
 * "dev:<path>", "cdi:<name>", one per line. */
static void render(const struct pb_buf *adj, char *out, size_t size)
{
	struct pb_reader r = { adj->b, adj->b + adj->n }, s, t;
	struct pb_field f, g, h;

	out[0] = '\0';
	while (pb_next(&r, &f) > 0) {
		char k[256] = "", v[512] = "";
		s = (struct pb_reader){ f.data, f.data + f.len };
		while (pb_next(&s, &g) > 0) {
			if (f.num == 6 && g.num == 1) {
				t = (struct pb_reader){ g.data, g.data + g.len };
				while (pb_next(&t, &h) > 0)
					if (h.num == 1)
						snprintf(out + strlen(out), size - strlen(out), "dev:%.*s\n",
							 (int)h.len, h.data);
				continue;
			}
			if (g.num == 1 && g.type == PB_LEN)
				snprintf(k, sizeof(k), "%.*s", (int)g.len, g.data);
			if (g.num == 2 && g.type == PB_LEN && !v[0])
				snprintf(v, sizeof(v), "%.*s", (int)g.len, g.data);
		}
		if (f.num == 3)
			snprintf(out + strlen(out), size - strlen(out), "mount:%s\n", k);
		if (f.num == 4)
			snprintf(out + strlen(out), size - strlen(out), "env:%s=%s\n", k, v);
		if (f.num == 8)
			snprintf(out + strlen(out), size - strlen(out), "cdi:%s\n", k);
	}
}

static void adjust(const char *ns, const char *ak, const char *av, const char *dev, char *out,
		   size_t size)
{
	struct pb_buf req = { 0 }, adj = { 0 };
	char why[256];

	request(&req, ns, ak, av, dev);
	cr_assert_eq(nri_adjust(&cf, req.b, req.n, &adj, why, sizeof(why)), 0, "%s", why);
	render(&adj, out, size);
	pb_free(&req);
	pb_free(&adj);
}

TestSuite(nri, .init = setup, .fini = teardown);

Test(nri, plain_container_gets_the_view_and_raw_nodes)
{
	char out[8192];

	adjust("default", NULL, NULL, NULL, out, sizeof(out));
	cr_assert(strstr(out, "mount:/opt/nvml-mock\n"), "%s", out);
	cr_assert(strstr(out, "env:PATH=/opt/nvml-mock/driver/usr/bin:/bin:/usr/bin\n"), "%s", out);
	cr_assert(strstr(out, "env:LD_LIBRARY_PATH=/opt/nvml-mock/driver/usr/lib64\n"), "%s", out);
	cr_assert(strstr(out, "env:MOCK_IB=full\n"), "%s", out);
	cr_assert(strstr(out, "env:MOCK_NVML_CONFIG=/opt/nvml-mock/driver/config/config.yaml\n"));
	cr_assert(strstr(out, "dev:/dev/nvidia0\ndev:/dev/nvidia1\ndev:/dev/nvidiactl\n"), "%s", out);
	cr_assert_null(strstr(out, "channel"), "%s", out);
}

Test(nri, opted_out_excluded_or_served_are_left_alone)
{
	char out[8192];

	adjust("default", "nvml-mock.nvidia.com/inject", "false", NULL, out, sizeof(out));
	cr_assert_str_empty(out);
	adjust("kube-system", NULL, NULL, NULL, out, sizeof(out));
	cr_assert_str_empty(out);
	adjust("default", NULL, NULL, "/dev/nvidia3", out, sizeof(out));
	cr_assert(strstr(out, "mount:/opt/nvml-mock\n"), "%s", out);
	cr_assert_null(strstr(out, "dev:"), "a device plugin's container gets no GPUs: %s", out);
}

Test(nri, cdi_when_staged_and_supported_imex_on_annotation)
{
	char out[8192], p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/var/run/cdi/nvml-mock-nri.yaml", root);
	cr_assert(f = fopen(p, "w"));
	fclose(f);
	cf.cdi_ok = true;
	adjust("default", "nvml-mock.nvidia.com/imex-channels", "true", NULL, out, sizeof(out));
	cr_assert(strstr(out, "cdi:nvml-mock.nvidia.com/gpu=all\n"), "%s", out);
	cr_assert(strstr(out, "dev:/dev/nvidia-caps-imex-channels/channel0\n"), "%s", out);
	cr_assert_null(strstr(out, "dev:/dev/nvidia0"), "CDI or raw, never both: %s", out);
}

Test(nri, frames_round_trip)
{
	struct pb_buf msg = { 0 }, frame = { 0 };
	struct ttrpc_request rq;
	struct ttrpc_msg m;
	const uint8_t *p;
	size_t plen;
	uint32_t conn;

	pb_str(&msg, 1, "nri.pkg.api.v1alpha1.Plugin");
	pb_str(&msg, 2, "Configure");
	pb_bytes(&msg, 3, "\x12\x03" "abc", 5);
	cr_assert_eq(nri_frame(&frame, NRI_CONN_PLUGIN, 7, TTRPC_REQUEST, &msg), 0);
	cr_assert_eq(nri_mux_frame(frame.b, frame.n - 1, &conn, &p, &plen), 0, "incomplete");
	cr_assert_eq(nri_mux_frame(frame.b, frame.n, &conn, &p, &plen), (ssize_t)frame.n);
	cr_assert_eq(conn, NRI_CONN_PLUGIN);
	cr_assert_eq(nri_ttrpc_msg(p, plen, &m), (ssize_t)plen);
	cr_assert_eq(m.stream, 7);
	cr_assert_eq(m.type, TTRPC_REQUEST);
	cr_assert_eq(nri_ttrpc_request(m.data, m.len, &rq), 0);
	cr_assert_str_eq(rq.method, "Configure");
	cr_assert_eq(rq.len, 5);
	pb_free(&msg);
	pb_free(&frame);
}
