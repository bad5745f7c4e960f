#include "server/ps/daemon/ps_proto.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "jobspec/grad_dtype.h"
#include "jobspec/optimizer_spec.h"

namespace gradsync {
namespace {

constexpr absl::Duration kDefaultMaxWait = absl::Minutes(5);

[[nodiscard]] absl::Status Invalid(absl::string_view field,
                                   absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("CreateShard: ", field, " ", why));
}

}  // namespace

absl::StatusOr<UpdateMode> UpdateModeFromProto(ps::UpdateMode mode) {
  switch (mode) {
    case ps::UPDATE_MODE_UNSPECIFIED:
    case ps::UPDATE_MODE_SYNC:
      return UpdateMode::kSync;
    case ps::UPDATE_MODE_ASYNC:
      return UpdateMode::kAsync;
    case ps::UPDATE_MODE_SSP:
      return UpdateMode::kStaleSync;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("update mode ", static_cast<int>(mode),
                   " is unknown; use UPDATE_MODE_SYNC, UPDATE_MODE_ASYNC or "
                   "UPDATE_MODE_SSP"));
}

ps::UpdateMode UpdateModeToProto(UpdateMode mode) {
  switch (mode) {
    case UpdateMode::kSync:
      return ps::UPDATE_MODE_SYNC;
    case UpdateMode::kAsync:
      return ps::UPDATE_MODE_ASYNC;
    case UpdateMode::kStaleSync:
      return ps::UPDATE_MODE_SSP;
  }
  return ps::UPDATE_MODE_UNSPECIFIED;
}

absl::StatusOr<ShardSpec> ShardSpecFromProto(
    const ps::CreateShardRequest& request) {
  ShardSpec spec;
  PsShardConfig& config = spec.config;
  config.job_id = request.job_id();
  config.shard = request.shard();
  if (request.begin() < 0 || request.end() < 0) {
    return Invalid("begin/end",
                   absl::StrCat("[", request.begin(), ", ", request.end(),
                                ") has a negative bound"));
  }
  if (request.total_elements() < 0) {
    return Invalid("total_elements", "is negative");
  }
  config.begin = static_cast<size_t>(request.begin());
  config.end = static_cast<size_t>(request.end());
  spec.total_elements = static_cast<size_t>(request.total_elements());
  spec.num_shards = request.num_shards();
  config.num_workers = request.num_workers();
  // The job spec's optimizer, with the defaults the ranks use in ring
  // mode (jobspec/optimizer_spec.h).
  ASSIGN_OR_RETURN(config.optimizer,
                   OptimizerConfigFromSpec(request.optimizer()));
  RETURN_IF_ERROR(ValidateOptimizerConfig(config.optimizer));
  ASSIGN_OR_RETURN(config.mode, UpdateModeFromProto(request.mode()));
  config.staleness = request.staleness();
  config.first_step = request.first_step();
  if (request.wait_timeout_ms() < 0) {
    return Invalid("wait_timeout_ms", "is negative");
  }
  config.sum_gradients = request.sum_gradients();
  // The job's gradient wire type (JobSpec.grad_dtype's spelling); old
  // clients send nothing: fp32.
  absl::StatusOr<DataType> wire = ParseGradDtype(request.wire_dtype());
  if (!wire.ok()) {
    return Invalid("wire_dtype",
                   absl::StrCat("is '", request.wire_dtype(),
                                "'; use fp32 (or nothing), bf16 or fp16"));
  }
  config.wire_dtype = *wire;
  config.max_wait = request.wait_timeout_ms() == 0
                        ? kDefaultMaxWait
                        : absl::Milliseconds(request.wait_timeout_ms());
  switch (request.init_case()) {
    case ps::CreateShardRequest::kMlp:
      spec.init.kind = ShardInit::Kind::kMlp;
      spec.init.seed = request.mlp().seed();
      for (int64_t width : request.mlp().layer_sizes()) {
        if (width <= 0) {
          return Invalid("mlp.layer_sizes", "has a width that is not > 0");
        }
        spec.init.layer_sizes.push_back(static_cast<size_t>(width));
      }
      break;
    case ps::CreateShardRequest::kZeros:
      spec.init.kind = ShardInit::Kind::kZeros;
      break;
    case ps::CreateShardRequest::kSeeded:
      spec.init.kind = ShardInit::Kind::kSeeded;
      break;
    case ps::CreateShardRequest::INIT_NOT_SET:
      return Invalid("init", "is not set; choose mlp, zeros or seeded");
  }
  return spec;
}

