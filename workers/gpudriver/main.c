/* mokka-worker-gpudriver: the gpudriver simulator behind the common worker
 * main.  Stand-alone, the real nvidia-smi to stage comes from
 * $MOKKA_NVIDIA_SMI (else the usual search). */
#include "workers/gpudriver/gpudriver.h"

int main(int argc, char **argv)
{
	return worker_main(argc, argv, &gpudriver_simulator);
}
