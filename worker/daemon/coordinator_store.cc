#include "worker/daemon/coordinator_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/rpc_deadline.h"

namespace gradsync {
namespace {

std::string QuotedKeys(const std::vector<std::string>& keys) {
  return absl::StrCat("'", absl::StrJoin(keys, "', '"), "'");
}

}  // namespace

CoordinatorStore::CoordinatorStore(std::shared_ptr<CoordinatorClient> client,
                                   StoreScope scope,
                                   CoordinatorStoreOptions options)
    : client_(std::move(client)), scope_(std::move(scope)), options_(options) {}

void CoordinatorStore::Cancel(const absl::Status& reason) {
  calls_.CancelAll(reason);
}

absl::Status CoordinatorStore::Set(absl::string_view key,
                                   absl::string_view value) {
  StoreSetRequest request;
  *request.mutable_scope() = scope_;
  request.set_key(std::string(key));
  request.set_value(std::string(value));
  const absl::Time rpc_deadline = absl::Now() + options_.unary_timeout;
  return Explain(client_->StoreSet(request, {rpc_deadline, &calls_}).status(),
                 absl::StrCat("store Set of key '", key, "'"), rpc_deadline);
}

absl::StatusOr<std::string> CoordinatorStore::Get(absl::string_view key,
                                                  absl::Time deadline) {
  StoreGetRequest request;
  *request.mutable_scope() = scope_;
  request.set_key(std::string(key));
  request.set_timeout_ms(MillisecondsUntil(deadline));
  const absl::Time rpc_deadline =
      std::max(deadline, absl::Now()) + options_.grace;
  absl::StatusOr<StoreGetResponse> response =
      client_->StoreGet(request, {rpc_deadline, &calls_});
  if (!response.ok()) {
    return Explain(response.status(),
                   absl::StrCat("store Get of key '", key, "'"), rpc_deadline);
  }
  return std::move(*response->mutable_value());
}

absl::StatusOr<int64_t> CoordinatorStore::Add(absl::string_view key,
                                              int64_t delta) {
  StoreAddRequest request;
  *request.mutable_scope() = scope_;
  request.set_key(std::string(key));
  request.set_delta(delta);
  const absl::Time rpc_deadline = absl::Now() + options_.unary_timeout;
  absl::StatusOr<StoreAddResponse> response =
      client_->StoreAdd(request, {rpc_deadline, &calls_});
  if (!response.ok()) {
    return Explain(response.status(),
                   absl::StrCat("store Add to key '", key, "'"), rpc_deadline);
  }
  return response->value();
}

absl::Status CoordinatorStore::Wait(const std::vector<std::string>& keys,
                                    absl::Time deadline) {
  StoreWaitRequest request;
  *request.mutable_scope() = scope_;
  for (const std::string& key : keys) request.add_keys(key);
  request.set_timeout_ms(MillisecondsUntil(deadline));
  const absl::Time rpc_deadline =
      std::max(deadline, absl::Now()) + options_.grace;
  return Explain(client_->StoreWait(request, {rpc_deadline, &calls_}).status(),
                 absl::StrCat("store Wait for keys ", QuotedKeys(keys)),
                 rpc_deadline);
}

// Errors from the coordinator's logic (which name the keys, the job or the
// rank) pass with the operation prepended; errors from the transport get
// the coordinator's address and a hint.
absl::Status CoordinatorStore::Explain(absl::Status status,
                                       absl::string_view what,
                                       absl::Time rpc_deadline) const {
  const std::string job = absl::StrCat(
      " (job ", scope_.job_id(), ", generation ", scope_.generation(), ")");
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return status;
    case absl::StatusCode::kCancelled: {
      const absl::Status reason = calls_.status();
      if (!reason.ok()) {
        return absl::CancelledError(
            absl::StrCat(what, job, " cancelled: ", reason.message()));
      }
      break;
    }
    case absl::StatusCode::kDeadlineExceeded:
      // Before the gRPC deadline, only the coordinator can have said this.
      if (absl::Now() < rpc_deadline) break;
      return absl::DeadlineExceededError(absl::StrCat(
          what, job, " got no answer from the coordinator at ",
          client_->target(),
          " before the deadline; the coordinator may be overloaded or hung"));
    case absl::StatusCode::kUnavailable:
      return absl::UnavailableError(absl::StrCat(
          what, job, " failed: the coordinator at ", client_->target(),
          " is unavailable (", status.message(), "); is it still running?"));
    default:
      break;
  }
  return absl::Status(status.code(),
                      absl::StrCat(what, job, ": ", status.message()));
}

}  // namespace gradsync
