#include "common/grpc_status.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

TEST(GrpcStatusTest, EveryCanonicalCode_RoundTripsWithMessage) {
  for (int code = 0; code <= 16; ++code) {
    const absl::Status original(static_cast<absl::StatusCode>(code),
                                code == 0 ? "" : "store key 'k' is missing");
    const grpc::Status wire = ToGrpcStatus(original);
    EXPECT_EQ(static_cast<int>(wire.error_code()), code);
    EXPECT_EQ(FromGrpcStatus(wire), original) << "code " << code;
  }
}

TEST(GrpcStatusTest, ToGrpcStatus_NonCanonicalCode_ReturnsUnknown) {
  // absl itself reports a non-canonical code as kUnknown.
  const grpc::Status wire =
      ToGrpcStatus(absl::Status(static_cast<absl::StatusCode>(42), "odd"));
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(wire.error_message(), "odd");
}

TEST(GrpcStatusTest, FromGrpcStatus_NonCanonicalCode_ReturnsUnknownNamingCode) {
  const absl::Status status =
      FromGrpcStatus(grpc::Status(static_cast<grpc::StatusCode>(99), "odd"));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnknown);
  EXPECT_THAT(status.message(), HasSubstr("99"));
  EXPECT_THAT(status.message(), HasSubstr("odd"));
}

}  // namespace
}  // namespace gradsync
