// grpc.health.v1.Health/Check called with raw bytes, as grpc_health_probe
// and Kubernetes' grpc: probe send it: the tests link no generated code for
// the health protocol.
#ifndef GRADSYNC_TESTS_UTIL_HEALTH_CHECK_H_
#define GRADSYNC_TESTS_UTIL_HEALTH_CHECK_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/byte_buffer.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace gradsync {
namespace testing {

// HealthCheckResponse.ServingStatus.
inline constexpr int kHealthServing = 1;
inline constexpr int kHealthNotServing = 2;

inline std::string HealthBytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

// The serving status `address` reports for `service` ("" is the whole
// server), over a plaintext channel; the call's error (NOT_FOUND for a
// service the server does not know, UNAVAILABLE when nothing listens)
// otherwise.
[[nodiscard]] inline absl::StatusOr<int> HealthStatusOf(
    const std::string& address, const std::string& service = "") {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  // HealthCheckRequest{service}: field 1, length-delimited.
  std::string request;
  if (!service.empty()) {
    request = absl::StrCat(
        "\x0a", std::string(1, static_cast<char>(service.size())), service);
  }
  grpc::Slice slice(request.data(), request.size());
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  const grpc::Status status =
      grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
          channel.get(),
          grpc::internal::RpcMethod("/grpc.health.v1.Health/Check",
                                    grpc::internal::RpcMethod::NORMAL_RPC),
          &context, grpc::ByteBuffer(&slice, 1), &response);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        status.error_message());
  }
  // HealthCheckResponse{status}: field 1, varint; empty for UNKNOWN (0).
  const std::string bytes = HealthBytes(response);
  if (bytes.empty()) return 0;
  if (bytes.size() != 2 || bytes[0] != '\x08') {
    return absl::InternalError("not a HealthCheckResponse");
  }
  return static_cast<int>(bytes[1]);
}

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_UTIL_HEALTH_CHECK_H_
