#ifndef LIVEMIC_CMALLOC_SHIM_H
#define LIVEMIC_CMALLOC_SHIM_H
#include <malloc.h>

/* glibc's malloc.h is not part of Swift's Glibc module: mallinfo2 (glibc 2.33) is imported here
   for the heap figure of `status` (docs/control.md). */

#endif
