// MemoryStore: a Store held in this process's memory, for ranks that are
// threads (tests) and as the state behind the gRPC store server.
// Thread-safe; blocking calls wait on a condition with their deadline.
#ifndef GRADSYNC_COLLECTIVES_MEMORY_STORE_H_
#define GRADSYNC_COLLECTIVES_MEMORY_STORE_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "collectives/store.h"

namespace gradsync {

class MemoryStore : public Store {
 public:
  MemoryStore() = default;
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  [[nodiscard]] absl::Status Set(absl::string_view key,
                                 absl::string_view value) override;
  [[nodiscard]] absl::StatusOr<std::string> Get(absl::string_view key,
                                                absl::Time deadline) override;
  [[nodiscard]] absl::StatusOr<int64_t> Add(absl::string_view key,
                                            int64_t delta) override;
  [[nodiscard]] absl::Status Wait(const std::vector<std::string>& keys,
                                  absl::Time deadline) override;

  // Removes every key that starts with `prefix` (a finished job's
  // namespace). Returns how many were removed.
  int EraseWithPrefix(absl::string_view prefix);

 private:
  // Keys of `keys` not set yet, comma-separated, for error messages.
  std::string MissingLocked(const std::vector<std::string>& keys) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> data_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_MEMORY_STORE_H_
