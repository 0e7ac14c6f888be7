#ifndef LIVEMIC_CLO_SHIM_H
#define LIVEMIC_CLO_SHIM_H
#include <lo/lo.h>
#endif
