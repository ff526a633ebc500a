// Upload sink: SHA-256 and write(2) of upload chunks in the thread pool instead of on the JS thread.
// Hashing on the JS thread serialised it with reading the socket and cost a third of upload
// throughput (docs/benchmarks.md, finding 7). Each writeHashed() call hashes a batch of
// buffers in order and appends them with pwritev at the writer's position, as two thread-pool jobs
// that run side by side (done in series they were the slowest stage of an upload); it reports when
// both have ended. Calls on one writer must not overlap (the JS sink is a Writable, which never
// overlaps its writes), so each job has the hash context or the file offset to itself. SHA-256 is
// OpenSSL's, which Node exports to addons (with SHA-NI where the CPU has it).
//
// Direct mode (O_DIRECT): the write job copies the batch into an aligned staging buffer and writes
// it to the device in STAGE_SIZE blocks, bypassing the page cache. An upload must be durable before
// it is acknowledged, and on the machines measured the kernel's buffered writeback made that 3-5x
// slower than writing directly (docs/benchmarks.md, finding 8); it also keeps one upload from
// filling the page cache and stalling every other writer. The tail that is not a whole block goes
// out buffered, in the last batch. Filesystems that refuse O_DIRECT get ordinary pwritev.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <node_api.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

typedef struct {
  int fd;          /* our own dup: JS may close its descriptor while a batch is in flight */
  int64_t offset;  /* where the next batch goes */
  int busy;        /* a batch is in flight */
  int closing;     /* close() arrived while busy: the batch's completion closes */
  int finished;    /* digestHashed() ran: the hash is final */
  char *stage;     /* direct mode (O_DIRECT set on fd): STAGE_SIZE bytes, DIRECT_ALIGN-aligned */
  size_t staged;   /* bytes in stage not yet written */
  int error;       /* the first failed batch's errno: file and hash disagree, the writer takes no more */
  EVP_MD_CTX *md;
} writer_t;

/* 4096 is a multiple of every common device's logical block size; 1 MiB writes ran at the disk's
   rate in measurements (dd oflag=direct), and the buffer is per upload in flight. */
#define DIRECT_ALIGN 4096
#define STAGE_SIZE (1024 * 1024)

typedef struct {
  writer_t *writer;
  struct iovec *iov;
  size_t count;
  int error;
  int pending;   /* jobs not yet done */
  int cancelled; /* a job never ran (only at shutdown) */
  int hash_error; /* set by the hash job only */
  int last;       /* direct mode: also write what is left in stage, the unaligned tail buffered */
  napi_async_work hash_work, write_work;
  napi_ref callback, buffers, handle;
} batch_t;

static void close_writer(writer_t *w) {
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  free(w->stage);
  w->stage = NULL;
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

/* The writer passed as the only argument of digestHashed, directHashed and closeHashed, or NULL. */
static writer_t *writer_arg(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return NULL;
  return writer_of(env, argv[0]);
}

/* Whether the filesystem says direct I/O needs more alignment than DIRECT_ALIGN, or none is
   possible (Linux 6.1+ reports it; older kernels and tmpfs do not, and then we try). */
static int dio_align_unsuitable(int fd) {
#ifdef STATX_DIOALIGN
  struct statx stx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) != 0 || !(stx.stx_mask & STATX_DIOALIGN)) return 0;
  return stx.stx_dio_offset_align == 0 || stx.stx_dio_offset_align > DIRECT_ALIGN ||
         stx.stx_dio_mem_align > DIRECT_ALIGN;
#else
  (void)fd;
  return 0;
#endif
}

/* Direct mode on w->fd if the filesystem takes it and the file is empty; otherwise stays buffered. */
static void try_direct(writer_t *w) {
  void *stage = NULL;
  struct stat st;
  int flags = fcntl(w->fd, F_GETFL);
  if (flags < 0 || fstat(w->fd, &st) != 0 || st.st_size != 0 || dio_align_unsuitable(w->fd)) return;
  if (posix_memalign(&stage, DIRECT_ALIGN, STAGE_SIZE) != 0) return;
  /* The flag belongs to the open file description, which JS's descriptor shares: it only syncs
     and closes it. Filesystems without O_DIRECT (some tmpfs, FUSE) answer EINVAL here. */
  if (fcntl(w->fd, F_SETFL, flags | O_DIRECT) != 0) {
    free(stage);
    return;
  }
  w->stage = stage;
}

/* hashWriter(fd, direct) → writer */
napi_value hash_writer(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], result;
  int32_t fd;
  bool direct = false;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0 ||
      napi_get_value_bool(env, argv[1], &direct) != napi_ok) {
    napi_throw_type_error(env, NULL, "hashWriter(fd, direct)");
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
    /* The code tells the HTTP layer a lack of descriptors (503) from a bug. */
    int out = errno == EMFILE || errno == ENFILE;
    napi_throw_error(env, errno == EMFILE ? "EMFILE" : errno == ENFILE ? "ENFILE" : "EBADF",
                     out ? "hashWriter: no descriptor left to duplicate the file's"
                         : "hashWriter: bad descriptor");
    return NULL;
  }
  if (direct) try_direct(w);
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

