#ifndef LIVEMIC_CEBUR128_SHIM_H
#define LIVEMIC_CEBUR128_SHIM_H
#include <ebur128.h>
#endif
