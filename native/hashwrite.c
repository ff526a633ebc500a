// Upload sink: SHA-256 and write(2) of upload chunks in the thread pool instead of on the JS thread.
// Hashing on the JS thread serialised it with reading the socket and cost a third of upload
// throughput (docs/benchmarks.md, "Upload hashing"). Each writeHashed() call hashes a batch of
// buffers in order and appends them with pwritev at the writer's position, as two thread-pool jobs
// that run side by side (done in series they were the slowest stage of an upload); it reports when
// both have ended. Calls on one writer must not overlap (the JS sink is a Writable, which never
// overlaps its writes), so each job has the hash context or the file offset to itself. SHA-256 is
// OpenSSL's, which Node exports to addons (with SHA-NI where the CPU has it).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <node_api.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

typedef struct {
  int fd;          /* our own dup: JS may close its descriptor while a batch is in flight */
  int64_t offset;  /* where the next batch goes */
  int busy;        /* a batch is in flight */
  int closing;     /* close() arrived while busy: the batch's completion closes */
  int finished;    /* digestHashed() ran: the hash is final */
  EVP_MD_CTX *md;
} writer_t;

typedef struct {
  writer_t *writer;
  struct iovec *iov;
  size_t count;
  int error;
  int pending;   /* jobs not yet done */
  int cancelled; /* a job never ran (only at shutdown) */
  int hash_error; /* set by the hash job only */
  napi_async_work hash_work, write_work;
  napi_ref callback, buffers, handle;
} batch_t;

static void close_writer(writer_t *w) {
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
}

static void finalize_writer(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  writer_t *w = data;
  close_writer(w);
  EVP_MD_CTX_free(w->md);
  free(w);
}

static writer_t *writer_of(napi_env env, napi_value v) {
  void *data = NULL;
  napi_valuetype type;
  if (napi_typeof(env, v, &type) != napi_ok || type != napi_external) return NULL;
  if (napi_get_value_external(env, v, &data) != napi_ok) return NULL;
  return data;
}

/* hashWriter(fd) → writer */
napi_value hash_writer(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  int32_t fd;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) {
    napi_throw_type_error(env, NULL, "hashWriter(fd)");
    return NULL;
  }
  writer_t *w = calloc(1, sizeof *w);
  if (w == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  w->md = EVP_MD_CTX_new();
  if (w->md == NULL || EVP_DigestInit_ex(w->md, EVP_sha256(), NULL) != 1) {
    EVP_MD_CTX_free(w->md);
    free(w);
    napi_throw_error(env, NULL, "hashWriter: SHA-256 unavailable");
    return NULL;
  }
  w->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (w->fd < 0) {
    EVP_MD_CTX_free(w->md);
    free(w);
    napi_throw_error(env, NULL, "hashWriter: bad descriptor");
    return NULL;
  }
  if (napi_create_external(env, w, finalize_writer, NULL, &result) != napi_ok) {
    finalize_writer(env, w, NULL);
    napi_throw_error(env, NULL, "hashWriter: could not create the handle");
    return NULL;
  }
  return result;
}

/* Thread pool: the hash job. */
static void run_hash(napi_env env, void *data) {
  (void)env;
  batch_t *b = data;
  for (size_t i = 0; i < b->count; i++) {
    if (EVP_DigestUpdate(b->writer->md, b->iov[i].iov_base, b->iov[i].iov_len) != 1) {
      b->hash_error = EIO; /* a wrong hash must fail the upload, never be stored */
      return;
    }
  }
}

/* Thread pool: the write job, resuming after short writes. It works on a copy of the iovecs,
   which it advances, so the hash job's view stays intact. */
static void run_write(napi_env env, void *data) {
  (void)env;
  batch_t *b = data;
  writer_t *w = b->writer;
  struct iovec *iov = b->iov + b->count;
  memcpy(iov, b->iov, b->count * sizeof *iov);
  size_t left = b->count;
  for (;;) {
    while (left > 0 && iov->iov_len == 0) { /* empty chunks: nothing to write, and pwritev would say 0 */
      iov++;
      left--;
    }
    if (left == 0) break;
    ssize_t n = pwritev(w->fd, iov, left > IOV_MAX ? IOV_MAX : (int)left, w->offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      b->error = errno;
      return;
    }
    if (n == 0) {
      b->error = EIO;
      return;
    }
    w->offset += n;
    while (left > 0 && (size_t)n >= iov->iov_len) {
      n -= (ssize_t)iov->iov_len;
      iov++;
      left--;
    }
    if (left > 0) {
      iov->iov_base = (char *)iov->iov_base + n;
      iov->iov_len -= (size_t)n;
    }
  }
}

/* JS thread, once per job: the second one to end reports the batch. */
static void done(napi_env env, napi_status status, void *data) {
  batch_t *b = data;
  writer_t *w = b->writer;
  if (status == napi_cancelled) b->cancelled = 1;
  if (--b->pending > 0) return;
  /* Both jobs have ended: b->error is safe to read now. */
  if (b->error == 0) b->error = b->hash_error;
  if (b->error == 0 && b->cancelled) b->error = ECANCELED;
  w->busy = 0;
  if (w->closing) close_writer(w);
  napi_value callback, undefined, argv[1];
  if (napi_get_reference_value(env, b->callback, &callback) == napi_ok && callback != NULL) {
    napi_get_undefined(env, &undefined);
    napi_create_int32(env, b->error, &argv[0]);
    napi_call_function(env, undefined, callback, 1, argv, NULL);
  }
  napi_delete_reference(env, b->callback);
  napi_delete_reference(env, b->buffers);
  napi_delete_reference(env, b->handle);
  napi_delete_async_work(env, b->hash_work);
  napi_delete_async_work(env, b->write_work);
  free(b->iov);
  free(b);
}

