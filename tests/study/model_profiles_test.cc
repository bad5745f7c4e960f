// The published networks' parameter tensors: the totals their papers and
// torchvision/Hugging Face give, FLOPs of the right size, and the scaling.
#include "study/model_profiles.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

struct Published {
  const char* name;
  int64_t exact;     // torchvision / Hugging Face's count
  double published;  // the paper's round figure
  size_t tensors;
  double gmacs;  // forward multiply-adds per sample, in billions
};

TEST(ModelProfilesTest, TotalsMatchThePublishedCounts) {
  for (const Published& p :
       {Published{"resnet50", 25'557'032, 25.6e6, 161, 4.1},
        Published{"vgg16", 138'357'544, 138e6, 32, 15.5},
        Published{"bert-large", 335'141'888, 340e6, 391, 39.5}}) {
    absl::StatusOr<std::vector<ProfileTensor>> tensors = ModelProfile(p.name);
    ASSERT_THAT(tensors, IsOk());
    EXPECT_EQ(TotalParams(*tensors), p.exact) << p.name;
    EXPECT_NEAR(TotalParams(*tensors) / p.published, 1.0, 0.02) << p.name;
    EXPECT_EQ(tensors->size(), p.tensors) << p.name;
    double flops = 0;
    for (const ProfileTensor& t : *tensors) {
      EXPECT_GT(t.params, 0) << t.name;
      EXPECT_GE(t.flops, 0) << t.name;
      flops += t.flops;
    }
    EXPECT_NEAR(flops / 1e9, p.gmacs, 0.05 * p.gmacs) << p.name;
  }
}

TEST(ModelProfilesTest, VggsFullyConnectedLayersHoldMostOfItsParameters) {
  absl::StatusOr<std::vector<ProfileTensor>> vgg = ModelProfile("vgg16");
  ASSERT_THAT(vgg, IsOk());
  EXPECT_EQ(vgg->at(26).name, "classifier.0.weight");
  EXPECT_EQ(vgg->at(26).params, 25088 * 4096);
  int64_t fc = 0;
  for (size_t i = 26; i < vgg->size(); ++i) fc += vgg->at(i).params;
  EXPECT_GT(static_cast<double>(fc) / TotalParams(*vgg), 0.89);
}

TEST(ModelProfilesTest, ScalingShrinksEveryLayerAndKeepsEachOne) {
  absl::StatusOr<std::vector<ProfileTensor>> resnet = ModelProfile("resnet50");
  ASSERT_THAT(resnet, IsOk());
  absl::StatusOr<std::vector<size_t>> floats = ScaledLayerFloats(*resnet, 0.01);
  ASSERT_THAT(floats, IsOk());
  ASSERT_EQ(floats->size(), resnet->size());
  size_t total = 0;
  for (size_t i = 0; i < floats->size(); ++i) {
    EXPECT_GE((*floats)[i], 1u);
    EXPECT_EQ((*floats)[i], static_cast<size_t>(std::max<long long>(
                                1, std::llround((*resnet)[i].params * 0.01))));
    total += (*floats)[i];
  }
  EXPECT_NEAR(total / 255570.32, 1.0, 0.01);
  EXPECT_THAT(
      ScaledLayerFloats(*resnet, 0),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not in (0, 1]")));
  EXPECT_THAT(ScaledLayerFloats(*resnet, 1.5),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ModelProfilesTest, UnknownNameListsTheKnownOnes) {
  EXPECT_THAT(ModelProfile("gpt5"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("use one of resnet50, vgg16, bert-large")));
}

}  // namespace
}  // namespace gradsync
