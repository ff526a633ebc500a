// glibc malloc tuning for a long-running server that receives large uploads. Socket reads come in
// 64 KiB buffers allocated and freed by several threads; with glibc's defaults the freed memory
// stays mapped in per-thread arenas, and resident memory grows by ~20 MB with each large upload.
// A fixed trim threshold makes free() return it to the system (docs/benchmarks.md, "Memory").
#include <malloc.h>
#include <node_api.h>

napi_value malloc_trim_threshold(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], result;
  int64_t bytes = 0;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_int64(env, argv[0], &bytes) != napi_ok || bytes < 0 || bytes > (1ll << 30)) {
    napi_throw_type_error(env, NULL, "mallocTrimThreshold(bytes)");
    return NULL;
  }
#ifdef __GLIBC__
  napi_get_boolean(env, mallopt(M_TRIM_THRESHOLD, (int)bytes) == 1, &result);
#else
  napi_get_boolean(env, 0, &result); /* musl & co. have no such knob */
#endif
  return result;
}

