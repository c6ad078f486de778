/* NVML's MIG structs (layouts of the public nvml.h, x86-64 LP64) for
 * api_mig*.c. */
#ifndef MOKKA_NVML_MIG_TYPES_H
#define MOKKA_NVML_MIG_TYPES_H

#include "shims/nvml/nvml_types.h"

typedef void *nvmlGpuInstance_t;
typedef void *nvmlComputeInstance_t;

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96

typedef struct {
	unsigned start, size;
} nvmlGpuInstancePlacement_t, nvmlComputeInstancePlacement_t;

typedef struct {
	unsigned id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount;
	unsigned copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount;
	unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct {	/* v2; v3 drops isP2pSupported and adds capabilities */
	unsigned version;
	unsigned id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount;
	unsigned copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount;
	unsigned long long memorySizeMB;
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlGpuInstanceProfileInfo_v2_t;

typedef struct {
	unsigned version;
	unsigned id, sliceCount, instanceCount, multiprocessorCount;
	unsigned copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount;
	unsigned long long memorySizeMB;
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	unsigned capabilities;
} nvmlGpuInstanceProfileInfo_v3_t;

typedef struct {
	nvmlDevice_t device;
	unsigned id, profileId;
	nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
	unsigned id, sliceCount, instanceCount, multiprocessorCount;
	unsigned sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount;
	unsigned sharedJpegCount, sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct {	/* v2 (v3 appends capabilities) */
	unsigned version;
	unsigned id, sliceCount, instanceCount, multiprocessorCount;
	unsigned sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount;
	unsigned sharedJpegCount, sharedOfaCount;
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	unsigned capabilities;
} nvmlComputeInstanceProfileInfo_v3_t;

typedef struct {
	nvmlDevice_t device;
	nvmlGpuInstance_t gpuInstance;
	unsigned id, profileId;
	nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

typedef struct {
	unsigned multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount;
	unsigned sharedEncoderCount, sharedJpegCount, sharedOfaCount;
	unsigned gpuInstanceSliceCount, computeInstanceSliceCount;
	unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152, "GI profile info v2 layout");
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v3_t) == 152, "GI profile info v3 layout");
_Static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24, "GI info layout");
_Static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32, "CI info layout");
_Static_assert(sizeof(nvmlComputeInstanceProfileInfo_v3_t) == 140, "CI profile info v3 layout");

#define NVML_GI_PROFILE_INFO_V2 NVML_STRUCT_VERSION(sizeof(nvmlGpuInstanceProfileInfo_v2_t), 2)
#define NVML_GI_PROFILE_INFO_V3 NVML_STRUCT_VERSION(sizeof(nvmlGpuInstanceProfileInfo_v3_t), 3)
#define NVML_CI_PROFILE_INFO_V2 NVML_STRUCT_VERSION(136, 2)
#define NVML_CI_PROFILE_INFO_V3 NVML_STRUCT_VERSION(sizeof(nvmlComputeInstanceProfileInfo_v3_t), 3)

#endif
