#include "server/store/store_service.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/grpc_status.h"

namespace gradsync {
namespace {

// The absolute deadline of a request that waits `timeout_ms` from now,
// never later than the caller's own gRPC deadline (waiting past it would
// answer nobody).
absl::Time RequestDeadline(const grpc::ServerContext& context,
                           int64_t timeout_ms) {
  const absl::Time now = absl::Now();
  const absl::Time requested =
      timeout_ms <= 0 ? now : now + absl::Milliseconds(timeout_ms);
  return std::min(requested, absl::FromChrono(context.deadline()));
}

}  // namespace

StoreServiceImpl::StoreServiceImpl(Store* store) : store_(store) {}

void StoreServiceImpl::BeginShutdown() { shutting_down_.store(true); }

absl::Status StoreServiceImpl::WaitInSlices(
    grpc::ServerContext* context, absl::Time deadline,
    absl::FunctionRef<absl::Status(absl::Time)> wait) {
  for (;;) {
    const absl::Time slice_end =
        std::min(deadline, absl::Now() + kCancelCheckInterval);
    absl::Status status = wait(slice_end);
    if (status.code() != absl::StatusCode::kDeadlineExceeded ||
        slice_end >= deadline) {
      return status;
    }
    if (context->IsCancelled()) {
      return absl::CancelledError(
          "the client cancelled the call or went away while the store was "
          "waiting");
    }
    if (shutting_down_.load()) {
      return absl::UnavailableError(
          "the store server is shutting down; connect to its replacement and "
          "retry");
    }
  }
}

grpc::Status StoreServiceImpl::Set(grpc::ServerContext* context,
                                   const store::SetRequest* request,
                                   store::SetResponse* response) {
  return ToGrpcStatus(store_->Set(request->key(), request->value()));
}

grpc::Status StoreServiceImpl::Get(grpc::ServerContext* context,
                                   const store::GetRequest* request,
                                   store::GetResponse* response) {
  const absl::Time deadline = RequestDeadline(*context, request->timeout_ms());
  absl::Status status =
      WaitInSlices(context, deadline, [&](absl::Time slice_end) {
        absl::StatusOr<std::string> value =
            store_->Get(request->key(), slice_end);
        if (!value.ok()) return value.status();
        response->set_value(*std::move(value));
        return absl::OkStatus();
      });
  return ToGrpcStatus(status);
}

grpc::Status StoreServiceImpl::Add(grpc::ServerContext* context,
                                   const store::AddRequest* request,
                                   store::AddResponse* response) {
  absl::StatusOr<int64_t> value = store_->Add(request->key(), request->delta());
  if (!value.ok()) return ToGrpcStatus(value.status());
  response->set_value(*value);
  return grpc::Status::OK;
}

grpc::Status StoreServiceImpl::Wait(grpc::ServerContext* context,
                                    const store::WaitRequest* request,
                                    store::WaitResponse* response) {
  const std::vector<std::string> keys(request->keys().begin(),
                                      request->keys().end());
  const absl::Time deadline = RequestDeadline(*context, request->timeout_ms());
  return ToGrpcStatus(WaitInSlices(
      context, deadline,
      [&](absl::Time slice_end) { return store_->Wait(keys, slice_end); }));
}

}  // namespace gradsync
