/* Profile values the compiled state does not carry (VBIOS, GSP firmware,
 * power limits), looked up in the profile as JSON (state->profile_json):
 * the devices[] entry first, then device_defaults, as the engine merges
 * them. */
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "workers/gpudriver/gpudriver.h"

struct gd_profile {
	cJSON *root;
};

struct gd_profile *gd_profile_open(const struct state *s)
{
	struct gd_profile *p = calloc(1, sizeof(*p));

	if (p && s->profile_json)
		p->root = cJSON_Parse(s->profile_json);
	return p;
}

void gd_profile_close(struct gd_profile *p)
{
	if (!p)
		return;
	cJSON_Delete(p->root);
	free(p);
}

static const cJSON *dotted(const cJSON *o, const char *key)
{
	char part[128];

	while (o && *key) {
		size_t n = strcspn(key, ".");
		if (n >= sizeof(part))
			return NULL;
		memcpy(part, key, n);
		part[n] = '\0';
		o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, part) : NULL;
		key += n + (key[n] == '.');
	}
	return o;
}

/* The devices[] entry for a device index: by its "index" key, else by
 * position (the compiler sorts by index, so position i is index i). */
static const cJSON *device_entry(const cJSON *root, int index)
{
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(root, "devices"), *d;
	int pos = 0;

	cJSON_ArrayForEach(d, devs) {
		const cJSON *ix = cJSON_GetObjectItemCaseSensitive(d, "index");
		if (cJSON_IsNumber(ix) ? (int)ix->valuedouble == index : pos == index)
			return d;
		pos++;
	}
	return NULL;
}

static const cJSON *lookup(struct gd_profile *p, int index, const char *key)
{
	const cJSON *v;

	if (!p || !p->root)
		return NULL;
	if ((v = dotted(device_entry(p->root, index), key)))
		return v;
	return dotted(cJSON_GetObjectItemCaseSensitive(p->root, "device_defaults"), key);
}

const char *gd_profile_str(struct gd_profile *p, int index, const char *key)
{
	const cJSON *v = lookup(p, index, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

bool gd_profile_num(struct gd_profile *p, int index, const char *key, double *out)
{
	const cJSON *v = lookup(p, index, key);

	if (!cJSON_IsNumber(v))
		return false;
	*out = v->valuedouble;
	return true;
}

int gd_profile_device_count(struct gd_profile *p)
{
	const cJSON *devs = p && p->root ? cJSON_GetObjectItemCaseSensitive(p->root, "devices") : NULL;

	return cJSON_IsArray(devs) ? cJSON_GetArraySize(devs) : -1;
}

bool gd_profile_has_system_key(struct gd_profile *p, const char *key)
{
	const cJSON *sys = p && p->root ? cJSON_GetObjectItemCaseSensitive(p->root, "system") : NULL;

	return cJSON_GetObjectItemCaseSensitive(sys, key) != NULL;
}
