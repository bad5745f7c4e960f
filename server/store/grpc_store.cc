#include "server/store/grpc_store.h"

#include <grpcpp/client_context.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_connect.h"
#include "common/grpc_status.h"
#include "common/rpc_deadline.h"
#include "proto/store.grpc.pb.h"
#include "security/tls.h"

namespace gradsync {
namespace {

// Reconnect quickly (SetReconnectBackoff): ranks often start before the
// store, and a long gRPC backoff (up to 120 s by default) would outlast
// the store's start. Connection attempts time out as quickly.
constexpr int kMinConnectTimeoutMs = 100;

std::string QuotedKeys(const std::vector<std::string>& keys) {
  return absl::StrCat("'", absl::StrJoin(keys, "', '"), "'");
}

class GrpcStore : public Store {
 public:
  GrpcStore(std::string target, std::shared_ptr<grpc::Channel> channel)
      : target_(std::move(target)),
        stub_(store::StoreService::NewStub(std::move(channel))) {}

  [[nodiscard]] absl::Status Set(absl::string_view key,
                                 absl::string_view value) override {
    store::SetRequest request;
    request.set_key(std::string(key));
    request.set_value(std::string(value));
    store::SetResponse response;
    grpc::ClientContext context;
    const absl::Time rpc_deadline = absl::Now() + kUnaryRpcTimeout;
    SetRpcDeadline(&context, rpc_deadline);
    return FromRpc(stub_->Set(&context, request, &response),
                   absl::StrCat("Set of key '", key, "'"), rpc_deadline);
  }

  [[nodiscard]] absl::StatusOr<std::string> Get(absl::string_view key,
                                                absl::Time deadline) override {
    store::GetRequest request;
    request.set_key(std::string(key));
    request.set_timeout_ms(MillisecondsUntil(deadline));
    store::GetResponse response;
    grpc::ClientContext context;
    const absl::Time rpc_deadline = std::max(deadline, absl::Now()) + kRpcGrace;
    SetRpcDeadline(&context, rpc_deadline);
    absl::Status status =
        FromRpc(stub_->Get(&context, request, &response),
                absl::StrCat("Get of key '", key, "'"), rpc_deadline);
    if (!status.ok()) return status;
    return std::move(*response.mutable_value());
  }

  [[nodiscard]] absl::StatusOr<int64_t> Add(absl::string_view key,
                                            int64_t delta) override {
    store::AddRequest request;
    request.set_key(std::string(key));
    request.set_delta(delta);
    store::AddResponse response;
    grpc::ClientContext context;
    const absl::Time rpc_deadline = absl::Now() + kUnaryRpcTimeout;
    SetRpcDeadline(&context, rpc_deadline);
    absl::Status status =
        FromRpc(stub_->Add(&context, request, &response),
                absl::StrCat("Add to key '", key, "'"), rpc_deadline);
    if (!status.ok()) return status;
    return response.value();
  }

  [[nodiscard]] absl::Status Wait(const std::vector<std::string>& keys,
                                  absl::Time deadline) override {
    store::WaitRequest request;
    for (const std::string& key : keys) request.add_keys(key);
    request.set_timeout_ms(MillisecondsUntil(deadline));
    store::WaitResponse response;
    grpc::ClientContext context;
    const absl::Time rpc_deadline = std::max(deadline, absl::Now()) + kRpcGrace;
    SetRpcDeadline(&context, rpc_deadline);
    return FromRpc(stub_->Wait(&context, request, &response),
                   absl::StrCat("Wait for keys ", QuotedKeys(keys)),
                   rpc_deadline);
  }

 private:
  // The status of an RPC described by `what`. Errors from the store logic
  // (which name their keys) pass unchanged; errors from the transport get
  // the target, the operation and a hint.
  [[nodiscard]] absl::Status FromRpc(const grpc::Status& rpc_status,
                                     absl::string_view what,
                                     absl::Time rpc_deadline) const {
    absl::Status status = FromGrpcStatus(rpc_status);
    switch (status.code()) {
      case absl::StatusCode::kOk:
      case absl::StatusCode::kFailedPrecondition:
      case absl::StatusCode::kInvalidArgument:
        return status;
      case absl::StatusCode::kDeadlineExceeded:
        // Before the gRPC deadline, only the server can have said this.
        if (absl::Now() < rpc_deadline) return status;
        return absl::DeadlineExceededError(absl::StrCat(
            what, " got no answer from the store at ", target_,
            " before the deadline; the store server may be overloaded or "
            "hung"));
      case absl::StatusCode::kUnavailable:
        return absl::UnavailableError(absl::StrCat(
            what, " failed: the store at ", target_, " is unavailable (",
            status.message(),
            "); is the store server (or coordinator) still running there?"));
      case absl::StatusCode::kResourceExhausted:
        return absl::ResourceExhaustedError(absl::StrCat(
            what, " was refused by the store at ", target_, " (",
            status.message(),
            "): every server thread is held by a waiting Get or Wait; start "
            "the store with a larger StoreServerOptions::max_threads"));
      default:
        return absl::Status(status.code(),
                            absl::StrCat(what, " on the store at ", target_,
                                         " failed: ", status.message()));
    }
  }

  const std::string target_;
  const std::unique_ptr<store::StoreService::Stub> stub_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> ConnectGrpcStore(
    const std::string& target, absl::Duration connect_timeout,
    const GrpcSecurity& security) {
  if (target.empty()) {
    return absl::InvalidArgumentError(
        "store target is empty; expected host:port of the store server");
  }
  grpc::ChannelArguments args;
  SetReconnectBackoff(&args);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kMinConnectTimeoutMs);
  std::shared_ptr<grpc::Channel> channel =
      NewGrpcChannel(target, security, args);
  if (!channel->WaitForConnected(
          absl::ToChronoTime(absl::Now() + connect_timeout))) {
    return absl::UnavailableError(
        absl::StrCat("store at ", target, " is unreachable after ",
                     absl::FormatDuration(connect_timeout),
                     "; is the store server (or coordinator) running there?",
                     TlsConnectHint(security, absl::UnavailableError(""))));
  }
  return std::make_unique<GrpcStore>(target, std::move(channel));
}

}  // namespace gradsync
