// The model kinds' two tables (models/model_kinds.h, the spec parts;
// models/model_builders.h, the builders) agree with each other and with
// what the builders build: every kind the trainer runs has a builder and
// the reverse, a kind's parameter layout is exactly the flat vector its
// built model holds (and, for an mlp, common/model_init's layout), and a
// kind without a builder is refused by name.
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/model_init/mlp_layout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_spec.h"
#include "models/model_builders.h"
#include "models/model_kinds.h"
#include "tests/util/status_matchers.h"
#include "worker/train/train_config.h"
#include "worker/train/train_model.h"

namespace gradsync {
namespace {

using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ModelRegistryTest, EveryTrainedKindHasABuilderAndEveryBuilderAKind) {
  std::set<std::string> trained;
  for (const ModelKindSpec* kind : ModelKinds()) {
    ASSERT_NE(kind->validate, nullptr) << kind->kind;
    EXPECT_FALSE(kind->summary.empty()) << kind->kind;
    EXPECT_EQ(FindModelKind(kind->kind), kind);
    absl::StatusOr<const ModelBuilder*> builder = FindModelBuilder(kind->kind);
    if (kind->runner == ModelKindSpec::Runner::kTrainer) {
      trained.insert(std::string(kind->kind));
      ASSERT_TRUE(builder.ok()) << kind->kind << ": " << builder.status();
      EXPECT_EQ((*builder)->kind, kind->kind);
      EXPECT_NE((*builder)->configure, nullptr) << kind->kind;
      EXPECT_NE((*builder)->create, nullptr) << kind->kind;
      EXPECT_NE(kind->parameter_layout, nullptr) << kind->kind;
    } else {
      EXPECT_THAT(builder, StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("the trainer runs")))
          << kind->kind;
    }
  }
  EXPECT_EQ(trained, (std::set<std::string>{"mlp", "synthetic"}));
  EXPECT_EQ(FindModelKind("resnet"), nullptr);
  EXPECT_EQ(ModelKindChoices(),
            "\"mlp\", \"synthetic\", \"entrypoint\" or \"link_probe\"");
}

TEST(ModelRegistryTest, AnUnknownKindIsRefusedWithEveryKindNamed) {
  JobSpec spec;
  spec.mutable_model()->set_kind("resnet");
  EXPECT_THAT(ValidateJobSpec(spec).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("model.kind is 'resnet'; use \"mlp\", "
                                 "\"synthetic\", \"entrypoint\" or "
                                 "\"link_probe\"")));
}

// A checked spec of `model` on 2 workers, as a worker receives it.
JobSpec TrainedSpec(const ModelSpec& model) {
  JobSpec spec;
  *spec.mutable_model() = model;
  spec.mutable_dataset()->set_name("synthetic");
  spec.set_num_workers(2);
  spec.set_batch_size(8);
  spec.set_steps(3);
  spec.mutable_optimizer()->set_name("sgd");
  spec.mutable_optimizer()->set_learning_rate(0.1);
  return spec;
}

// The layout the spec part reports, summed, is the length of the flat
// parameter vector the builder's model holds: what the PS shards and the
// ring sync.
void ExpectLayoutMatchesTheBuiltModel(const ModelSpec& model) {
  absl::StatusOr<JobSpec> checked = ValidateJobSpec(TrainedSpec(model));
  ASSERT_TRUE(checked.ok()) << checked.status();
  const ModelKindSpec* kind = FindModelKind(model.kind());
  ASSERT_NE(kind, nullptr);
  int64_t total = 0;
  for (int64_t floats : kind->parameter_layout(checked->model())) {
    EXPECT_GT(floats, 0);
    total += floats;
  }
  EXPECT_EQ(total, ModelParameterCount(checked->model()));
  absl::StatusOr<TrainerConfig> config = TrainerConfigFromJobSpec(*checked);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model, model.kind());
  absl::StatusOr<std::unique_ptr<TrainModel>> built =
      CreateTrainModel(*config, /*rank=*/0);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(static_cast<int64_t>((*built)->params().size()), total);
  EXPECT_EQ(static_cast<int64_t>((*built)->grads().size()), total);
}

TEST(ModelRegistryTest, TheMlpLayoutIsTheBuiltModelsAndModelInitsLayout) {
  ModelSpec model;
  model.set_kind("mlp");
  for (int64_t width : {20, 7, 5, 3}) model.add_layer_sizes(width);
  ExpectLayoutMatchesTheBuiltModel(model);
  // Weights then biases of each layer, in forward order, as MlpLayout
  // places them in the flat buffer.
  absl::StatusOr<MlpLayout> layout = MlpLayout::Create({20, 7, 5, 3});
  ASSERT_TRUE(layout.ok());
  std::vector<int64_t> expected;
  for (size_t l = 0; l < layout->num_layers(); ++l) {
    const LayerSlice& slice = layout->layer(l);
    expected.push_back(
        static_cast<int64_t>(slice.bias_offset - slice.weight_offset));
    expected.push_back(static_cast<int64_t>(slice.out));
  }
  EXPECT_EQ(FindModelKind("mlp")->parameter_layout(model), expected);
}

TEST(ModelRegistryTest, TheSyntheticLayoutIsTheBuiltModels) {
  ModelSpec flat;
  flat.set_kind("synthetic");
  flat.set_synthetic_floats(1000);
  ExpectLayoutMatchesTheBuiltModel(flat);
  ModelSpec profiled;
  profiled.set_kind("synthetic");
  profiled.set_profile("resnet50");
  profiled.set_profile_scale(0.001);
  ExpectLayoutMatchesTheBuiltModel(profiled);
  EXPECT_GT(FindModelKind("synthetic")->parameter_layout(profiled).size(), 1u);
}

TEST(ModelRegistryTest, AKindWithoutABuilderIsNotTrained) {
  JobSpec spec;
  spec.mutable_model()->set_kind("entrypoint");
  TrainerConfig config;
  config.model = "entrypoint";
  EXPECT_THAT(CreateTrainModel(config, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("model.kind is 'entrypoint'; the trainer "
                                 "runs \"mlp\" or \"synthetic\"")));
  EXPECT_EQ(ModelParameterCount(spec.model()), 0);
}

}  // namespace
}  // namespace gradsync
