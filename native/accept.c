// Accepting every waiting connection at once. libuv (since 1.45, Node 20) accepts one connection
// per event-loop turn on a listening socket; when each turn serves hundreds of busy connections,
// a turn lasts tens to hundreds of milliseconds and a burst of new clients waits in the kernel's
// queue for seconds (1 MiB downloads at 1,000 connections: 300 connections still unaccepted 4 s
// in; docs/benchmarks.md, session 16). src/http/accept-backlog.ts calls this after each accept.
//
// JS API: acceptPending(listenFd, max) -> number[]  descriptors (non-blocking, close-on-exec) of
// up to `max` connections waiting on `listenFd`; an empty array when none are (or on any error,
// which libuv's own accept then meets and reports as it always does).
#define _GNU_SOURCE
#include <errno.h>
#include <node_api.h>
#include <sys/socket.h>

napi_value accept_pending(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t fd = -1, max = 0;
  napi_value list;
  uint32_t n = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 ||
      napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_int32(env, argv[1], &max) != napi_ok) {
    napi_throw_type_error(env, NULL, "acceptPending(listenFd, max)");
    return NULL;
  }
  napi_create_array(env, &list);
  while ((int32_t)n < max) {
    int conn = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (conn < 0) {
      if (errno == EINTR) continue;
      break; /* EAGAIN: none left; anything else is libuv's to see */
    }
    napi_value v;
    napi_create_int32(env, conn, &v);
    napi_set_element(env, list, n++, v);
  }
  return list;
}
