// The alpha-beta model fitted within the links' payload rate, and per
// layout of a sweep (study/alpha_beta/layout_fit.h), on cells computed
// from a known model.
#include "study/alpha_beta/layout_fit.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace study {
namespace {

using ::testing::HasSubstr;

// Cells whose times follow alpha = 100 us and B = 100 MB/s exactly.
std::vector<SyncObservation> Cells(double scale = 1) {
  const LinkModel truth{100e-6, 100e6};
  std::vector<SyncObservation> cells;
  for (double bytes : {1e6, 4e6, 16e6}) {
    for (double terms : {2.0, 6.0}) {
      SyncObservation o;
      o.cost = {terms, bytes};
      o.seconds = scale * PredictSeconds(o.cost, truth);
      cells.push_back(o);
    }
  }
  return cells;
}

TEST(LayoutFitTest, WithinTheLinksTheFitIsUnconstrained) {
  absl::StatusOr<LinkFit> fit = FitWithinLinks(Cells(), 125e6);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->model.bandwidth_Bps, 100e6, 1e3);
  EXPECT_NEAR(fit->model.alpha_s, 100e-6, 1e-9);
  EXPECT_FALSE(fit->unconstrained.has_value());
}

TEST(LayoutFitTest, ABandwidthAboveTheLinksIsHeldAtThem) {
  absl::StatusOr<LinkFit> fit = FitWithinLinks(Cells(), 50e6);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_DOUBLE_EQ(fit->model.bandwidth_Bps, 50e6);
  ASSERT_TRUE(fit->unconstrained.has_value());
  EXPECT_NEAR(fit->unconstrained->bandwidth_Bps, 100e6, 1e3);
}

TEST(LayoutFitTest, OneLineForTwoLayoutsNoneForOne) {
  std::map<std::string, std::vector<SyncObservation>> by_layout;
  by_layout["ps"] = Cells(2);  // half the rate
  EXPECT_EQ(PerLayoutFits(by_layout, 1e9, 125e6), "");
  by_layout["ring"] = Cells();
  const std::string line = PerLayoutFits(by_layout, 1e9, 125e6);
  EXPECT_THAT(line, HasSubstr("fit per layout: ps B = 400 Mbit/s (40.0%)"));
  EXPECT_THAT(line, HasSubstr("; ring B = 800 Mbit/s (80.0%)"));
  EXPECT_THAT(line, HasSubstr("over 6 cells"));
}

}  // namespace
}  // namespace study
}  // namespace gradsync
