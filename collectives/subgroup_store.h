// SubgroupStore: the Store view of a communicator over a subset of a job's
// ranks. Sub-rank i of the group is global rank global_ranks[i]; a key
// whose last '/'-separated part is a sub-rank i ("tcp/addr/1") is stored
// as "<prefix>/tcp/addr/<global_ranks[i]>", other keys as "<prefix>/<key>".
//
// Why the renaming: the coordinator's store lets a worker write only keys
// that end in a rank it hosts (JobRendezvous::StoreSet), and a sub-rank is
// not the writer's global rank. With the renaming every key a backend's
// rendezvous writes for its own rank ends in the writer's global rank, and
// keys stay unique within the group because its global ranks are.
//
//   SubgroupStore intra(store, "hier/intra/0", {2, 5});
//   intra.Set("tcp/addr/1", a);  // store sees "hier/intra/0/tcp/addr/5"
//
// Does not own `base`, which must outlive it. Thread-safe if `base` is.
#ifndef GRADSYNC_COLLECTIVES_SUBGROUP_STORE_H_
#define GRADSYNC_COLLECTIVES_SUBGROUP_STORE_H_

#include <string>
#include <vector>

#include "collectives/store.h"

namespace gradsync {

class SubgroupStore : public Store {
 public:
  SubgroupStore(Store* base, absl::string_view prefix,
                std::vector<int> global_ranks);

  [[nodiscard]] absl::Status Set(absl::string_view key,
                                 absl::string_view value) override;
  [[nodiscard]] absl::StatusOr<std::string> Get(absl::string_view key,
                                                absl::Time deadline) override;
  [[nodiscard]] absl::StatusOr<int64_t> Add(absl::string_view key,
                                            int64_t delta) override;
  [[nodiscard]] absl::Status Wait(const std::vector<std::string>& keys,
                                  absl::Time deadline) override;

  // The key `key` is stored under in the base store.
  std::string Key(absl::string_view key) const;

 private:
  Store* const base_;
  const std::string prefix_;
  const std::vector<int> global_ranks_;
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_SUBGROUP_STORE_H_
