#ifndef LIVEMIC_CSPEEXDSP_SHIM_H
#define LIVEMIC_CSPEEXDSP_SHIM_H

#include <speex/speex_preprocess.h>
#include <speex/speex_echo.h>

#endif
