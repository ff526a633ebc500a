// Zero-copy downloads: Linux sendfile(2) from a stored file straight into the client's socket,
// driven by one epoll thread, so file bytes never pass through JavaScript buffers. Node has no
// sendfile of its own (docs/decisions.md, "Downloads by sendfile"). Optional: when this module is
// not built, downloads stream through user space as before (src/files/sendfile-body.ts).
//
// JS API (exported by module.c):
//   start(socketFd, fileFd, offset, length, done(errno, sent)) -> handle
//   sent(handle)     bytes handed to the socket so far (for the stall watchdog in JS)
//   cancel(handle)   stop early (the socket is shut down; `done` still runs once)
// Both descriptors are dup()ed: whatever JavaScript closes meanwhile, this thread never writes to
// a descriptor number that has been reused for another connection.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#define CALL_BYTES (1u << 20) /* per sendfile(2) call: bounds how long a disk read holds the thread */
#define TURN_BYTES (16u << 20) /* per wake-up, then the other transfers get their turn */

/* One thread-safe function per Node environment carries every transfer's completion to its JS
   thread. (One per transfer meant a libuv async handle per download in flight, created and closed
   each time, and every wake-up of the loop scanned all of them: at 1,000 connections, 1,000.) It is
   referenced, keeping the loop alive, only while transfers are in flight, as a handle per transfer
   did. */
typedef struct {
  napi_threadsafe_function tsfn;
  int64_t in_flight; /* JS thread only */
} completions_t;

typedef struct transfer {
  int sock, file;
  off_t offset;
  uint64_t left;
  uint64_t sent; /* written by the worker, read by JS: atomic */
  int error;
  int cancelled, closed; /* under lock */
  int refs;              /* the JS handle and the completion call; touched on the JS thread only */
  pthread_mutex_t lock;
  napi_ref callback;          /* done(errno, sent) */
  completions_t *completions; /* the environment's: carries `done` to the JS thread */
} transfer_t;

static int epfd = -1;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

static void unref(transfer_t *t) {
  if (--t->refs > 0) return;
  pthread_mutex_destroy(&t->lock);
  free(t);
}

/* Worker thread: closes the descriptors and hands the result to the JS thread. */
static void finish(transfer_t *t, int error) {
  pthread_mutex_lock(&t->lock);
  epoll_ctl(epfd, EPOLL_CTL_DEL, t->sock, NULL);
  close(t->sock);
  close(t->file);
  t->closed = 1;
  t->error = t->cancelled ? ECANCELED : error;
  pthread_mutex_unlock(&t->lock);
  /* The queue is unbounded, so this never blocks. Fails only while Node is shutting down; the
     transfer's memory is then left to the exit. */
  napi_call_threadsafe_function(t->completions->tsfn, t, napi_tsfn_blocking);
}

static void arm(transfer_t *t, int op) {
  struct epoll_event ev = {.events = EPOLLOUT | EPOLLONESHOT, .data.ptr = t};
  if (epoll_ctl(epfd, op, t->sock, &ev) != 0) finish(t, errno);
}

/* Worker thread: sends until the socket is full, the turn is used up, or the transfer is over. */
static void pump(transfer_t *t) {
  pthread_mutex_lock(&t->lock);
  int cancelled = t->cancelled;
  pthread_mutex_unlock(&t->lock);
  if (cancelled) return finish(t, ECANCELED);
  uint64_t turn = 0;
  while (t->left > 0) {
    size_t want = t->left < CALL_BYTES ? (size_t)t->left : CALL_BYTES;
    ssize_t n = sendfile(t->sock, t->file, &t->offset, want);
    if (n > 0) {
      t->left -= (uint64_t)n;
      __atomic_add_fetch(&t->sent, (uint64_t)n, __ATOMIC_RELAXED);
      turn += (uint64_t)n;
      if (turn >= TURN_BYTES && t->left > 0) return arm(t, EPOLL_CTL_MOD);
    } else if (n == 0) {
      return finish(t, ENODATA); /* the file is shorter than promised */
    } else if (errno == EAGAIN) {
      return arm(t, EPOLL_CTL_MOD);
    } else if (errno != EINTR) {
      return finish(t, errno);
    }
  }
  finish(t, 0);
}

static void *worker(void *arg) {
  (void)arg;
  struct epoll_event events[64];
  for (;;) {
    int n = epoll_wait(epfd, events, 64, -1);
    for (int i = 0; i < n; i++) pump(events[i].data.ptr);
  }
  return NULL;
}

/* Starts the epoll thread on first use; 0 or an errno. A failure is retried by the next call. */
static int start_worker(void) {
  int error = 0;
  pthread_mutex_lock(&start_lock);
  if (epfd < 0) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) {
      error = errno;
    } else {
      /* Signals stay with Node's threads. */
      sigset_t all, old;
      sigfillset(&all);
      pthread_sigmask(SIG_SETMASK, &all, &old);
      pthread_t tid;
      epfd = fd;
      error = pthread_create(&tid, NULL, worker, NULL);
      pthread_sigmask(SIG_SETMASK, &old, NULL);
      if (error != 0) {
        close(fd);
        epfd = -1;
      } else {
        pthread_detach(tid);
      }
    }
  }
  pthread_mutex_unlock(&start_lock);
  return error;
}

