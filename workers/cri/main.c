/* mokka-worker-cri: the cri simulator behind the common worker main. */
#include "workers/cri/cri.h"

int main(int argc, char **argv)
{
	return worker_main(argc, argv, &cri_simulator);
}
