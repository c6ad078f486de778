/* Fuzz the TOML parser and writer cri uses for containerd configs, and
 * the config editor over them.  Aborts when a contract breaks: what
 * parses writes out as a document that parses again and writes the same
 * bytes; a plan made from an accepted config is itself accepted, covers
 * the drop-in, and keeps every byte of the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/log.h"
#include "workers/cri/cri.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const char *text, size_t len)
{
	struct toml_doc a, b;
	struct toml_error err;
	char *once, *twice;
	size_t n1, n2;

	if (toml_parse(text, len, &a, &err) < 0) {
		if (err.line < 1 || err.col < 1 || !err.msg[0])
			abort();
		return;
	}
	if (a.first_header > len)
		abort();
	if (toml_write(a.root, &once, &n1) < 0) {
		toml_doc_free(&a);
		return;		/* -E2BIG: nested deeper than the writer goes */
	}
	if (toml_parse(once, n1, &b, &err) < 0)
		abort();
	if (toml_write(b.root, &twice, &n2) < 0 || n1 != n2 || memcmp(once, twice, n1) != 0)
		abort();
	free(once);
	free(twice);
	toml_doc_free(&a);
	toml_doc_free(&b);
}

static void plan(const char *text, size_t len)
{
	struct state_cri c = { .runtime = "containerd", .restart = "none",
			       .config = "/etc/containerd/config.toml",
			       .config_dir = "/etc/containerd/conf.d",
			       .systemd_unit = "containerd.service", .nri = true,
			       .nri_socket = "/var/run/nri/nri.sock" };
	struct cri_plan p;
	char why[512];

	if (cri_containerd_plan(&c, text, len, true, "/usr/bin/nvidia-container-runtime", &p, why,
				sizeof(why)) < 0)
		return;
	if (cri_validate_config("dropin", p.dropin, p.dropin_len, why, sizeof(why)) < 0)
		abort();
	if (p.config) {
		/* only an insertion: the input's bytes are all there, in order */
		size_t i = 0, j = 0;
		while (i < len && j < p.config_len)
			i += text[i] == p.config[j++];
		if (i != len || cri_validate_config("config", p.config, p.config_len, why,
						    sizeof(why)) < 0)
			abort();
	}
	cri_plan_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	log_setup("fuzz_toml", LOG_LVL_ERROR, LOG_FMT_TEXT);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	round_trip(text, size);
	plan(text, size);
	free(text);
	return 0;
}
