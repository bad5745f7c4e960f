// FileStore: a Store kept as files in a directory that every rank can see
// (a local temp dir for ranks that are processes on one host, or a shared
// file system), like Gloo's FileStore. Needs no server; blocking calls poll
// with a short back-off until their deadline.
//
// Writes are atomic (write to a temp file, then rename); Add holds an
// exclusive flock on the key's lock file. Thread- and process-safe.
#ifndef GRADSYNC_COLLECTIVES_FILE_STORE_H_
#define GRADSYNC_COLLECTIVES_FILE_STORE_H_

#include <string>
#include <vector>

#include "collectives/store.h"

namespace gradsync {

class FileStore : public Store {
 public:
  // `dir` must exist and be writable.
  explicit FileStore(std::string dir);

  [[nodiscard]] absl::Status Set(absl::string_view key,
                                 absl::string_view value) override;
  [[nodiscard]] absl::StatusOr<std::string> Get(absl::string_view key,
                                                absl::Time deadline) override;
  [[nodiscard]] absl::StatusOr<int64_t> Add(absl::string_view key,
                                            int64_t delta) override;
  [[nodiscard]] absl::Status Wait(const std::vector<std::string>& keys,
                                  absl::Time deadline) override;

 private:
  std::string PathOf(absl::string_view key) const;
  // NOT_FOUND if the key is not set.
  [[nodiscard]] absl::StatusOr<std::string> TryRead(
      absl::string_view key) const;

  const std::string dir_;
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_FILE_STORE_H_
