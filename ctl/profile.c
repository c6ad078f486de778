/* The engine config's GPUs as the mock NVML sees them: the profile
 * compiler gives each GPU its index, UUID (explicit or derived exactly as
 * the engine derives it) and PCI address; system.num_devices caps the list
 * as in the engine.  Then --gpu resolution (a candidate document is
 * validated by the overrides module: docfile.c ctl_validate). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctl/ctl.h"
#include "profile/compile.h"
#include "fileio/fileio.h"

int ctl_profile_load(struct ctl_profile *p, const char *config, char *err, size_t errlen)
{
	struct state *st = calloc(1, sizeof(*st));
	struct yl_node *doc = NULL;
	struct yl_error ye;
	char *buf = NULL, why[512];
	uint64_t cap = 0, fans = 0;
	size_t len = 0;
	int r;

	memset(p, 0, sizeof(*p));
	snprintf(p->path, sizeof(p->path), "%s", config);
	if (!st) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if ((r = fileio_read(config, PROFILE_MAX_FILE, &buf, &len, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "engine config %s%s", why,
			 r == -ENOENT ? " (is the node staged? see --host-root/--mock-root)" : "");
		goto out;
	}
	state_init(st);
	if ((r = compile_profile(config, buf, len, NULL, NULL, 0, NULL, st, why,
				 sizeof(why))) < 0) {
		snprintf(err, errlen, "engine config: %s", why);
		goto out;
	}
	/* What the compiler does not apply but the engine does. */
	if ((doc = yl_parse(buf, len, &ye))) {
		yl_u64(yl_path(doc, "system.num_devices"), &cap);
		yl_u64(yl_path(doc, "device_defaults.fan.count"), &fans);
	}
	p->fan_count = (unsigned)fans;
	for (int i = 0; i < st->num_devices && i < CTL_MAX_GPUS; i++) {
		if (cap > 0 && (uint64_t)p->n >= cap)
			break;
		p->gpu[p->n].index = (unsigned)st->devices[i].index;
		snprintf(p->gpu[p->n].uuid, sizeof(p->gpu[p->n].uuid), "%s", st->devices[i].uuid);
		snprintf(p->gpu[p->n].bus_id, sizeof(p->gpu[p->n].bus_id), "%s",
			 st->devices[i].bus_id);
		p->n++;
	}
	r = 0;
out:
	yl_free(doc);
	state_free(st);
	free(st);
	free(buf);
	return r;
}

static void gpu_list(const struct ctl_profile *p, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < p->n && n + 8 < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%u", i ? "," : "", p->gpu[i].index);
}

int ctl_target_parse(const struct ctl_profile *p, const char *spec, struct ctl_target *t,
		     char *err, size_t errlen)
{
	char list[512];
	unsigned idx;

	memset(t, 0, sizeof(*t));
	if (!strcmp(spec, "all")) {
		t->all = true;
		return 0;
	}
	for (int i = 0; i < p->n; i++) {
		const struct ctl_gpu *g = &p->gpu[i];
		bool by_index = ovr_device_key(spec, &idx) && idx == g->index;
		/* A PCI address in NVML's 8-digit-domain form matches too. */
		size_t sl = strlen(spec);
		bool by_bus = sl >= 12 && !strcasecmp(spec + sl - 12, g->bus_id) &&
			      strspn(spec, "0") >= sl - 12;

		if (by_index || !strcasecmp(spec, g->uuid) || by_bus) {
			t->gpu = i;
			return 0;
		}
	}
	gpu_list(p, list, sizeof(list));
	snprintf(err, errlen, "--gpu %s: no such GPU in %s (indices %s; or a UUID, a PCI "
		 "address, all)", spec, p->path, list);
	return -ENODEV;
}
