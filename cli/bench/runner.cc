#include "cli/bench/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/bench/verifiable.h"
#include "common/status_macros.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

std::byte* At(void* base, size_t offset) {
  return static_cast<std::byte*>(base) + offset;
}

}  // namespace

absl::StatusOr<double> TimeCalls(Communicator* comm, int warmup, int iters,
                                 absl::FunctionRef<absl::Status()> call) {
  for (int i = 0; i < warmup; ++i) RETURN_IF_ERROR(call());
  RETURN_IF_ERROR(comm->Barrier());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) RETURN_IF_ERROR(call());
  const std::chrono::duration<double> elapsed =
      std::chrono::steady_clock::now() - start;
  return elapsed.count() / iters;
}

SweepRunner::SweepRunner(Communicator* comm, const SweepConfig& config)
    : comm_(comm), config_(config), element_bytes_(DataTypeSize(config.type)) {}

absl::StatusOr<std::unique_ptr<SweepRunner>> SweepRunner::Create(
    Communicator* comm, BenchMemory* memory, const SweepConfig& config) {
  std::unique_ptr<SweepRunner> runner(new SweepRunner(comm, config));
  const CollectiveCounts max = CountsForSize(
      config.collective, config.max_bytes, config.type, comm->size());
  const size_t element = runner->element_bytes_;
  // In-place calls use the receive buffer for both sides, so it must also
  // hold a whole reduce-scatter input.
  ASSIGN_OR_RETURN(runner->send_, memory->Allocate(max.send_count * element));
  ASSIGN_OR_RETURN(
      runner->recv_,
      memory->Allocate(std::max(max.send_count, max.recv_count) * element));
  ASSIGN_OR_RETURN(runner->scalar_, memory->Allocate(sizeof(double)));
  return runner;
}

absl::StatusOr<SizeResult> SweepRunner::RunSize(size_t bytes) {
  if (bytes > config_.max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "size ", bytes, " is above the runner's maximum ", config_.max_bytes));
  }
  const CollectiveCounts counts =
      CountsForSize(config_.collective, bytes, config_.type, comm_->size());
  SizeResult result;
  result.size_bytes = counts.size_bytes;
  result.count = counts.param_count;
  ASSIGN_OR_RETURN(result.out_of_place, RunPass(counts, /*in_place=*/false));
  ASSIGN_OR_RETURN(result.in_place, RunPass(counts, /*in_place=*/true));
  return result;
}

absl::Status SweepRunner::FillInputRegion(BenchBuffer* in, size_t in_offset,
                                          const CollectiveCounts& counts) {
  FillInput(config_.type, comm_->rank(), At(in->host(), in_offset),
            counts.send_count);
  return in->HostToData(in_offset, counts.send_count * element_bytes_);
}

absl::StatusOr<PassResult> SweepRunner::RunPass(const CollectiveCounts& counts,
                                                bool in_place) {
  BenchBuffer* in = send_.get();
  BenchBuffer* out = recv_.get();
  size_t in_offset = 0;
  size_t out_offset = 0;
  if (in_place) {
    const InPlaceOffsets offsets =
        InPlaceOffsetsFor(config_.collective, counts, comm_->rank());
    in = recv_.get();
    in_offset = offsets.send * element_bytes_;
    out_offset = offsets.recv * element_bytes_;
  }
  const void* send = At(in->data(), in_offset);
  void* recv = At(out->data(), out_offset);
  auto call = [&]() {
    return RunCollective(comm_, config_.collective, send, recv, counts,
                         config_.type, config_.op, config_.root);
  };

  RETURN_IF_ERROR(FillInputRegion(in, in_offset, counts));
  ASSIGN_OR_RETURN(
      const double average,
      TimeCalls(comm_, in_place ? 0 : config_.warmup, config_.iters, call));
  ASSIGN_OR_RETURN(const double seconds,
                   AllReduceScalar(average, ReduceOp::kMax));

  PassResult pass;
  pass.time_us = seconds * 1e6;
  pass.algbw = AlgorithmBandwidth(counts.size_bytes, seconds);
  pass.busbw =
      pass.algbw * BusBandwidthFactor(config_.collective, comm_->size());
  if (config_.check) {
    ASSIGN_OR_RETURN(
        const int64_t wrong,
        CheckedCall(in, in_offset, out, out_offset, counts, in_place));
    ASSIGN_OR_RETURN(
        const double total,
        AllReduceScalar(static_cast<double>(wrong), ReduceOp::kSum));
    pass.wrong = static_cast<int64_t>(std::llround(total));
  }
  return pass;
}

absl::StatusOr<int64_t> SweepRunner::CheckedCall(
    BenchBuffer* in, size_t in_offset, BenchBuffer* out, size_t out_offset,
    const CollectiveCounts& counts, bool in_place) {
  const size_t recv_bytes = counts.recv_count * element_bytes_;
  // Poison the output first: in place, the input is then written over the
  // part of it that it shares, and an allgather block nobody wrote stays
  // poisoned.
  FillPoison(config_.type, At(out->host(), out_offset), counts.recv_count);
  RETURN_IF_ERROR(out->HostToData(out_offset, recv_bytes));
  if (in_place) {
    // The timed in-place calls overwrote the input.
    RETURN_IF_ERROR(FillInputRegion(in, in_offset, counts));
  }
  RETURN_IF_ERROR(RunCollective(comm_, config_.collective,
                                At(in->data(), in_offset),
                                At(out->data(), out_offset), counts,
                                config_.type, config_.op, config_.root));
  RETURN_IF_ERROR(out->DataToHost(out_offset, recv_bytes));

  VerifySpec spec;
  spec.collective = config_.collective;
  spec.type = config_.type;
  spec.op = config_.op;
  spec.rank = comm_->rank();
  spec.ranks = comm_->size();
  spec.root = config_.root;
  spec.param_count = counts.param_count;
  spec.tolerance = config_.tolerance;
  return CountWrong(spec, At(out->host(), out_offset), counts.recv_count);
}

absl::StatusOr<double> SweepRunner::AllReduceScalar(double value, ReduceOp op) {
  std::memcpy(scalar_->host(), &value, sizeof(value));
  RETURN_IF_ERROR(scalar_->HostToData(0, sizeof(value)));
  RETURN_IF_ERROR(comm_->AllReduce(scalar_->data(), scalar_->data(), 1,
                                   DataType::kFloat64, op));
  RETURN_IF_ERROR(scalar_->DataToHost(0, sizeof(value)));
  double result = 0.0;
  std::memcpy(&result, scalar_->host(), sizeof(result));
  return result;
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
