#include "collectives/subgroup_store.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

SubgroupStore::SubgroupStore(Store* base, absl::string_view prefix,
                             std::vector<int> global_ranks)
    : base_(base),
      prefix_(absl::StrCat(prefix, "/")),
      global_ranks_(std::move(global_ranks)) {}

std::string SubgroupStore::Key(absl::string_view key) const {
  const size_t slash = key.rfind('/');
  const absl::string_view head =
      slash == absl::string_view::npos ? "" : key.substr(0, slash + 1);
  const absl::string_view last =
      slash == absl::string_view::npos ? key : key.substr(slash + 1);
  int sub_rank = -1;
  if (!last.empty() && last.size() <= 9 &&
      last.find_first_not_of("0123456789") == absl::string_view::npos &&
      absl::SimpleAtoi(last, &sub_rank) && sub_rank >= 0 &&
      sub_rank < static_cast<int>(global_ranks_.size())) {
    return absl::StrCat(prefix_, head, global_ranks_[sub_rank]);
  }
  return absl::StrCat(prefix_, key);
}

absl::Status SubgroupStore::Set(absl::string_view key,
                                absl::string_view value) {
  return base_->Set(Key(key), value);
}

absl::StatusOr<std::string> SubgroupStore::Get(absl::string_view key,
                                               absl::Time deadline) {
  return base_->Get(Key(key), deadline);
}

absl::StatusOr<int64_t> SubgroupStore::Add(absl::string_view key,
                                           int64_t delta) {
  return base_->Add(Key(key), delta);
}

absl::Status SubgroupStore::Wait(const std::vector<std::string>& keys,
                                 absl::Time deadline) {
  std::vector<std::string> mapped;
  mapped.reserve(keys.size());
  for (const std::string& k : keys) mapped.push_back(Key(k));
  return base_->Wait(mapped, deadline);
}

}  // namespace gradsync
