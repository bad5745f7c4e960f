// JobSpec.auto_mode: the defaults of `--mode auto` and the settings it
// refuses.
#include "jobspec/auto_mode_spec.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

TEST(AutoModeSpecTest, ConfigFromSpecFillsDefaultsAndRejectsNonsense) {
  AutoModeSpec spec;
  absl::StatusOr<AutoModeConfig> config = AutoModeConfigFromSpec(spec);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->settle_steps, 2);
  EXPECT_EQ(config->probe_steps, 5);
  EXPECT_EQ(config->recheck_every, 200);
  EXPECT_DOUBLE_EQ(config->change_threshold, 0.25);
  spec.set_recheck_every(-1);
  EXPECT_EQ(AutoModeConfigFromSpec(spec)->recheck_every, 0);
  spec.set_recheck_every(-2);
  EXPECT_THAT(AutoModeConfigFromSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("autoMode.recheckEvery")));
  spec.set_recheck_every(0);
  spec.set_probe_steps(-1);
  EXPECT_THAT(AutoModeConfigFromSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument));
  spec.set_probe_steps(0);
  spec.set_change_threshold(11);
  EXPECT_THAT(AutoModeConfigFromSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("changeThreshold")));
}

}  // namespace
}  // namespace gradsync
