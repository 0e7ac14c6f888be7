#ifndef LIVEMIC_CSNDFILE_SHIM_H
#define LIVEMIC_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
