/* mokka-worker-ib: the ib simulator behind the common worker main. */
#include "workers/ib/ib.h"

int main(int argc, char **argv)
{
	return worker_main(argc, argv, &ib_simulator);
}
