/* Fuzz the profile compiler (YAML tree + schema walk + extraction) with
 * the input as a profile, then as a topology document beside a fixed
 * profile.  Aborts when a result breaks the compiler's contract. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/log.h"
#include "profile/compile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fixed_profile[] =
	"version: \"1.0\"\n"
	"system: {driver_version: \"550.163.01\"}\n"
	"device_defaults:\n"
	"  fabric: {cluster_uuid: \"00000000-0000-0000-0000-000000000001\", state: auto}\n"
	"devices:\n"
	"  - pci: {bus_id: \"0000:1a:00.0\"}\n";

/* Whatever compiled must be safe for the workers to use. */
static void check_state(const struct state *s)
{
	if (s->num_devices < 1 || s->num_devices > STATE_MAX_DEVICES ||
	    s->num_roots < 0 || s->num_roots > STATE_MAX_ROOTS || !s->profile_json ||
	    !s->driver_version[0])
		abort();
	for (int i = 0; i < s->num_devices; i++) {
		const struct state_device *d = &s->devices[i];

		if (!state_valid_bdf(d->bus_id) || d->root < -1 || d->root >= s->num_roots ||
		    d->numa_node < -1 || d->numa_node > 1023 ||
		    !state_valid_path_component(d->uuid) || d->minor < 0 || d->minor > 254)
			abort();
	}
	for (int i = 0; i < s->num_roots; i++)
		if (!state_valid_root_id(s->roots[i].id))
			abort();
}

static void run(const char *profile, size_t plen, const char *topo, size_t tlen)
{
	struct compile_opts o = { .node_name = "node-a", .gpu_count_cap = 0 };
	struct state s;
	char err[512];
	int rc;

	state_init(&s);
	rc = compile_profile("fuzz.yaml", profile, plen, "topo.yaml", topo, tlen, &o,
			     &s, err, sizeof(err));
	if (rc != 0 && rc != -EINVAL)
		abort();
	if (rc == 0)
		check_state(&s);
	else if (strncmp(err, "fuzz.yaml:", 10) && strncmp(err, "topo.yaml:", 10))
		abort();	/* every error names its file */
	state_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;

	if (!quiet++)
		log_setup("fuzz_profile", LOG_LVL_ERROR, LOG_FMT_TEXT);
	run((const char *)data, size, NULL, 0);
	run(fixed_profile, sizeof(fixed_profile) - 1, (const char *)data, size);
	return 0;
}
