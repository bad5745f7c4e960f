// PrefixStore: a Store decorator that puts every key under "<prefix>/", so
// that jobs and rendezvous generations never see each other's keys.
//
//   PrefixStore job_store(base, "job-7/gen-2");
//   job_store.Set("addr/0", ...);  // base sees "job-7/gen-2/addr/0"
//
// Does not own `base`, which must outlive it. Thread-safe if `base` is.
#ifndef GRADSYNC_COLLECTIVES_PREFIX_STORE_H_
#define GRADSYNC_COLLECTIVES_PREFIX_STORE_H_

#include <string>
#include <vector>

#include "collectives/store.h"

namespace gradsync {

class PrefixStore : public Store {
 public:
  PrefixStore(Store* base, absl::string_view prefix);

  [[nodiscard]] absl::Status Set(absl::string_view key,
                                 absl::string_view value) override;
  [[nodiscard]] absl::StatusOr<std::string> Get(absl::string_view key,
                                                absl::Time deadline) override;
  [[nodiscard]] absl::StatusOr<int64_t> Add(absl::string_view key,
                                            int64_t delta) override;
  [[nodiscard]] absl::Status Wait(const std::vector<std::string>& keys,
                                  absl::Time deadline) override;

 private:
  std::string Key(absl::string_view key) const;

  Store* const base_;
  const std::string prefix_;
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_PREFIX_STORE_H_
