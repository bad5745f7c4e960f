#include "collectives/memory_store.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gradsync {

absl::Status MemoryStore::Set(absl::string_view key, absl::string_view value) {
  absl::MutexLock lock(&mu_);
  data_[key] = std::string(value);
  return absl::OkStatus();
}

absl::StatusOr<std::string> MemoryStore::Get(absl::string_view key,
                                             absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto is_set = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return data_.contains(key);
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&is_set), deadline)) {
    return absl::DeadlineExceededError(
        absl::StrCat("store key '", key,
                     "' was not set before the deadline; the rank "
                     "that should publish it has not started or has failed"));
  }
  return data_.at(key);
}

absl::StatusOr<int64_t> MemoryStore::Add(absl::string_view key, int64_t delta) {
  absl::MutexLock lock(&mu_);
  int64_t value = 0;
  auto it = data_.find(key);
  if (it != data_.end() && !absl::SimpleAtoi(it->second, &value)) {
    return absl::FailedPreconditionError(
        absl::StrCat("store key '", key,
                     "' holds a non-integer value; Add needs a key "
                     "written only by Add"));
  }
  value += delta;
  data_[key] = absl::StrCat(value);
  return value;
}

absl::Status MemoryStore::Wait(const std::vector<std::string>& keys,
                               absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto all_set = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& k : keys) {
      if (!data_.contains(k)) return false;
    }
    return true;
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&all_set), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "store keys still missing at the deadline: ", MissingLocked(keys)));
  }
  return absl::OkStatus();
}

int MemoryStore::EraseWithPrefix(absl::string_view prefix) {
  absl::MutexLock lock(&mu_);
  int erased = 0;
  for (auto it = data_.begin(); it != data_.end();) {
    if (absl::StartsWith(it->first, prefix)) {
      data_.erase(it++);
      ++erased;
    } else {
      ++it;
    }
  }
  return erased;
}

std::string MemoryStore::MissingLocked(
    const std::vector<std::string>& keys) const {
  std::vector<std::string> missing;
  for (const auto& k : keys) {
    if (!data_.contains(k)) missing.push_back(k);
  }
  return absl::StrJoin(missing, ", ");
}

}  // namespace gradsync
