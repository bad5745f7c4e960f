/* gradsync's C API: what the Python package (python/gradsync) reaches
 * through ctypes. A plain C surface over the C++ core, so that the process
 * that loads it next to PyTorch shares no C++ ABI with torch: no gRPC,
 * Abseil or protobuf symbol leaves this library (it exports gs_* only),
 * and torch may use either C++ ABI (Debian's 1.13, or a pip wheel).
 *
 * Three parts:
 *   - the job session: the rank's link to its job, from the rank file the
 *     worker daemon wrote (GRADSYNC_RANK_FILE): the coordinator's job
 *     store (gs_store_*), step reports (gs_report_step);
 *   - communicators over gradsync's TCP / shared-memory / hierarchical
 *     ring, rendezvoused through a store given as callbacks (any torch
 *     Store, ours included);
 *   - errors: every call returns 0 or an absl::StatusCode (4: deadline
 *     exceeded, 10: aborted, ...); gs_last_error() is the message of this
 *     thread's last failure.
 *
 * Threading: sessions and stores are thread-safe. Calls on one
 * communicator must come from one thread at a time, in the same order on
 * every rank (as for NCCL); gs_comm_abort may come from any thread.
 * Every blocking call has a deadline: the store's timeout_ms, a
 * communicator's collective timeout. */
#ifndef GRADSYNC_PYTHON_CAPI_GRADSYNC_C_H_
#define GRADSYNC_PYTHON_CAPI_GRADSYNC_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the library exports (it is built with hidden visibility). */
#define GS_API __attribute__((visibility("default")))

typedef struct gs_session gs_session;
typedef struct gs_comm gs_comm;
typedef struct gs_buffer gs_buffer;

/* Element types and reduction ops (collectives/types.h). */
enum { GS_FLOAT32 = 0, GS_FLOAT64 = 1, GS_INT32 = 2 };
enum { GS_SUM = 0, GS_AVG = 1, GS_MAX = 2, GS_MIN = 3 };

/* The message of this thread's last failed call ("" if none). */
GS_API const char* gs_last_error(void);
/* The library's version, "0.1.0". */
GS_API const char* gs_version(void);

/* ---- the job session ---- */
/* Reads the rank file (RankLaunch) and removes it: from then on the
 * credentials are in this process's memory only. */
GS_API int gs_session_open(const char* rank_file, gs_session** out);
GS_API void gs_session_close(gs_session* session);
/* The rank, world size and local rank the daemon gave this process. */
GS_API int gs_session_rank(const gs_session* session);
GS_API int gs_session_world_size(const gs_session* session);
GS_API int gs_session_local_rank(const gs_session* session);

/* The job's store (the coordinator's), in the namespace of this job's
 * generation. Values are bytes; gs_store_get fills `out` (gs_buffer_*). */
GS_API int gs_store_set(gs_session* session, const char* key, const void* value,
                        size_t size);
GS_API int gs_store_get(gs_session* session, const char* key,
                        int64_t timeout_ms, gs_buffer* out);
GS_API int gs_store_add(gs_session* session, const char* key, int64_t delta,
                        int64_t* result);
GS_API int gs_store_wait(gs_session* session, const char* const* keys, size_t n,
                         int64_t timeout_ms);

/* One step of this rank, sent by the daemon to the coordinator (metrics,
 * status, explain). Times in seconds; negative loss: none. */
typedef struct gs_step_report {
  int64_t step;
  double loss;
  double compute_s;
  double comm_s;
  double idle_s;
  double step_s;
  int64_t bytes_sent;
  int64_t bytes_received;
  int64_t samples;
  int64_t sync_bytes;
  double sync_busy_s;
  int32_t mode; /* 1 ring, 2 ps (SyncMode) */
} gs_step_report;
GS_API int gs_report_step(gs_session* session, const gs_step_report* report);

/* ---- buffers handed out by the library ---- */
GS_API gs_buffer* gs_buffer_new(void);
GS_API void gs_buffer_free(gs_buffer* buffer);
GS_API const void* gs_buffer_data(const gs_buffer* buffer);
GS_API size_t gs_buffer_size(const gs_buffer* buffer);
/* Replaces the contents (a store callback's answer). */
GS_API void gs_buffer_assign(gs_buffer* buffer, const void* data, size_t size);

/* ---- a store given as callbacks (e.g. a torch Store) ----
 * Each returns 0 or an absl::StatusCode; a get or wait that times out
 * returns 4 (DEADLINE_EXCEEDED). */
typedef int (*gs_store_set_fn)(void* ctx, const char* key, const void* value,
                               size_t size);
typedef int (*gs_store_get_fn)(void* ctx, const char* key, int64_t timeout_ms,
                               gs_buffer* out);
typedef int (*gs_store_add_fn)(void* ctx, const char* key, int64_t delta,
                               int64_t* result);
typedef struct gs_store_callbacks {
  void* ctx;
  gs_store_set_fn set;
  gs_store_get_fn get;
  gs_store_add_fn add;
} gs_store_callbacks;

/* ---- communicators ---- */
typedef struct gs_comm_options {
  const char* name;        /* unique per group in the job, e.g. "default_pg" */
  const char* listen_host; /* NULL: the session's, else 127.0.0.1 */
  const char*
      transport;      /* "auto" (shm on one host), "tcp", "shm"; NULL: auto */
  int64_t timeout_ms; /* per collective; 0: the session's, else 60 s */
  int64_t connect_timeout_ms; /* rendezvous; 0: the session's, else 120 s */
} gs_comm_options;

/* Connects `rank` of `size` through `store` (session may be NULL: no job
 * secret, the host's name). Blocks until every peer is connected. */
GS_API int gs_comm_create(gs_session* session, const gs_store_callbacks* store,
                          int rank, int size, const gs_comm_options* options,
                          gs_comm** out);
GS_API void gs_comm_destroy(gs_comm* comm);
GS_API int gs_comm_rank(const gs_comm* comm);
GS_API int gs_comm_size(const gs_comm* comm);
/* In place on `buffer` of `count` elements. */
GS_API int gs_comm_allreduce(gs_comm* comm, void* buffer, size_t count,
                             int dtype, int op);
GS_API int gs_comm_broadcast(gs_comm* comm, void* buffer, size_t count,
                             int dtype, int root);
/* recv holds size * count elements, block r from rank r. */
GS_API int gs_comm_allgather(gs_comm* comm, const void* send, void* recv,
                             size_t count, int dtype);
GS_API int gs_comm_barrier(gs_comm* comm);
/* Fails the pending and future calls with ABORTED (10), from any thread. */
GS_API void gs_comm_abort(gs_comm* comm, const char* reason);

#ifdef __cplusplus
}
#endif

#endif /* GRADSYNC_PYTHON_CAPI_GRADSYNC_C_H_ */
