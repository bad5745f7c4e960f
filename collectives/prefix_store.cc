#include "collectives/prefix_store.h"

#include "absl/strings/str_cat.h"

namespace gradsync {

PrefixStore::PrefixStore(Store* base, absl::string_view prefix)
    : base_(base), prefix_(prefix) {}

std::string PrefixStore::Key(absl::string_view key) const {
  return absl::StrCat(prefix_, "/", key);
}

absl::Status PrefixStore::Set(absl::string_view key, absl::string_view value) {
  return base_->Set(Key(key), value);
}

absl::StatusOr<std::string> PrefixStore::Get(absl::string_view key,
                                             absl::Time deadline) {
  return base_->Get(Key(key), deadline);
}

absl::StatusOr<int64_t> PrefixStore::Add(absl::string_view key, int64_t delta) {
  return base_->Add(Key(key), delta);
}

absl::Status PrefixStore::Wait(const std::vector<std::string>& keys,
                               absl::Time deadline) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const auto& k : keys) full.push_back(Key(k));
  return base_->Wait(full, deadline);
}

}  // namespace gradsync
