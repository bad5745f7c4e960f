#include "cli/bench/ps_runner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "cli/bench/ps_options.h"
#include "cli/bench/runner.h"
#include "cli/bench/verifiable.h"
#include "common/status_macros.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_admin_client.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/transport/shard_range.h"
#include "study/alpha_beta/sync_bandwidth.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

// Rank 0's hold on one size's shards: creates them, and releases them once,
// explicitly or when destroyed on an error path (which also ends the other
// ranks' waits on them with ABORTED).
class SizeShards {
 public:
  SizeShards(std::string job, std::vector<std::string> addresses,
             absl::Duration timeout)
      : job_(std::move(job)),
        addresses_(std::move(addresses)),
        timeout_(timeout) {}
  SizeShards(const SizeShards&) = delete;
  SizeShards& operator=(const SizeShards&) = delete;
  ~SizeShards() { Release().IgnoreError(); }

  // Shard k of `count` floats on addresses_[k]: sync, SGD at lr 1, plain
  // sum of the `workers` ranks' gradients, zeros.
  [[nodiscard]] absl::Status Create(size_t count, int workers) {
    const int shards = static_cast<int>(addresses_.size());
    ASSIGN_OR_RETURN(const std::vector<ShardRange> ranges,
                     BalancedShardRanges(count, shards));
    for (int k = 0; k < shards; ++k) {
      ps::CreateShardRequest request;
      request.set_job_id(job_);
      request.set_shard(k);
      request.set_num_shards(shards);
      request.set_total_elements(static_cast<int64_t>(count));
      request.set_begin(static_cast<int64_t>(ranges[k].begin));
      request.set_end(static_cast<int64_t>(ranges[k].end));
      request.set_num_workers(workers);
      request.mutable_optimizer()->set_name("sgd");
      request.mutable_optimizer()->set_learning_rate(1.0);
      request.set_mode(ps::UPDATE_MODE_SYNC);
      request.set_first_step(0);
      request.set_zeros(true);
      request.set_sum_gradients(true);
      request.set_wait_timeout_ms(absl::ToInt64Milliseconds(timeout_));
      PsAdminClient* admin = AdminFor(addresses_[k]);
      used_.insert(admin);
      RETURN_IF_ERROR(Annotate(admin->CreateShard(request),
                               absl::StrCat("creating PS shard ", k, " of ",
                                            shards, " (", count, " floats)")));
    }
    return absl::OkStatus();
  }

  // Releases every shard created so far (every server's shards of job_).
  [[nodiscard]] absl::Status Release() {
    absl::Status status;
    for (PsAdminClient* admin : used_) {
      status.Update(admin->ReleaseShard(job_, -1).status());
    }
    used_.clear();
    return status;
  }

 private:
  PsAdminClient* AdminFor(const std::string& address) {
    for (const std::unique_ptr<PsAdminClient>& admin : admins_) {
      if (admin->address() == address) return admin.get();
    }
    admins_.push_back(PsAdminClient::Connect(address, timeout_));
    return admins_.back().get();
  }

  const std::string job_;
  const std::vector<std::string> addresses_;
  const absl::Duration timeout_;
  std::vector<std::unique_ptr<PsAdminClient>> admins_;
  // Servers that hold (or may hold) shards of job_.
  std::set<PsAdminClient*> used_;
};

}  // namespace

PsSweepRunner::PsSweepRunner(Communicator* control, const PsSweepConfig& config)
    : control_(control), config_(config) {}

absl::StatusOr<std::unique_ptr<PsSweepRunner>> PsSweepRunner::Create(
    Communicator* control, const PsSweepConfig& config) {
  if (config.shard_addresses.empty()) {
    return absl::InvalidArgumentError("the PS bench needs at least one shard");
  }
  std::unique_ptr<PsSweepRunner> runner(new PsSweepRunner(control, config));
  const size_t max_count = config.max_bytes / sizeof(float);
  // Value-initialised, so every page is touched before any timed call.
  runner->grads_.resize(max_count);
  runner->negated_.resize(max_count);
  runner->params_.resize(max_count);
  FillInput(DataType::kFloat32, control->rank(), runner->grads_.data(),
            max_count);
  for (size_t i = 0; i < max_count; ++i) {
    runner->negated_[i] = -runner->grads_[i];
  }
  return runner;
}

