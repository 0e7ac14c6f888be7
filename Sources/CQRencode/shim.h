#ifndef LIVEMIC_CQRENCODE_SHIM_H
#define LIVEMIC_CQRENCODE_SHIM_H
#include <qrencode.h>
#endif
