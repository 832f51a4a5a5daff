// The libuv headers, for the EventLoop module (the only importer of CUV).
#ifndef ASSETD_CUV_SHIM_H
#define ASSETD_CUV_SHIM_H
#include <uv.h>
#endif
