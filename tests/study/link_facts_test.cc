// Link facts from measured links (study/link_facts.h): B is the median
// goodput and alpha half the median round trip, on hand-made links; a link
// under the expectation (or the median) by more than the tolerance is
// named; figures that cannot be links are refused.
#include "study/link_facts.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync::study {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<HostLink> ThreeLinks() {
  return {{"a", "b", 100e6, 400, 300},
          {"b", "c", 110e6, 200, 150},
          {"c", "a", 50e6, 300, 250}};
}

TEST(LinkFactsTest, MedianGoodputAndHalfTheMedianRoundTrip) {
  absl::StatusOr<LinkEstimate> e = EstimateLinks(ThreeLinks(), 0, 0.15);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_DOUBLE_EQ(e->bandwidth_Bps, 100e6);
  EXPECT_DOUBLE_EQ(e->alpha_s, 150e-6);
  EXPECT_EQ(e->slowest, 2);
  EXPECT_DOUBLE_EQ(e->slowest_Bps, 50e6);
  EXPECT_DOUBLE_EQ(e->fastest_Bps, 110e6);
  EXPECT_FALSE(e->expected);
  EXPECT_THAT(e->below, ElementsAre(2));  // 50 < 0.85 * 100
  const std::string table = FormatLinkEstimate(ThreeLinks(), *e);
  EXPECT_THAT(table, HasSubstr("c -> a"));
  EXPECT_THAT(table, HasSubstr("BELOW"));
  EXPECT_THAT(
      table,
      HasSubstr("B = 100.0 MB/s (median of 3 links; 50.0 MB/s to 110.0 MB/s)"));
  EXPECT_THAT(table, HasSubstr("alpha = 150.0 us"));
}

TEST(LinkFactsTest, HeldAgainstTheExpectation) {
  // 1 Gbit/s at MTU 1500: 125e6 * 1448 / 1514 bytes/s of payload.
  const double payload = TcpPayloadBytesPerSecond(1e9, 1500);
  EXPECT_DOUBLE_EQ(payload, 125e6 * 1448 / 1514);
  absl::StatusOr<LinkEstimate> e = EstimateLinks(ThreeLinks(), payload, 0.15);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->expected);
  // 0.85 * 119.55e6 = 101.6e6: a and c are below.
  EXPECT_THAT(e->below, ElementsAre(0, 2));
  absl::StatusOr<LinkEstimate> loose =
      EstimateLinks(ThreeLinks(), payload, 0.6);
  ASSERT_TRUE(loose.ok());
  EXPECT_TRUE(loose->below.empty());
}

TEST(LinkFactsTest, EvenCount_MeanOfTheMiddleTwo) {
  std::vector<HostLink> links = ThreeLinks();
  links.push_back({"d", "a", 120e6, 100, 90});
  absl::StatusOr<LinkEstimate> e = EstimateLinks(links, 0, 0.15);
  ASSERT_TRUE(e.ok());
  EXPECT_DOUBLE_EQ(e->bandwidth_Bps, 105e6);
  EXPECT_DOUBLE_EQ(e->alpha_s, 125e-6);  // (200 + 300) / 2 / 2
}

TEST(LinkFactsTest, Refusals) {
  EXPECT_EQ(EstimateLinks({}, 0, 0.1).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<HostLink> zero = ThreeLinks();
  zero[1].goodput_Bps = 0;
  EXPECT_THAT(EstimateLinks(zero, 0, 0.1).status().message(),
              HasSubstr("b -> c"));
  EXPECT_EQ(EstimateLinks(ThreeLinks(), 0, 1.0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EstimateLinks(ThreeLinks(), -1, 0.1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync::study
