/* pcibind.h: whether mokka-pcifs says the nvidia driver lets go of a GPU. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "pcibind.h"

/* "0000:1A:00.0" or "00000000:1a:00.0" is the line's "0000:1a:00.0". */
static bool same_bdf(const char *bus_id, const char *bdf)
{
	size_t la = strlen(bus_id), lb = strlen(bdf);

	return la >= lb && lb > 0 && !strcasecmp(bus_id + la - lb, bdf) &&
	       strspn(bus_id, "0") >= la - lb;
}

bool pcibind_detached_in(FILE *f, const char *bus_id)
{
	char line[256], bdf[64], drv[64];
	bool detached = false;

	if (!f || !bus_id || !*bus_id)
		return false;
	rewind(f);
	while (fgets(line, sizeof(line), f))
		if (line[0] != '#' && sscanf(line, "%63s %63s", bdf, drv) == 2 &&
		    same_bdf(bus_id, bdf))
			detached = strcmp(drv, "nvidia") != 0;
	return detached;
}

bool pcibind_detached(const char *config_path, const char *bus_id)
{
	const char *slash = strrchr(config_path, '/');
	char path[4200];
	bool detached;
	FILE *f;

	if (!bus_id || !*bus_id || !slash)
		return false;
	snprintf(path, sizeof(path), "%.*s/pci-drivers", (int)(slash - config_path), config_path);
	if (!(f = fopen(path, "re")))
		return false;
	detached = pcibind_detached_in(f, bus_id);
	fclose(f);
	return detached;
}
