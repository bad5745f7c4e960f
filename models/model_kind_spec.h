// ModelKindSpec: what the job spec knows of one model kind
// (JobSpec.model.kind), so that the coordinator, the workers and the CLI
// check, estimate and describe a job without running its model.
//
// A model kind is one folder, models/<kind>/, holding its spec part (this
// interface, on the job spec's floor) and, for a kind gradsync's trainer
// runs, its builder (model_builder.h, on the worker's floor). Each part
// registers with one line: the spec in models/model_kinds.cc, the builder
// in models/model_builders.cc. Nothing else names the kind.
//
//   const ModelKindSpec* kind = FindModelKind(spec.model().kind());
//   RETURN_IF_ERROR(kind->validate(spec, &out));
//
// The functions are pure and thread-safe; a kind's instance is a constant.
#ifndef GRADSYNC_MODELS_MODEL_KIND_SPEC_H_
#define GRADSYNC_MODELS_MODEL_KIND_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/job.pb.h"

namespace gradsync {

struct ModelKindSpec {
  // Who runs a job of this kind on a worker.
  enum class Runner {
    // gradsync's trainer (worker/train/): the kind has a builder
    // (models/model_builders.cc), and the job's dataset, batch, length and
    // optimizer are checked as for every trained model.
    kTrainer,
    // A runner of its own (worker/launch/: the user's program, the link
    // probe), whose validate checks every field the job uses.
    kOwnRunner,
  };

  // JobSpec.model.kind.
  absl::string_view kind;
  // What it is, for errors and help: "a multi-layer perceptron".
  absl::string_view summary;
  Runner runner = Runner::kTrainer;
  // Whether the model has CUDA kernels: a job on device "cuda" runs it
  // there and may use the NCCL ring; otherwise its ranks stay on the host.
  bool runs_on_cuda = false;

  // Checks the model's fields of `spec` (and any other field the kind
  // reads), writing its defaults into `out`, a copy of `spec` that the
  // rest of the job spec's checks also fill. INVALID_ARGUMENT naming the
  // first bad field by its JSON name (InvalidSpecField). Required.
  absl::Status (*validate)(const JobSpec& spec, JobSpec* out) = nullptr;

  // The parameter tensors of a validated model, fp32 elements each, in
  // forward order: the flat vector the ranks sync, the PS shards hold and
  // the memory estimate counts. Empty for a kind whose parameters are not
  // gradsync's (an entrypoint's). Null: empty.
  std::vector<int64_t> (*parameter_layout)(const ModelSpec& model) = nullptr;

  // fp32 values of activations one rank holds for a batch of `batch`
  // examples (the memory estimate). Null: none.
  int64_t (*activation_floats)(const ModelSpec& model, int64_t batch) = nullptr;

  // fp32 values of one example's input, for a model that reads the job's
  // dataset (the memory estimate of synthetic data). Null: it reads none.
  int64_t (*input_floats)(const ModelSpec& model) = nullptr;

  // The model in `gradsync status`, after its kind: "784,256,10" for an
  // mlp. Null: the kind alone.
  std::string (*describe)(const ModelSpec& model) = nullptr;
};

}  // namespace gradsync

#endif  // GRADSYNC_MODELS_MODEL_KIND_SPEC_H_
