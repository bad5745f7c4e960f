#include "common/grpc_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

// google.rpc.Code runs from OK (0) to UNAUTHENTICATED (16).
constexpr int kLastCanonicalCode = 16;

bool IsCanonical(int code) { return code >= 0 && code <= kLastCanonicalCode; }

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  // absl::Status::code() is always canonical: absl maps any other code to
  // kUnknown.
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  const int code = static_cast<int>(status.error_code());
  if (!IsCanonical(code)) {
    return absl::UnknownError(absl::StrCat("non-canonical gRPC status code ",
                                           code, ": ", status.error_message()));
  }
  return absl::Status(static_cast<absl::StatusCode>(code),
                      status.error_message());
}

}  // namespace gradsync
