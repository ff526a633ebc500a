// The process's limit on open descriptors. Each upload being received holds about three (its
// connection, its file, the writer's duplicate of it), and the usual soft limit of 1,024 is a
// default for interactive shells rather than for servers: the soft limit is raised to the hard one.
#include <node_api.h>
#include <sys/resource.h>

/* Linux refuses a limit above fs.nr_open (1,048,576 by default), and RLIM_INFINITY with it. */
#define MOST_FILES ((rlim_t)1 << 20)

napi_value raise_file_limit(napi_env env, napi_callback_info info) {
  (void)info;
  struct rlimit lim;
  napi_value result;
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    napi_create_int64(env, -1, &result);
    return result;
  }
  rlim_t want = lim.rlim_max == RLIM_INFINITY || lim.rlim_max > MOST_FILES ? MOST_FILES : lim.rlim_max;
  if (want > lim.rlim_cur) {
    struct rlimit raised = {want, lim.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim.rlim_cur = want;
  }
  napi_create_int64(env, (int64_t)lim.rlim_cur, &result);
  return result;
}