/* writeHashed(writer, buffers, done(errno)) */
napi_value write_hashed(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], name;
  napi_valuetype cbtype;
  bool is_array = false;
  uint32_t count = 0;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  writer_t *w = argc >= 3 ? writer_of(env, argv[0]) : NULL;
  if (w == NULL || napi_is_array(env, argv[1], &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, argv[1], &count) != napi_ok || napi_typeof(env, argv[2], &cbtype) != napi_ok ||
      cbtype != napi_function) {
    napi_throw_type_error(env, NULL, "writeHashed(writer, buffers, done)");
    return NULL;
  }
  if (w->busy || w->closing || w->finished || w->fd < 0) {
    napi_throw_error(env, NULL, "writeHashed: writer busy or closed");
    return NULL;
  }
  batch_t *b = calloc(1, sizeof *b);
  /* count iovecs for the hash job, then count more for the write job to advance. */
  struct iovec *iov = calloc(count ? 2 * (size_t)count : 1, sizeof *iov);
  if (b == NULL || iov == NULL) {
    free(b);
    free(iov);
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  for (uint32_t i = 0; i < count; i++) {
    napi_value item;
    bool is_buffer = false;
    void *base = NULL;
    size_t len = 0;
    if (napi_get_element(env, argv[1], i, &item) != napi_ok || napi_is_buffer(env, item, &is_buffer) != napi_ok ||
        !is_buffer || napi_get_buffer_info(env, item, &base, &len) != napi_ok) {
      free(b);
      free(iov);
      napi_throw_type_error(env, NULL, "writeHashed: buffers must be Buffers");
      return NULL;
    }
    iov[i].iov_base = base;
    iov[i].iov_len = len;
  }
  b->writer = w;
  b->iov = iov;
  b->count = count;
  /* The array keeps the buffers alive and the handle keeps the writer alive until done(). If any
     step fails, nothing has been queued: undo and throw, so the caller's stream fails instead of
     waiting for a batch that will never report. */
  if (napi_create_string_utf8(env, "remessa.writeHashed", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_reference(env, argv[1], 1, &b->buffers) != napi_ok ||
      napi_create_reference(env, argv[0], 1, &b->handle) != napi_ok ||
      napi_create_reference(env, argv[2], 1, &b->callback) != napi_ok ||
      napi_create_async_work(env, NULL, name, run_hash, done, b, &b->hash_work) != napi_ok ||
      napi_create_async_work(env, NULL, name, run_write, done, b, &b->write_work) != napi_ok ||
      napi_queue_async_work(env, b->write_work) != napi_ok) {
    if (b->buffers) napi_delete_reference(env, b->buffers);
    if (b->handle) napi_delete_reference(env, b->handle);
    if (b->callback) napi_delete_reference(env, b->callback);
    if (b->hash_work) napi_delete_async_work(env, b->hash_work);
    if (b->write_work) napi_delete_async_work(env, b->write_work);
    free(iov);
    free(b);
    napi_throw_error(env, NULL, "writeHashed: could not queue the batch");
    return NULL;
  }
  b->pending = 2;
  w->busy = 1;
  if (napi_queue_async_work(env, b->hash_work) != napi_ok) {
    /* The write job is queued already; let it report the batch, as failed. */
    b->pending = 1;
    b->hash_error = EIO;
  }
  return NULL;
}

/* digestHashed(writer) → hex SHA-256 of everything written; the writer takes no more. */
napi_value digest_hashed(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  writer_t *w = argc >= 1 ? writer_of(env, argv[0]) : NULL;
  if (w == NULL || w->busy || w->finished) {
    napi_throw_error(env, NULL, "digestHashed: no writer, a batch in flight, or already digested");
    return NULL;
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(w->md, md, &len) != 1) {
    napi_throw_error(env, NULL, "digestHashed: digest failed");
    return NULL;
  }
  w->finished = 1;
  char hex[2 * EVP_MAX_MD_SIZE + 1];
  static const char digits[] = "0123456789abcdef";
  for (unsigned int i = 0; i < len; i++) {
    hex[2 * i] = digits[md[i] >> 4];
    hex[2 * i + 1] = digits[md[i] & 15];
  }
  close_writer(w);
  napi_create_string_utf8(env, hex, 2 * len, &result);
  return result;
}

/* closeHashed(writer): releases the descriptor now, or when the batch in flight ends. */
napi_value close_hashed(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  writer_t *w = argc >= 1 ? writer_of(env, argv[0]) : NULL;
  if (w == NULL) {
    napi_throw_type_error(env, NULL, "closeHashed(writer)");
    return NULL;
  }
  if (w->busy) w->closing = 1;
  else close_writer(w);
  return NULL;
}
