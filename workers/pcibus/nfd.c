/* Apply: the NFD local-source feature file.  NFD turns each "key=value"
 * line into the label feature.node.kubernetes.io/<key>=<value>, so keys
 * and values must be valid label names/values or NFD drops the line. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "workers/pcibus/pcibus.h"

#define LABEL_VALUE_MAX 63

/* Make s a label value: [A-Za-z0-9._-], alphanumeric at both ends, at
 * most 63 characters ("NVIDIA H100 80GB HBM3" -> "NVIDIA-H100-80GB-HBM3").
 * Empty when nothing valid is left. */
static void label_value(char *out, size_t len, const char *s)
{
	size_t n = 0;

	while (*s && !isalnum((unsigned char)*s))
		s++;
	for (; *s && n + 1 < len && n < LABEL_VALUE_MAX; s++) {
		unsigned char c = (unsigned char)*s;
		out[n++] = isalnum(c) || c == '.' || c == '_' || c == '-' ? (char)c : '-';
	}
	while (n && !isalnum((unsigned char)out[n - 1]))
		n--;
	out[n] = '\0';
}

/* Distinct device ids in device order, dash-joined: "2330-20b0". */
static void device_ids(const struct state *s, char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (int i = 0; i < s->num_devices; i++) {
		size_t add = off ? 5 : 4;
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = s->devices[j].device_id == s->devices[i].device_id;
		if (seen || off + add >= len || off + add > LABEL_VALUE_MAX)
			continue;
		off += (size_t)snprintf(out + off, len - off, "%s%04x", off ? "-" : "",
					s->devices[i].device_id);
	}
}

struct feature {
	const char *key;
	void (*value)(const struct state *s, char *out, size_t len);
};

static void value_count(const struct state *s, char *out, size_t len)
{
	snprintf(out, len, "%d", s->num_devices);
}

static void value_driver(const struct state *s, char *out, size_t len)
{
	label_value(out, len, s->driver_version);
}

static void value_cuda(const struct state *s, char *out, size_t len)
{
	label_value(out, len, s->cuda_version);
}

static void value_product(const struct state *s, char *out, size_t len)
{
	label_value(out, len, s->devices[0].name);
}

static const struct feature features[] = {
	{ "mokka.gpu.count", value_count },
	{ "mokka.gpu.driver-version", value_driver },
	{ "mokka.gpu.cuda-version", value_cuda },
	{ "mokka.gpu.device-ids", device_ids },
	{ "mokka.gpu.product", value_product },
};

int nfd_render(struct host *h, const struct state *s, struct sim_errors *errs)
{
	char doc[2048], value[128];
	size_t off;
	int r;

	/* No GPUs: no file, so NFD drops pci-10de.present instead of
	 * claiming a device that is not there. */
	if (s->num_devices <= 0)
		return 0;
	/* Line one stays exactly what the reference writes; consumers grep it. */
	off = (size_t)snprintf(doc, sizeof(doc), "pci-10de.present=true\n");
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		features[i].value(s, value, sizeof(value));
		if (value[0] && off < sizeof(doc))
			off += (size_t)snprintf(doc + off, sizeof(doc) - off, "%s=%s\n",
						features[i].key, value);
	}
	if (off >= sizeof(doc))
		r = -EOVERFLOW;
	else
		r = host_write(h, NFD_FEATURES_FILE, doc, off, 0644);
	if (r < 0)
		sim_error(errs, "nfd", "pcibus: %s: write: %s", NFD_FEATURES_FILE, strerror(-r));
	return r;
}
