// Entrypoint jobs (model.kind "entrypoint"): what the coordinator accepts,
// and the field each refusal names.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_spec.h"
#include "jobspec/job_spec_json.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

JobSpec Entrypoint(int workers = 2) {
  JobSpec spec;
  spec.set_name("torch job");
  spec.set_num_workers(workers);
  spec.mutable_model()->set_kind("entrypoint");
  EntrypointSpec* e = spec.mutable_model()->mutable_entrypoint();
  e->add_argv("python3");
  e->add_argv("train.py");
  e->set_workdir("/home/me/run");
  return spec;
}

TEST(EntrypointSpecTest, Valid_NeedsNoDatasetBatchStepsOrOptimizer) {
  absl::StatusOr<JobSpec> spec = ValidateJobSpec(Entrypoint());
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->mode(), SYNC_MODE_RING);
  EXPECT_EQ(spec->device(), "cpu");
  EXPECT_TRUE(spec->optimizer().name().empty());
}

TEST(EntrypointSpecTest, EachBadField_RefusedNamingIt) {
  struct Case {
    std::string field;
    void (*mutate)(JobSpec*);
  };
  const Case cases[] = {
      {"model.entrypoint.argv",
       [](JobSpec* s) {
         s->mutable_model()->mutable_entrypoint()->clear_argv();
       }},
      {"model.entrypoint.argv[1]",
       [](JobSpec* s) {
         s->mutable_model()->mutable_entrypoint()->set_argv(
             1, std::string("a\0b", 3));
       }},
      {"model.entrypoint.argv",
       [](JobSpec* s) {
         s->mutable_model()->mutable_entrypoint()->add_argv(
             std::string(70000, 'x'));
       }},
      {"model.entrypoint.workdir",
       [](JobSpec* s) {
         s->mutable_model()->mutable_entrypoint()->set_workdir("relative/dir");
       }},
      {"model.entrypoint.workdir",
       [](JobSpec* s) {
         s->mutable_model()->mutable_entrypoint()->clear_workdir();
       }},
      {"model.entrypoint.stepDeadlineMs",
       [](JobSpec* s) {
         s->mutable_model()->mutable_entrypoint()->set_step_deadline_ms(-2);
       }},
      {"model.entrypoint.termGraceMs",
       [](JobSpec* s) {
         s->mutable_model()->mutable_entrypoint()->set_term_grace_ms(700000);
       }},
      {"numWorkers", [](JobSpec* s) { s->set_num_workers(0); }},
      {"model.kind",
       [](JobSpec* s) { s->mutable_dataset()->set_name("fashion-mnist"); }},
      {"model.kind",
       [](JobSpec* s) { s->mutable_model()->add_layer_sizes(4); }},
      {"ps.sync",
       [](JobSpec* s) {
         s->set_mode(SYNC_MODE_PS);
         s->mutable_ps()->set_sync("async");
       }},
      {"optimizer.name",
       [](JobSpec* s) { s->mutable_optimizer()->set_name("lion"); }},
      {"restartCount", [](JobSpec* s) { s->set_restart_count(-1); }},
  };
  for (const Case& c : cases) {
    JobSpec spec = Entrypoint();
    c.mutate(&spec);
    EXPECT_THAT(ValidateJobSpec(spec),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("job spec field " + c.field + " ")))
        << c.field;
  }
}

TEST(EntrypointSpecTest, PsAutoAndSwitches_Accepted) {
  // The torch PS path (python/gradsync/torch/ps.py) and the runtime
  // switch work for entrypoint jobs, on the synchronous PS.
  JobSpec ps = Entrypoint();
  ps.set_mode(SYNC_MODE_PS);
  ps.mutable_ps()->set_sync("sync");
  EXPECT_THAT(ValidateJobSpec(ps), IsOk());
  JobSpec switched = Entrypoint();
  SwitchSpec* at = switched.add_switches();
  at->set_step(10);
  at->set_mode(SYNC_MODE_PS);
  EXPECT_THAT(ValidateJobSpec(switched), IsOk());
  JobSpec automatic = Entrypoint();
  automatic.mutable_auto_mode()->set_enabled(true);
  EXPECT_THAT(ValidateJobSpec(automatic), IsOk());
}

TEST(EntrypointSpecTest, JsonSpec_ParsesArgvAndWorkdir) {
  absl::StatusOr<JobSpec> spec = ParseJobSpecJson(
      R"({"numWorkers": 2, "model": {"kind": "entrypoint", "entrypoint":
          {"argv": ["python3", "train.py", "--epochs", "3"],
           "workdir": "/srv/run", "stepDeadlineMs": "-1"}}})");
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->model().entrypoint().argv_size(), 4);
  EXPECT_EQ(spec->model().entrypoint().step_deadline_ms(), -1);
  EXPECT_THAT(ValidateJobSpec(*spec), IsOk());
}

}  // namespace
}  // namespace gradsync
