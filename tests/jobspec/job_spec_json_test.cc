// ParseJobSpecJson and JobSpecToJson: the one reader of spec files (the
// CLI's --file, the tests, the fuzzer) and its inverse.
#include "jobspec/job_spec_json.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_spec.h"
#include "tests/jobspec/job_spec_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::gradsync::testing::ValidSpec;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ParseJobSpecJsonTest, ExampleFromJobProto_ParsesAndValidates) {
  absl::StatusOr<JobSpec> spec = ParseJobSpecJson(R"json(
    {"name": "fmnist", "numWorkers": 4, "mode": "SYNC_MODE_RING",
     "model": {"kind": "mlp", "layerSizes": [784, 256, 256, 10]},
     "dataset": {"name": "fashion-mnist"},
     "optimizer": {"name": "momentum", "learningRate": 0.05, "momentum": 0.9},
     "batchSize": 256, "steps": 500, "seed": 1})json");
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->num_workers(), 4);
  EXPECT_THAT(spec->model().layer_sizes(),
              ::testing::ElementsAre(784, 256, 256, 10));
  EXPECT_EQ(spec->seed(), 1u);
  EXPECT_THAT(ValidateJobSpec(*spec), IsOk());
}

TEST(ParseJobSpecJsonTest, MalformedJson_ReturnsInvalidArgument) {
  EXPECT_THAT(ParseJobSpecJson("{\"numWorkers\": 4,"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("could not be parsed")));
}

TEST(ParseJobSpecJsonTest, UnknownField_ReturnsInvalidArgument) {
  EXPECT_THAT(
      ParseJobSpecJson(R"({"numWorkerz": 4})"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("numWorkerz")));
}

TEST(ParseJobSpecJsonTest, WrongType_ReturnsInvalidArgument) {
  EXPECT_THAT(ParseJobSpecJson(R"({"numWorkers": "many"})"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// The source's name leads the error, as `gradsync submit --file` shows it.
TEST(ParseJobSpecJsonTest, TheSourceLeadsTheError) {
  absl::StatusOr<JobSpec> spec = ParseJobSpecJson("{", "/jobs/a.json");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()),
              StartsWith("/jobs/a.json: not a valid job spec ("));
}

TEST(JobSpecToJsonTest, ParsesBackToTheSameSpec) {
  absl::StatusOr<JobSpec> valid = ValidateJobSpec(ValidSpec(4, "cuda"));
  ASSERT_THAT(valid, IsOk());
  const std::string json = JobSpecToJson(*valid);
  EXPECT_THAT(json, HasSubstr("\"numWorkers\":4"));
  absl::StatusOr<JobSpec> back = ParseJobSpecJson(json);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->SerializeAsString(), valid->SerializeAsString());
}

}  // namespace
}  // namespace gradsync
