#ifndef LIVEMIC_CSNDFILE_SHIM_H
#define LIVEMIC_CSNDFILE_SHIM_H
#include <sndfile.h>
#include <errno.h>
#include <sys/types.h>
#include <linux/falloc.h>

/// glibc declares fallocate only under _GNU_SOURCE, which this module cannot set for Glibc's.
extern int fallocate(int fd, int mode, off_t offset, off_t len);

/// Reserves `length` bytes of disk at `offset` for a file being written, without changing its
/// size (FALLOC_FL_KEEP_SIZE): a recording keeps room ahead so that a full disk is seen before
/// the encoder's last frames and the header need it. 0, or the errno (ENOSPC: the disk is
/// full; EOPNOTSUPP: the file system cannot reserve).
static inline int livemic_reserve_space(int fd, off_t offset, off_t length) {
  return fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length) == 0 ? 0 : errno;
}

#endif