/* Writes len bytes at offset, resuming after short writes; 0 or an errno. */
static int pwrite_all(int fd, const char *buf, size_t len, int64_t offset) {
  while (len > 0) {
    ssize_t n = pwrite(fd, buf, len, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    buf += n;
    len -= (size_t)n;
    offset += n;
  }
  return 0;
}

/* Clears O_DIRECT on the descriptor (and on JS's, which shares it): later writes are buffered. */
static int stop_direct(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_DIRECT) != 0) return errno;
  return 0;
}

/* A write of staged bytes. Some filesystems accept O_DIRECT at fcntl() time and refuse the writes
   with EINVAL (old CIFS), or a short write leaves the next one misaligned: then that write and all
   later ones go through the page cache rather than failing every upload. pwrite at an explicit
   offset makes the retry safe whatever part of the first attempt landed. */
static int write_staged(writer_t *w, const char *buf, size_t len) {
  int err = pwrite_all(w->fd, buf, len, w->offset);
  if (err == EINVAL && (err = stop_direct(w->fd)) == 0) err = pwrite_all(w->fd, buf, len, w->offset);
  if (err == 0) w->offset += (int64_t)len;
  return err;
}

/* Direct mode: the batch goes through the staging buffer, written whenever it is full; the last
   batch also writes what remains, whole blocks directly and the rest buffered. */
static int write_direct(writer_t *w, const struct iovec *iov, size_t count, int last) {
  int err;
  for (size_t i = 0; i < count; i++) {
    const char *src = iov[i].iov_base;
    size_t len = iov[i].iov_len;
    while (len > 0) {
      size_t n = STAGE_SIZE - w->staged < len ? STAGE_SIZE - w->staged : len;
      memcpy(w->stage + w->staged, src, n);
      w->staged += n;
      src += n;
      len -= n;
      if (w->staged < STAGE_SIZE) continue;
      if ((err = write_staged(w, w->stage, STAGE_SIZE)) != 0) return err;
      w->staged = 0;
    }
  }
  if (!last || w->staged == 0) return 0;
  size_t whole = w->staged & ~(size_t)(DIRECT_ALIGN - 1), tail = w->staged - whole;
  if (whole > 0 && (err = write_staged(w, w->stage, whole)) != 0) return err;
  if (tail > 0) {
    if ((err = stop_direct(w->fd)) != 0 || (err = write_staged(w, w->stage + whole, tail)) != 0) return err;
  }
  w->staged = 0;
  return 0;
}

/* Thread pool: the write job, resuming after short writes. It works on a copy of the iovecs,
   which it advances, so the hash job's view stays intact. */
static void run_write(napi_env env, void *data) {
  (void)env;
  batch_t *b = data;
  writer_t *w = b->writer;
  if (w->stage != NULL) {
    b->error = write_direct(w, b->iov, b->count, b->last);
    return;
  }
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
  if (w->error == 0) w->error = b->error;
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

/* writeHashed(writer, buffers, done(errno), last): `last` marks the upload's final batch, after
   which every byte is in the file (direct mode holds up to STAGE_SIZE bytes back until then). */
napi_value write_hashed(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], name;
  napi_valuetype cbtype;
  bool is_array = false, last = false;
  uint32_t count = 0;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  writer_t *w = argc >= 3 ? writer_of(env, argv[0]) : NULL;
  if (w == NULL || napi_is_array(env, argv[1], &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, argv[1], &count) != napi_ok || napi_typeof(env, argv[2], &cbtype) != napi_ok ||
      cbtype != napi_function || (argc >= 4 && napi_get_value_bool(env, argv[3], &last) != napi_ok)) {
    napi_throw_type_error(env, NULL, "writeHashed(writer, buffers, done, last)");
    return NULL;
  }
  if (w->error != 0) {
    napi_throw_error(env, NULL, "writeHashed: an earlier batch failed");
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
  b->last = last;
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
  napi_value result;
  writer_t *w = writer_arg(env, info);
  if (w == NULL || w->busy || w->finished || w->staged > 0 || w->error != 0) {
    napi_throw_error(env, NULL,
                     "digestHashed: no writer, a batch in flight or failed, bytes not yet written, or already digested");
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

/* directHashed(writer) → whether the writer bypasses the page cache (O_DIRECT) */
napi_value direct_hashed(napi_env env, napi_callback_info info) {
  napi_value result;
  writer_t *w = writer_arg(env, info);
  if (w == NULL) {
    napi_throw_type_error(env, NULL, "directHashed(writer)");
    return NULL;
  }
  napi_get_boolean(env, w->stage != NULL, &result);
  return result;
}

/* closeHashed(writer): releases the descriptor now, or when the batch in flight ends. */
napi_value close_hashed(napi_env env, napi_callback_info info) {
  writer_t *w = writer_arg(env, info);
  if (w == NULL) {
    napi_throw_type_error(env, NULL, "closeHashed(writer)");
    return NULL;
  }
  if (w->busy) w->closing = 1;
  else close_writer(w);
  return NULL;
}
