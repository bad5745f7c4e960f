// Store: the rendezvous key-value interface through which ranks find each
// other (ring endpoints, the NCCL unique id, barriers). It is the only way
// collectives/ sees the outside world; implementations are an in-memory one
// for ranks that are threads (MemoryStore), a namespacing decorator
// (PrefixStore), one over a shared directory (FileStore), a gRPC client of
// the standalone store server (server/store/grpc_store.h), and the
// coordinator's store, which a worker daemon's ranks use
// (worker/daemon/coordinator_store.h).
//
// Example:
//   RETURN_IF_ERROR(store.Set("addr/0", "127.0.0.1:4000"));
//   ASSIGN_OR_RETURN(std::string addr,
//                    store.Get("addr/1", absl::Now() + absl::Seconds(30)));
//
// Errors: blocking calls return DEADLINE_EXCEEDED naming the missing keys;
// UNAVAILABLE when the store cannot be reached. Thread-safe.
#ifndef GRADSYNC_COLLECTIVES_STORE_H_
#define GRADSYNC_COLLECTIVES_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gradsync {

class Store {
 public:
  virtual ~Store() = default;

  // Sets `key` to `value`, replacing any previous value, and wakes waiters.
  [[nodiscard]] virtual absl::Status Set(absl::string_view key,
                                         absl::string_view value) = 0;

  // Returns the value of `key`, blocking until it is set or `deadline`
  // passes (DEADLINE_EXCEEDED, naming the key).
  [[nodiscard]] virtual absl::StatusOr<std::string> Get(
      absl::string_view key, absl::Time deadline) = 0;

  // Atomically adds `delta` to the integer stored at `key` (absent counts
  // as 0) and returns the new value. FAILED_PRECONDITION if the key holds
  // something that is not an integer written by Add.
  [[nodiscard]] virtual absl::StatusOr<int64_t> Add(absl::string_view key,
                                                    int64_t delta) = 0;

  // Blocks until every key in `keys` is set or `deadline` passes
  // (DEADLINE_EXCEEDED naming the keys still missing).
  [[nodiscard]] virtual absl::Status Wait(const std::vector<std::string>& keys,
                                          absl::Time deadline) = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_STORE_H_