/* JS thread: runs the transfer's `done(errno, sent)`. */
static void call_done(napi_env env, napi_value unused, void *context, void *data) {
  (void)unused;
  (void)context;
  transfer_t *t = data;
  if (env != NULL) {
    napi_value callback, undefined, argv[2];
    if (napi_get_reference_value(env, t->callback, &callback) == napi_ok && callback != NULL) {
      napi_get_undefined(env, &undefined);
      napi_create_int32(env, t->error, &argv[0]);
      napi_create_double(env, (double)__atomic_load_n(&t->sent, __ATOMIC_RELAXED), &argv[1]);
      napi_call_function(env, undefined, callback, 2, argv, NULL);
    }
    napi_delete_reference(env, t->callback);
    if (--t->completions->in_flight == 0) napi_unref_threadsafe_function(env, t->completions->tsfn);
  }
  unref(t);
}

static void free_completions(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  free(data); /* the thread-safe function itself goes with the environment */
}

/* The environment's completions, made on first use; NULL if they could not be. */
static completions_t *completions_of(napi_env env) {
  completions_t *c = NULL;
  if (napi_get_instance_data(env, (void **)&c) == napi_ok && c != NULL) return c;
  c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  napi_value name;
  napi_create_string_utf8(env, "remessa.sendfile", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, NULL, NULL, NULL, call_done, &c->tsfn) !=
      napi_ok) {
    free(c);
    return NULL;
  }
  napi_unref_threadsafe_function(env, c->tsfn);
  if (napi_set_instance_data(env, c, free_completions, NULL) != napi_ok) {
    napi_release_threadsafe_function(c->tsfn, napi_tsfn_abort);
    free(c);
    return NULL;
  }
  return c;
}

static void release_handle(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  unref(data);
}

static napi_value throw_errno(napi_env env, const char *what, int error) {
  char message[256];
  snprintf(message, sizeof message, "%s: %s", what, strerror(error));
  napi_throw_error(env, NULL, message);
  return NULL;
}

napi_value sendfile_start(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t sock, file;
  int64_t offset, length;
  napi_valuetype cbtype;
  if (argc < 5 || napi_get_value_int32(env, argv[0], &sock) != napi_ok ||
      napi_get_value_int32(env, argv[1], &file) != napi_ok ||
      napi_get_value_int64(env, argv[2], &offset) != napi_ok ||
      napi_get_value_int64(env, argv[3], &length) != napi_ok || napi_typeof(env, argv[4], &cbtype) != napi_ok ||
      cbtype != napi_function || sock < 0 || file < 0 || offset < 0 || length <= 0) {
    napi_throw_type_error(env, NULL, "start(socketFd, fileFd, offset, length > 0, done)");
    return NULL;
  }
  int error = start_worker();
  if (error) return throw_errno(env, "sendfile worker could not start", error);

  transfer_t *t = calloc(1, sizeof *t);
  if (t == NULL) return throw_errno(env, "out of memory", ENOMEM);
  pthread_mutex_init(&t->lock, NULL);
  t->offset = (off_t)offset;
  t->left = (uint64_t)length;
  t->refs = 2;
  t->sock = fcntl(sock, F_DUPFD_CLOEXEC, 0);
  if (t->sock < 0) error = errno;
  t->file = error ? -1 : fcntl(file, F_DUPFD_CLOEXEC, 0);
  if (!error && t->file < 0) error = errno;
  t->completions = error ? NULL : completions_of(env);
  if (!error && (t->completions == NULL || napi_create_reference(env, argv[4], 1, &t->callback) != napi_ok))
    error = ENOMEM;
  if (error) {
    if (t->sock >= 0) close(t->sock);
    if (t->file >= 0) close(t->file);
    pthread_mutex_destroy(&t->lock);
    free(t);
    return throw_errno(env, "sendfile could not start", error);
  }
  if (t->completions->in_flight++ == 0) napi_ref_threadsafe_function(env, t->completions->tsfn);
  napi_value handle;
  napi_create_external(env, t, release_handle, NULL, &handle);
  /* From here on the worker owns the descriptors and calls `done` exactly once. */
  struct epoll_event ev = {.events = EPOLLOUT | EPOLLONESHOT, .data.ptr = t};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, t->sock, &ev) != 0) finish(t, errno);
  return handle;
}

/* The transfer behind the handle passed as the only argument, or NULL with a TypeError thrown. */
static transfer_t *transfer_arg(napi_env env, napi_callback_info info, const char *usage) {
  size_t argc = 1;
  napi_value argv[1];
  void *data = NULL;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_external(env, argv[0], &data) != napi_ok) {
    napi_throw_type_error(env, NULL, usage);
    return NULL;
  }
  return data;
}

napi_value sendfile_sent(napi_env env, napi_callback_info info) {
  transfer_t *t = transfer_arg(env, info, "sent(handle)");
  if (t == NULL) return NULL;
  napi_value result;
  napi_create_double(env, (double)__atomic_load_n(&t->sent, __ATOMIC_RELAXED), &result);
  return result;
}

napi_value sendfile_cancel(napi_env env, napi_callback_info info) {
  transfer_t *t = transfer_arg(env, info, "cancel(handle)");
  if (t == NULL) return NULL;
  pthread_mutex_lock(&t->lock);
  if (!t->closed) {
    t->cancelled = 1;
    /* Wakes the worker (the socket turns writable/hung up) and stops the client's transfer. */
    shutdown(t->sock, SHUT_RDWR);
  }
  pthread_mutex_unlock(&t->lock);
  return NULL;
}
