/* mokka-worker-pcibus: the pcibus simulator behind the common worker main. */
#include "workers/pcibus/pcibus.h"

int main(int argc, char **argv)
{
	return worker_main(argc, argv, &pcibus_simulator);
}
