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

/* ---- the job's sync mode and switches ----
 * The mode of step 0 and the spec's scripted switches ("--switch-at"),
 * as SyncMode numbers (1 ring, 2 ps). */
GS_API int gs_session_mode(const gs_session* session);
GS_API size_t gs_session_num_switches(const gs_session* session);
GS_API int gs_session_switch(const gs_session* session, size_t i,
                             int64_t* step, int32_t* mode);
/* Waits up to timeout_ms for runtime switch request `epoch` (> 0) of the
 * job (`gradsync switch`, or --mode auto: the coordinator's job-store key
 * "switch/<epoch>") and sets *mode to its mode. A request that names PS
 * shards makes them the ones the next gs_ps_open uses. 4
 * (DEADLINE_EXCEEDED): no such request yet. */
GS_API int gs_session_await_switch(gs_session* session, int64_t epoch,
                                   int64_t timeout_ms, int32_t* mode);

/* ---- the job's parameter server (the torch PS path) ----
 * One rank's client of the job's PS shards over a flat fp32 vector of
 * `total` elements (python/gradsync/torch/ps.py lays a model's gradients
 * out in it). The shards average the ranks' pushes (rank order), then
 * apply `optimizer`: "sum" hands the average back as it is (the rank's own
 * optimizer steps: BytePS's servers), "sgd", "momentum", "adam" and
 * "adamw" update parameters kept on the shards (hyper-parameters as in
 * common/optimizer.h; the learning rate may change every step).
 * Threading: one thread calls gs_ps_start and gs_ps_finish in turn;
 * gs_ps_ready and gs_ps_abort may come from any thread. */
typedef struct gs_ps gs_ps;
typedef struct gs_ps_optimizer {
  const char* name; /* "sum", "sgd", "momentum", "adam", "adamw" */
  double lr;
  double weight_decay;
  double momentum;
  double dampening;
  int32_t nesterov;
  double beta1;
  double beta2;
  double eps;
} gs_ps_optimizer;
typedef struct gs_ps_result {
  uint64_t bytes_sent;
  uint64_t bytes_received;
  double busy_s; /* a shard stream was moving bytes or awaiting a reply */
} gs_ps_result;

/* A client of the job's current shards (the assignment's, or the newest
 * switch's). FAILED_PRECONDITION (9) when the job has none. */
GS_API int gs_ps_open(gs_session* session, size_t total,
                      const gs_ps_optimizer* optimizer, gs_ps** out);
GS_API void gs_ps_close(gs_ps* ps);
/* Creates and seeds the shards this rank owns (k = rank, rank + world,
 * ...) with `params` (total floats) for step `step`, and the optimizer's
 * `n_state` state buffers (total floats each) after `optimizer_step`
 * steps. Every rank calls it with the same data, then the ranks meet at a
 * barrier before the first step. */
GS_API int gs_ps_seed(gs_ps* ps, int64_t step, const float* params,
                      const float* const* state, size_t n_state,
                      uint64_t optimizer_step);
/* Starts step `step`: each shard's push sends its range of `grads` as
 * gs_ps_ready marks it final; the reply (the average for "sum", else the
 * parameters of step + 1) lands in `out`. Both hold `total` floats and
 * stay valid until gs_ps_finish returns. lr > 0: the shards' learning
 * rate for this step (rank 0's counts). */
GS_API int gs_ps_start(gs_ps* ps, int64_t step, const float* grads, float* out,
                       double lr);
/* Elements [begin, end) of the gradient are final (any order, once). */
GS_API int gs_ps_ready(gs_ps* ps, size_t begin, size_t end);
/* Waits for every shard's reply (up to timeout_ms; 0: the session's
 * collective timeout). */
GS_API int gs_ps_finish(gs_ps* ps, int64_t timeout_ms, gs_ps_result* result);
/* The shards' parameters and optimizer state for step `step` (a switch
 * away from the PS): `params` and n_state buffers of total floats. */
GS_API int gs_ps_fetch(gs_ps* ps, int64_t step, float* params,
                       float* const* state, size_t n_state,
                       uint64_t* optimizer_step);
/* Drops the job's shards (rank 0, after a switch away from the PS). */
GS_API int gs_ps_release(gs_ps* ps);
/* Fails the step in flight and every later call with ABORTED (10). */
GS_API void gs_ps_abort(gs_ps* ps, const char* reason);

#ifdef __cplusplus
}
#endif

#endif /* GRADSYNC_PYTHON_CAPI_GRADSYNC_C_H_ */
