// The checks of an entrypoint job's spec (JobSpec.model.kind "entrypoint"):
// what job_spec.cc checks for gradsync's own models, for the user's
// program instead. Which workers may run it, and in which directories, is
// each worker's own decision (worker/launch/entrypoint_runner.h).
#include "models/entrypoint/entrypoint_spec.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "jobspec/job_spec.h"

namespace gradsync {

absl::Status ValidateEntrypoint(const JobSpec& spec) {
  const ModelSpec& model = spec.model();
  const EntrypointSpec& e = model.entrypoint();
  if (model.layer_sizes_size() > 0 || model.synthetic_floats() != 0 ||
      !model.profile().empty() || !spec.dataset().name().empty()) {
    return InvalidSpecField(
        "model.kind",
        "is \"entrypoint\" but the spec also sets layerSizes, "
        "syntheticFloats, profile or dataset, which belong to "
        "gradsync's own models; an entrypoint brings its model "
        "and data itself");
  }
  if (e.argv_size() == 0 || e.argv(0).empty()) {
    return InvalidSpecField(
        "model.entrypoint.argv",
        "is empty; name the program to run on every rank, e.g. "
        "[\"python3\", \"train.py\"]");
  }
  if (e.argv_size() > kMaxEntrypointArgs) {
    return InvalidSpecField(
        "model.entrypoint.argv",
        absl::StrCat("has ", e.argv_size(), " entries; at most ",
                     kMaxEntrypointArgs));
  }
  size_t bytes = 0;
  for (int i = 0; i < e.argv_size(); ++i) {
    if (e.argv(i).find('\0') != std::string::npos) {
      return InvalidSpecField(absl::StrCat("model.entrypoint.argv[", i, "]"),
                              "holds a NUL byte");
    }
    bytes += e.argv(i).size();
  }
  if (bytes > kMaxEntrypointArgvBytes) {
    return InvalidSpecField("model.entrypoint.argv",
                            absl::StrCat("is ", bytes, " bytes long; at most ",
                                         kMaxEntrypointArgvBytes));
  }
  if (e.workdir().empty() || e.workdir()[0] != '/' ||
      e.workdir().find('\0') != std::string::npos ||
      e.workdir().size() > 4096) {
    return InvalidSpecField(
        "model.entrypoint.workdir",
        absl::StrCat("is '", e.workdir(),
                     "'; give the absolute directory the "
                     "processes start in (it must exist on "
                     "every worker, under its --workdir-root)"));
  }
  if (e.step_deadline_ms() < -1) {
    return InvalidSpecField(
        "model.entrypoint.stepDeadlineMs",
        absl::StrCat("is ", e.step_deadline_ms(),
                     "; use 0 (600 s), -1 (never) or a time in "
                     "ms"));
  }
  if (e.term_grace_ms() < 0 || e.term_grace_ms() > kMaxEntrypointGraceMs) {
    return InvalidSpecField(
        "model.entrypoint.termGraceMs",
        absl::StrCat("is ", e.term_grace_ms(), "; it must be in 0..",
                     kMaxEntrypointGraceMs, " (0: 10 s)"));
  }
  RETURN_IF_ERROR(ValidateNumWorkers(spec, "one process per device"));
  if (spec.steps() < 0 || spec.batch_size() < 0 ||
      spec.grad_accumulation_steps() < 0) {
    return InvalidSpecField(
        "steps",
        "batchSize and gradAccumulationSteps must be >= 0 (for "
        "an entrypoint they only describe the job)");
  }
  // The PS path of torch jobs (python/gradsync/torch/ps.py) runs the
  // synchronous update only: DDP's contract is that every rank steps with
  // the same averaged gradient.
  if (JobNeedsPs(spec) && !spec.ps().sync().empty() &&
      spec.ps().sync() != "sync") {
    return InvalidSpecField(
        "ps.sync",
        absl::StrCat("is '", spec.ps().sync(),
                     "'; entrypoint jobs use the synchronous PS only (DDP "
                     "steps every rank with the same averaged gradient)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateEntrypointModel(const JobSpec& spec, JobSpec* out) {
  return ValidateEntrypoint(spec);
}

std::string DescribeEntrypoint(const ModelSpec& model) {
  const EntrypointSpec& e = model.entrypoint();
  return absl::StrCat(": ", absl::StrJoin(e.argv(), " "), " (in ", e.workdir(),
                      ")");
}

}  // namespace gradsync
