// The --devices syntax of gradsync-worker.
#include "worker/daemon/devices.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

std::string Parsed(const std::string& spec) {
  absl::StatusOr<std::vector<Device>> d = ParseDevices(spec);
  EXPECT_THAT(d, IsOk()) << spec;
  return d.ok() ? FormatDevices(*d) : "";
}

TEST(DevicesTest, ParseDevices_Forms) {
  EXPECT_EQ(Parsed("cpu"), "cpu:0");
  EXPECT_EQ(Parsed("cpu:4"), "cpu:0,cpu:1,cpu:2,cpu:3");
  EXPECT_EQ(Parsed("cuda:0,1"), "cuda:0,cuda:1");
  EXPECT_EQ(Parsed("cuda"), "cuda:0");
  EXPECT_EQ(Parsed("cpu:2, cuda:3"), "cpu:0,cpu:1,cuda:3");
  EXPECT_EQ(Parsed("cpu,cpu"), "cpu:0,cpu:1");
}

TEST(DevicesTest, ParseDevices_Bad_NamesTheItem) {
  EXPECT_THAT(ParseDevices(""), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseDevices("gpu:1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("item 'gpu:1' has an unknown kind")));
  EXPECT_THAT(ParseDevices("cpu:0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("asks for 0 CPU ranks")));
  EXPECT_THAT(
      ParseDevices("cpu:x"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a number")));
  EXPECT_THAT(
      ParseDevices("cpu:2,3"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bare index")));
  EXPECT_THAT(
      ParseDevices("cuda:1,1"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("repeats")));
  EXPECT_THAT(ParseDevices("cpu:100000"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(
      ParseDevices("cpu,,cpu"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is empty")));
}

}  // namespace
}  // namespace gradsync
