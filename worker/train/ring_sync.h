// RingSync: the peer all-reduce strategy (GradientSync over a
// Communicator, the TCP ring on CPU hosts or NCCL on GPUs). As backward
// reports gradient ranges, complete buckets (bucketer.h) are all-reduced
// asynchronously in place, so communication overlaps the rest of backward,
// as in PyTorch DDP; FinishStep waits for them, and every rank then runs
// the same optimizer step on the same summed gradient.
//
// The reduction is a SUM, not an average. Each rank computes its share's
// gradient with loss_normalizer = B, the GLOBAL batch size (mlp.h):
// g_r = (1/B) * sum over its examples of dloss_i. The sum over ranks is
// then exactly the gradient of the global-batch mean loss, as a 1-rank run
// with batch B computes it, whatever the share sizes (B need not divide by
// N, and some ranks may hold no example). An average of per-share means
// would weight unequal shares wrongly, and kAvg's final division would add
// a rounding step a 1-rank run does not have.
//
// Switch agreement: the step's scalar all-reduce carries one slot per
// rank, where rank r puts the newest switch epoch it heard of; the sum
// hands every rank every rank's epoch, so all take the same maximum and
// act on it at the next step (switch_step = step + 1).
//
// Bytes: an all-reduce of S bytes over N ranks sends and receives
// 2(N-1)/N * S bytes per rank on the ring (the bandwidth-optimal volume;
// halving-doubling moves the same for N a power of two); the reported bytes
// use this formula (RingAllReduceBytes).
//
// Errors: as GradientSync; a bucket whose collective fails is named with
// its index, its element range and the step. If backward does not report
// every element (the model broke gradient_ready.h), FinishStep aborts the
// communicator, so that the peers, which wait for the missing bucket, fail
// at once too, and returns INTERNAL.
// Threading: as GradientSync. The communicator must outlive the RingSync
// and be used by nothing else while a step is in flight.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<RingSync> sync,
//                    RingSync::Create(comm, mlp.grads(), options));
#ifndef GRADSYNC_WORKER_TRAIN_RING_SYNC_H_
#define GRADSYNC_WORKER_TRAIN_RING_SYNC_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "collectives/communicator.h"
#include "worker/train/bucketer.h"
#include "worker/train/sync_strategy.h"

namespace gradsync {

struct RingSyncOptions {
  // Bucket cap in bytes (>= 4).
  size_t bucket_bytes = kDefaultAllReduceBucketBytes;
  // Where the step's scalars (loss, switch requests) and AllReduceScalars
  // are summed; null: the gradient communicator. NCCL reduces device
  // memory only, so the device ring sums its host scalars over the job's
  // TCP communicator (same ranks, same order).
  Communicator* scalar_comm = nullptr;
  // Called just before each bucket's all-reduce is issued; an error fails
  // the step instead. The NCCL path orders the collective after the
  // backward kernels that wrote the bucket (NcclWaitEvent on the model's
  // ready event), without a host round trip.
  std::function<absl::Status()> before_launch;
  // Gradients on the wire: kFloat32, or kBFloat16 / kFloat16 (JobSpec
  // grad_dtype). A 16-bit bucket is rounded into a staging buffer (before
  // before_launch), all-reduced in 16 bits (the same bits on every rank)
  // and widened back into the gradient once its all-reduce completed.
  DataType wire_type = DataType::kFloat32;
  // Where a 16-bit bucket is staged and how it converts. All unset (the
  // host rings): a host buffer and half.h's vectorized kernels. The NCCL
  // path's gradients are in device memory: it passes a device buffer of
  // grads.size() elements and CUDA kernels (cuda_device_ring.cc). An
  // error from either fails the step, naming the bucket.
  struct WireStaging {
    uint16_t* buffer = nullptr;
    std::function<absl::Status(const float* from, uint16_t* to, size_t n)>
        narrow;
    std::function<absl::Status(const uint16_t* from, float* to, size_t n)>
        widen;
  };
  WireStaging wire_staging;
};

// Bytes one rank sends (and receives) to all-reduce `bytes` over `world`
// ranks: 2(world-1)/world * bytes, 0 for one rank.
int64_t RingAllReduceBytes(size_t bytes, int world);

// Sums `values` over the ranks of `comm` in place (a small fp64
// all-reduce; nothing to do for none), by `deadline`. Strategies use it
// for the statistics they sum outside a step.
[[nodiscard]] absl::Status SumOverRanks(Communicator* comm,
                                        absl::Span<double> values,
                                        absl::Time deadline);

class RingSync final : public GradientSync {
 public:
  // INVALID_ARGUMENT for a null communicator, a bad bucket size, a wire
  // type other than fp32, bf16 and fp16, or a wire_staging set in part.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<RingSync>> Create(
      Communicator* comm, absl::Span<float> grads,
      const RingSyncOptions& options);

  ~RingSync() override;

  absl::string_view name() const override { return "ring"; }
  [[nodiscard]] absl::Status BeginStep(int64_t step,
                                       int64_t switch_epoch) override;
  void OnGradReady(size_t begin, size_t end) override;
  [[nodiscard]] absl::StatusOr<SyncStats> FinishStep(
      absl::Span<double> scalars, absl::Time deadline) override;
  bool optimizer_runs_locally() const override { return true; }
  [[nodiscard]] absl::Status AllReduceScalars(absl::Span<double> values,
                                              absl::Time deadline) override;
  void Abort(const absl::Status& reason) override;

  const Bucketer& bucketer() const { return bucketer_; }

 private:
  RingSync(Communicator* comm, absl::Span<float> grads, Bucketer bucketer,
           RingSyncOptions options);

  // Starts the all-reduce of `bucket` (rounding it to the wire type, then
  // before_launch).
  [[nodiscard]] absl::Status Launch(const Bucket& bucket);
  // Rounds n gradients into the wire buffer / widens them back, with
  // wire_staging_'s functions or half.h's.
  [[nodiscard]] absl::Status Narrow(const float* from, uint16_t* to, size_t n);
  [[nodiscard]] absl::Status Widen(const uint16_t* from, float* to, size_t n);
  // Waits for every launched collective (even after an error: their
  // buffers must not be reused while they run); returns the first error.
  // `busy`, if given, gets the sum of their durations (Work::Elapsed; zero
  // if one could not be read, e.g. a failed CUDA event query).
  [[nodiscard]] absl::Status WaitAll(absl::Time deadline,
                                     absl::Duration* busy = nullptr);

  struct InFlight {
    Bucket bucket;
    std::unique_ptr<Work> work;
  };

  Communicator* const comm_;
  Communicator* const scalar_comm_;
  const std::function<absl::Status()> before_launch_;
  const absl::Span<float> grads_;
  const DataType wire_type_;
  // The 16-bit copy of grads_ that travels: wire_staging_.buffer, or the
  // host's own (empty for kFloat32).
  std::vector<uint16_t> host_wire_;
  uint16_t* wire_ = nullptr;
  const RingSyncOptions::WireStaging wire_staging_;
  Bucketer bucketer_;
  int64_t step_ = -1;
  int64_t switch_epoch_ = 0;  // heard by this rank, for the step's scalars
  bool in_step_ = false;
  std::vector<InFlight> in_flight_;
  // First error of OnGradReady in the current step.
  absl::Status error_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_RING_SYNC_H_