absl::StatusOr<SizeResult> PsSweepRunner::RunSize(size_t bytes) {
  const size_t count = bytes / sizeof(float);
  const size_t shards = config_.shard_addresses.size();
  if (bytes > config_.max_bytes || count < shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "size ", bytes, " is outside the PS runner's range: at most ",
        config_.max_bytes, " bytes, at least one float per shard (", shards,
        ")"));
  }
  const std::string job = absl::StrCat(config_.job_id, "/S", bytes);
  const std::vector<std::string> addresses = PartitionAddresses(
      count, config_.shard_addresses, config_.partition_bytes);
  std::unique_ptr<SizeShards> owned;
  absl::Status created;
  if (control_->rank() == 0) {
    owned = std::make_unique<SizeShards>(job, addresses, config_.timeout);
    created = owned->Create(count, control_->size());
  }
  RETURN_IF_ERROR(AgreeShardsCreated(created, bytes));

  SizeResult result;
  result.size_bytes = count * sizeof(float);
  result.count = count;
  result.has_in_place = false;
  ASSIGN_OR_RETURN(result.out_of_place, RunPass(job, count, addresses));
  // No rank still reads a reply when the shards go.
  RETURN_IF_ERROR(control_->Barrier());
  if (owned != nullptr) {
    RETURN_IF_ERROR(Annotate(owned->Release(),
                             absl::StrCat("releasing the PS shards of ", job)));
  }
  return result;
}

absl::Status PsSweepRunner::AgreeShardsCreated(const absl::Status& rank0_status,
                                               size_t bytes) {
  ASSIGN_OR_RETURN(
      const double failed,
      AllReduceScalar(rank0_status.ok() ? 0.0 : 1.0, ReduceOp::kMax));
  if (!rank0_status.ok()) return rank0_status;
  if (failed > 0) {
    return absl::AbortedError(
        absl::StrCat("rank 0 could not create the PS shards for size ", bytes,
                     " (its error says why)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PassResult> PsSweepRunner::RunPass(
    const std::string& job, size_t count,
    const std::vector<std::string>& addresses) {
  const int rank = control_->rank();
  ASSIGN_OR_RETURN(std::vector<PsShardLocation> locations,
                   BalancedShardLocations(count, addresses));
  const int shards = static_cast<int>(config_.shard_addresses.size());
  PsClientOptions options;
  options.timeout = config_.timeout;
  if (config_.chunk_bytes > 0) options.chunk_bytes = config_.chunk_bytes;
  options.transport.congestion_control = config_.tcp_congestion;
  options.tensor_plane = config_.tensor_plane;
  ASSIGN_OR_RETURN(
      std::unique_ptr<PsClient> client,
      PsClient::Create(job, rank, count, std::move(locations), options));
  int64_t step = 0;
  const absl::Span<float> params(params_.data(), count);
  auto push_pull = [&]() -> absl::Status {
    const std::vector<float>& grads = step % 2 == 0 ? grads_ : negated_;
    RETURN_IF_ERROR(
        Annotate(client->PushPull(
                     step, absl::MakeConstSpan(grads.data(), count), params),
                 absl::StrCat("rank ", rank, " PushPull of step ", step, " (",
                              job, ")")));
    ++step;
    return absl::OkStatus();
  };

  ASSIGN_OR_RETURN(const double average, TimeCalls(control_, config_.warmup,
                                                   config_.iters, push_pull));
  ASSIGN_OR_RETURN(const double seconds,
                   AllReduceScalar(average, ReduceOp::kMax));

  PassResult pass;
  pass.time_us = seconds * 1e6;
  pass.algbw = AlgorithmBandwidth(count * sizeof(float), seconds);
  pass.busbw = pass.algbw * PsBusFactor(control_->size(), shards);
  if (config_.check) {
    // The checked step must start from zero parameters: an even step.
    if (step % 2 != 0) RETURN_IF_ERROR(push_pull());
    std::fill(params.begin(), params.end(),
              std::numeric_limits<float>::quiet_NaN());
    RETURN_IF_ERROR(push_pull());
    ASSIGN_OR_RETURN(const double total,
                     AllReduceScalar(static_cast<double>(CountWrong(count)),
                                     ReduceOp::kSum));
    pass.wrong = static_cast<int64_t>(std::llround(total));
  }
  return pass;
}

int64_t PsSweepRunner::CountWrong(size_t count) const {
  VerifySpec spec;
  spec.collective = Collective::kAllReduce;
  spec.type = DataType::kFloat32;
  spec.op = ReduceOp::kSum;
  spec.rank = control_->rank();
  spec.ranks = control_->size();
  spec.param_count = count;
  int64_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    // 0 - lr * sum, with lr 1: exact for these small integers.
    const float expected = static_cast<float>(-ExpectedValue(spec, i));
    // NaN (the poison, never overwritten) compares unequal too.
    if (!(params_[i] == expected)) ++wrong;
  }
  return wrong;
}

absl::StatusOr<double> PsSweepRunner::AllReduceScalar(double value,
                                                      ReduceOp op) {
  double result = 0.0;
  RETURN_IF_ERROR(
      control_->AllReduce(&value, &result, 1, DataType::kFloat64, op));
  return result;
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
