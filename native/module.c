// Remessa's optional native module (built by scripts/build-native.js; loaded by src/native.ts).
#include <node_api.h>

napi_value sendfile_start(napi_env env, napi_callback_info info);
napi_value sendfile_cancel(napi_env env, napi_callback_info info);
napi_value sendfile_sent(napi_env env, napi_callback_info info);
napi_value malloc_trim_threshold(napi_env env, napi_callback_info info);
napi_value start_writeback(napi_env env, napi_callback_info info);
napi_value hash_writer(napi_env env, napi_callback_info info);
napi_value write_hashed(napi_env env, napi_callback_info info);
napi_value digest_hashed(napi_env env, napi_callback_info info);
napi_value direct_hashed(napi_env env, napi_callback_info info);
napi_value close_hashed(napi_env env, napi_callback_info info);
napi_value accept_pending(napi_env env, napi_callback_info info);
napi_value raise_file_limit(napi_env env, napi_callback_info info);

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_property_descriptor props[] = {
      {"start", NULL, sendfile_start, NULL, NULL, NULL, napi_enumerable, NULL},
      {"cancel", NULL, sendfile_cancel, NULL, NULL, NULL, napi_enumerable, NULL},
      {"sent", NULL, sendfile_sent, NULL, NULL, NULL, napi_enumerable, NULL},
      {"mallocTrimThreshold", NULL, malloc_trim_threshold, NULL, NULL, NULL, napi_enumerable, NULL},
      {"startWriteback", NULL, start_writeback, NULL, NULL, NULL, napi_enumerable, NULL},
      {"hashWriter", NULL, hash_writer, NULL, NULL, NULL, napi_enumerable, NULL},
      {"writeHashed", NULL, write_hashed, NULL, NULL, NULL, napi_enumerable, NULL},
      {"digestHashed", NULL, digest_hashed, NULL, NULL, NULL, napi_enumerable, NULL},
      {"directHashed", NULL, direct_hashed, NULL, NULL, NULL, napi_enumerable, NULL},
      {"closeHashed", NULL, close_hashed, NULL, NULL, NULL, napi_enumerable, NULL},
      {"acceptPending", NULL, accept_pending, NULL, NULL, NULL, napi_enumerable, NULL},
      {"raiseFileLimit", NULL, raise_file_limit, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
