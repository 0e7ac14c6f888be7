#ifndef LIVEMIC_CFFTW_SHIM_H
#define LIVEMIC_CFFTW_SHIM_H

// FFTW 3, single precision (libfftw3f): the feedback suppressor's spectral analysis.
// Only fftwf_execute is thread-safe; plan creation and destruction are serialized by the caller.
#include <fftw3.h>

#endif
