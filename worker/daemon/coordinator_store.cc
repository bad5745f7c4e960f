#include "worker/daemon/coordinator_store.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"

namespace gradsync {
namespace {

std::string QuotedKeys(const std::vector<std::string>& keys) {
  return absl::StrCat("'", absl::StrJoin(keys, "', '"), "'");
}

// Runs one RPC under `calls`, with `rpc_deadline`.
grpc::Status Invoke(
    CancellableCalls* calls, absl::Time rpc_deadline,
    const std::function<grpc::Status(grpc::ClientContext*)>& call) {
  grpc::ClientContext context;
  SetRpcDeadline(&context, rpc_deadline);
  CancellableCalls::Scope scope(calls, &context);
  if (!scope.ok()) return ToGrpcStatus(scope.status());
  return call(&context);
}

}  // namespace

CoordinatorStore::CoordinatorStore(
    std::shared_ptr<Coordinator::StubInterface> stub, StoreScope scope,
    std::string target, CoordinatorStoreOptions options)
    : stub_(std::move(stub)),
      scope_(std::move(scope)),
      target_(std::move(target)),
      options_(options) {}

void CoordinatorStore::Cancel(const absl::Status& reason) {
  calls_.CancelAll(reason);
}

absl::Status CoordinatorStore::Set(absl::string_view key,
                                   absl::string_view value) {
  StoreSetRequest request;
  *request.mutable_scope() = scope_;
  request.set_key(std::string(key));
  request.set_value(std::string(value));
  StoreSetResponse response;
  const absl::Time rpc_deadline = absl::Now() + options_.unary_timeout;
  return FromRpc(Invoke(&calls_, rpc_deadline,
                        [&](grpc::ClientContext* c) {
                          return stub_->StoreSet(c, request, &response);
                        }),
                 absl::StrCat("store Set of key '", key, "'"), rpc_deadline);
}

absl::StatusOr<std::string> CoordinatorStore::Get(absl::string_view key,
                                                  absl::Time deadline) {
  StoreGetRequest request;
  *request.mutable_scope() = scope_;
  request.set_key(std::string(key));
  request.set_timeout_ms(MillisecondsUntil(deadline));
  StoreGetResponse response;
  const absl::Time rpc_deadline =
      std::max(deadline, absl::Now()) + options_.grace;
  absl::Status status =
      FromRpc(Invoke(&calls_, rpc_deadline,
                     [&](grpc::ClientContext* c) {
                       return stub_->StoreGet(c, request, &response);
                     }),
              absl::StrCat("store Get of key '", key, "'"), rpc_deadline);
  if (!status.ok()) return status;
  return std::move(*response.mutable_value());
}

absl::StatusOr<int64_t> CoordinatorStore::Add(absl::string_view key,
                                              int64_t delta) {
  StoreAddRequest request;
  *request.mutable_scope() = scope_;
  request.set_key(std::string(key));
  request.set_delta(delta);
  StoreAddResponse response;
  const absl::Time rpc_deadline = absl::Now() + options_.unary_timeout;
  absl::Status status =
      FromRpc(Invoke(&calls_, rpc_deadline,
                     [&](grpc::ClientContext* c) {
                       return stub_->StoreAdd(c, request, &response);
                     }),
              absl::StrCat("store Add to key '", key, "'"), rpc_deadline);
  if (!status.ok()) return status;
  return response.value();
}

absl::Status CoordinatorStore::Wait(const std::vector<std::string>& keys,
                                    absl::Time deadline) {
  StoreWaitRequest request;
  *request.mutable_scope() = scope_;
  for (const std::string& key : keys) request.add_keys(key);
  request.set_timeout_ms(MillisecondsUntil(deadline));
  StoreWaitResponse response;
  const absl::Time rpc_deadline =
      std::max(deadline, absl::Now()) + options_.grace;
  return FromRpc(Invoke(&calls_, rpc_deadline,
                        [&](grpc::ClientContext* c) {
                          return stub_->StoreWait(c, request, &response);
                        }),
                 absl::StrCat("store Wait for keys ", QuotedKeys(keys)),
                 rpc_deadline);
}

// Errors from the coordinator's logic (which name the keys, the job or the
// rank) pass with the operation prepended; errors from the transport get
// the coordinator's address and a hint.
absl::Status CoordinatorStore::FromRpc(const grpc::Status& rpc_status,
                                       absl::string_view what,
                                       absl::Time rpc_deadline) const {
  absl::Status status = FromGrpcStatus(rpc_status);
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
          what, job, " got no answer from the coordinator at ", target_,
          " before the deadline; the coordinator may be overloaded or hung"));
    case absl::StatusCode::kUnavailable:
      return absl::UnavailableError(absl::StrCat(
          what, job, " failed: the coordinator at ", target_,
          " is unavailable (", status.message(), "); is it still running?"));
    default:
      break;
  }
  return absl::Status(status.code(),
                      absl::StrCat(what, job, ": ", status.message()));
}

}  // namespace gradsync
