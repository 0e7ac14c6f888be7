#ifndef LIVEMIC_CMICROHTTPD_SHIM_H
#define LIVEMIC_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

/* MHD_start_daemon and the info getters are variadic, and the size and end-of-stream markers
   are cast macros: neither imports into Swift, so they are wrapped here. */

/* The web door's daemon: libmicrohttpd's own listening thread (poll) and a thread per
   connection, on the listening socket `listen_fd` (bound and listening already, of `family`);
   `completed` is called as each request ends. */
static inline struct MHD_Daemon *livemic_mhd_start(
    int listen_fd, int family, MHD_AccessHandlerCallback handler, void *context,
    MHD_RequestCompletedCallback completed, unsigned int connection_limit,
    unsigned int timeout_seconds, size_t thread_stack_bytes) {
  unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL;
  if (family == AF_INET6) flags |= MHD_USE_IPv6;
  return MHD_start_daemon(
      flags, 0, NULL, NULL, handler, context,
      MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
      MHD_OPTION_NOTIFY_COMPLETED, completed, context,
      MHD_OPTION_CONNECTION_LIMIT, connection_limit,
      MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
      MHD_OPTION_THREAD_STACK_SIZE, thread_stack_bytes,
      MHD_OPTION_END);
}

/* The peer's address of a connection (NULL when unknown). */
static inline const struct sockaddr *livemic_mhd_client_address(struct MHD_Connection *connection) {
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  return info ? info->client_addr : NULL;
}

static const enum MHD_ResponseMemoryMode livemic_mhd_persistent = MHD_RESPMEM_PERSISTENT;
static const enum MHD_ResponseMemoryMode livemic_mhd_must_copy = MHD_RESPMEM_MUST_COPY;
static const uint64_t livemic_mhd_size_unknown = MHD_SIZE_UNKNOWN;
static const ssize_t livemic_mhd_end_of_stream = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t livemic_mhd_end_with_error = MHD_CONTENT_READER_END_WITH_ERROR;

#endif