void ShardStatsToProto(const PsShard& shard, ps::ShardStats* out) {
  const PsShardConfig& config = shard.config();
  const PsShardStats stats = shard.Stats();
  out->set_job_id(config.job_id);
  out->set_shard(config.shard);
  out->set_begin(static_cast<int64_t>(config.begin));
  out->set_end(static_cast<int64_t>(config.end));
  out->set_mode(UpdateModeToProto(config.mode));
  out->set_version(stats.version);
  out->set_bytes_in(static_cast<int64_t>(stats.bytes_in));
  out->set_bytes_out(static_cast<int64_t>(stats.bytes_out));
  out->set_pushes(static_cast<int64_t>(stats.pushes));
  out->set_pulls(static_cast<int64_t>(stats.pulls));
  out->set_updates(static_cast<int64_t>(stats.updates));
  out->set_wait_last_worker_s(absl::ToDoubleSeconds(stats.wait_last_worker));
  out->set_last_wait_last_worker_s(
      absl::ToDoubleSeconds(stats.last_wait_last_worker));
  out->set_apply_s(absl::ToDoubleSeconds(stats.apply_time));
  out->set_staleness_wait_s(absl::ToDoubleSeconds(stats.staleness_wait));
  out->set_queue_depth(stats.queue_depth);
  out->set_max_queue_depth(stats.max_queue_depth);
  for (int64_t step : stats.rank_steps) out->add_rank_steps(step);
  for (const PushRecord& record : shard.History()) {
    ps::PushRecord* r = out->add_recent_pushes();
    r->set_rank(record.rank);
    r->set_step(record.step);
    r->set_slowest_step(record.slowest_step);
  }
}

absl::StatusOr<std::vector<double>> PushScalarsFromHeader(
    const ps::PushHeader& header) {
  const int trailer = header.trailer_scalars();
  if (trailer == 0) {
    return std::vector<double>(header.scalars().begin(),
                               header.scalars().end());
  }
  if (trailer < 0 || trailer > kMaxTrailerScalars) {
    return absl::InvalidArgumentError(
        absl::StrCat("PushPull: trailer_scalars is ", trailer,
                     "; it must be between 0 and ", kMaxTrailerScalars));
  }
  if (!header.scalars().empty()) {
    return absl::InvalidArgumentError(
        "PushPull: a header with trailer_scalars must not carry scalars "
        "itself");
  }
  return std::vector<double>(static_cast<size_t>(trailer), 0.0);
}

absl::StatusOr<double> PushLearningRate(const ps::PushHeader& header) {
  const double lr = header.learning_rate();
  if (lr == 0 || (lr > 0 && std::isfinite(lr))) return lr;
  return absl::InvalidArgumentError(
      absl::StrCat("PushPull: learning_rate is ", lr,
                   "; send 0 (the shard's) or a finite number > 0"));
}

ps::PullHeader PullHeaderFromView(const ShardView& view, const PsShard& shard) {
  ps::PullHeader header;
  header.set_version(view.version);
  header.set_begin(static_cast<int64_t>(shard.config().begin));
  header.set_end(static_cast<int64_t>(shard.config().end));
  header.mutable_scalar_sums()->Add(view.scalar_sums.begin(),
                                    view.scalar_sums.end());
  header.set_switch_epoch(view.decision.epoch);
  header.set_switch_step(view.decision.step);
  return header;
}

}  // namespace gradsync
