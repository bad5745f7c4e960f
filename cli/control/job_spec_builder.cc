#include "cli/control/job_spec_builder.h"

#include <google/protobuf/field_mask.pb.h>
#include <google/protobuf/util/field_mask_util.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/control/job_spec_flag_rows.h"
#include "common/status_macros.h"
#include "jobspec/job_spec_json.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

constexpr int64_t kDefaultBatchSize = 256;
constexpr int64_t kDefaultSteps = 100;

bool Contains(const std::vector<std::string>& paths, absl::string_view path) {
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

}  // namespace

void AddJobSpecFlags(JobSpecFlags* out, std::vector<FlagSpec>* flags) {
  flags->push_back(StringFlag("file", "JOB.json",
                              "job spec in protobuf JSON (proto/job.proto); "
                              "flags override its fields",
                              &out->file));
  for (const SpecFlagRow& row : JobSpecFlagRows()) {
    flags->push_back(FlagSpec{row.name, row.value_name, row.help,
                              [out, &row](absl::string_view value) {
                                RETURN_IF_ERROR(row.set(value, &out->values));
                                // A row may set several fields ("a,b").
                                for (absl::string_view path :
                                     absl::StrSplit(row.path, ',')) {
                                  if (!Contains(out->paths, path)) {
                                    out->paths.emplace_back(path);
                                  }
                                }
                                return absl::OkStatus();
                              }});
  }
}

absl::Status ApplyJobSpecFlags(const JobSpecFlags& flags, JobSpec* spec) {
  if (flags.paths.empty()) return absl::OkStatus();
  google::protobuf::FieldMask mask;
  for (const std::string& path : flags.paths) mask.add_paths(path);
  if (!google::protobuf::util::FieldMaskUtil::IsValidFieldMask<JobSpec>(mask)) {
    return absl::InternalError(
        absl::StrCat("the job-spec flag table names a field JobSpec lacks: ",
                     google::protobuf::util::FieldMaskUtil::ToString(mask)));
  }
  google::protobuf::util::FieldMaskUtil::MergeOptions options;
  options.set_replace_repeated_fields(true);
  google::protobuf::util::FieldMaskUtil::MergeMessageTo(flags.values, mask,
                                                        options, spec);
  if (Contains(flags.paths, "epochs") && !Contains(flags.paths, "steps")) {
    spec->set_steps(0);
  }
  return absl::OkStatus();
}

void FillJobSpecDefaults(JobSpec* spec) {
  ModelSpec* model = spec->mutable_model();
  if (model->kind() == "entrypoint") {
    // The user's program brings its model, data and length; the ring is
    // the default path, the current directory the default workdir.
    EntrypointSpec* e = model->mutable_entrypoint();
    if (e->workdir().empty()) {
      char cwd[4096];
      if (getcwd(cwd, sizeof(cwd)) != nullptr) e->set_workdir(cwd);
    }
    if (spec->num_workers() == 0) spec->set_num_workers(1);
    if (spec->mode() == SYNC_MODE_UNSPECIFIED) spec->set_mode(SYNC_MODE_RING);
    if (spec->name().empty() && e->argv_size() > 0) {
      std::string name;
      for (int i = 0; i < std::min(2, e->argv_size()); ++i) {
        const std::string& a = e->argv(i);
        absl::StrAppend(&name, name.empty() ? "" : " ",
                        a.substr(a.rfind('/') + 1));
      }
      spec->set_name(name.substr(0, 64));
    }
    return;
  }
  if (model->kind().empty()) {
    model->set_kind(model->synthetic_floats() > 0 ? "synthetic" : "mlp");
  }
  if (model->kind() == "mlp" && model->layer_sizes().empty()) {
    for (int64_t width : {784, 256, 256, 10}) model->add_layer_sizes(width);
  }
  if (spec->dataset().name().empty()) {
    spec->mutable_dataset()->set_name(
        model->kind() == "synthetic" ? "synthetic" : "fashion-mnist");
  }
  if (spec->num_workers() == 0) spec->set_num_workers(1);
  if (spec->mode() == SYNC_MODE_UNSPECIFIED) spec->set_mode(SYNC_MODE_RING);
  OptimizerSpec* optimizer = spec->mutable_optimizer();
  if (optimizer->name().empty()) optimizer->set_name("sgd");
  if (optimizer->learning_rate() == 0) {
    const std::string& name = optimizer->name();
    optimizer->set_learning_rate(name == "adam" || name == "adamw" ? 0.001
                                 : name == "momentum"              ? 0.05
                                                                   : 0.1);
  }
  if (spec->batch_size() == 0) {
    const int64_t micro = std::max(1, spec->grad_accumulation_steps());
    spec->set_batch_size(std::max(
        kDefaultBatchSize, int64_t{std::max(1, spec->num_workers())} * micro));
  }
  if (spec->steps() == 0 && spec->epochs() == 0) spec->set_steps(kDefaultSteps);
  if (spec->name().empty()) {
    spec->set_name(absl::StrCat(model->kind(), "-", spec->dataset().name()));
  }
}

absl::StatusOr<JobSpec> BuildJobSpec(const JobSpecFlags& flags) {
  JobSpec spec;
  if (!flags.file.empty()) {
    ASSIGN_OR_RETURN(std::string text, ReadTextFile(flags.file));
    ASSIGN_OR_RETURN(spec, ParseJobSpecJson(text, flags.file));
  }
  RETURN_IF_ERROR(ApplyJobSpecFlags(flags, &spec));
  FillJobSpecDefaults(&spec);
  return spec;
}

absl::StatusOr<std::string> ReadTextFile(absl::string_view path) {
  const std::string name(path);
  std::ifstream in(name, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", name, ": ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", name));
  }
  return text.str();
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
