#include "worker/train/ring_sync.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collectives/half.h"
#include "common/status_macros.h"
#include "study/alpha_beta/sync_bandwidth.h"

namespace gradsync {
namespace {

// How long the destructor waits for collectives left in flight (after
// aborting them, they end at once).
constexpr absl::Duration kDrainTimeout = absl::Seconds(10);

}  // namespace

int64_t RingAllReduceBytes(size_t bytes, int world) {
  if (world <= 1) return 0;
  const auto b = static_cast<long double>(bytes);
  return static_cast<int64_t>(2.0L * (world - 1) / world * b);
}

absl::Status SumOverRanks(Communicator* comm, absl::Span<double> values,
                          absl::Time deadline) {
  if (values.empty()) return absl::OkStatus();
  return comm
      ->AllReduceAsync(values.data(), values.data(), values.size(),
                       DataType::kFloat64, ReduceOp::kSum)
      ->Wait(deadline);
}

absl::StatusOr<std::unique_ptr<RingSync>> RingSync::Create(
    Communicator* comm, absl::Span<float> grads,
    const RingSyncOptions& options) {
  if (comm == nullptr) {
    return absl::InvalidArgumentError("ring sync needs a communicator");
  }
  if (options.wire_type != DataType::kFloat32 &&
      options.wire_type != DataType::kBFloat16 &&
      options.wire_type != DataType::kFloat16) {
    return absl::InvalidArgumentError(
        absl::StrCat("ring sync: gradients travel as float, bfloat16 or "
                     "half, not ",
                     DataTypeName(options.wire_type)));
  }
  const RingSyncOptions::WireStaging& staging = options.wire_staging;
  const int staging_parts = (staging.buffer != nullptr) +
                            static_cast<bool>(staging.narrow) +
                            static_cast<bool>(staging.widen);
  if (staging_parts != 0 && staging_parts != 3) {
    return absl::InvalidArgumentError(
        "ring sync: wire_staging needs its buffer, narrow and widen together");
  }
  ASSIGN_OR_RETURN(Bucketer bucketer,
                   Bucketer::Create(grads.size(), options.bucket_bytes));
  return std::unique_ptr<RingSync>(
      new RingSync(comm, grads, std::move(bucketer), options));
}

RingSync::RingSync(Communicator* comm, absl::Span<float> grads,
                   Bucketer bucketer, RingSyncOptions options)
    : comm_(comm),
      scalar_comm_(options.scalar_comm != nullptr ? options.scalar_comm : comm),
      before_launch_(std::move(options.before_launch)),
      grads_(grads),
      wire_type_(options.wire_type),
      host_wire_(options.wire_type == DataType::kFloat32 ||
                         options.wire_staging.buffer != nullptr
                     ? 0
                     : grads.size()),
      wire_(options.wire_staging.buffer != nullptr ? options.wire_staging.buffer
                                                   : host_wire_.data()),
      wire_staging_(std::move(options.wire_staging)),
      bucketer_(std::move(bucketer)) {}

absl::Status RingSync::Narrow(const float* from, uint16_t* to, size_t n) {
  if (wire_staging_.narrow) return wire_staging_.narrow(from, to, n);
  if (wire_type_ == DataType::kBFloat16) {
    FloatsToBFloat16(from, to, n);
  } else {
    FloatsToFloat16(from, to, n);
  }
  return absl::OkStatus();
}

absl::Status RingSync::Widen(const uint16_t* from, float* to, size_t n) {
  if (wire_staging_.widen) return wire_staging_.widen(from, to, n);
  if (wire_type_ == DataType::kBFloat16) {
    BFloat16ToFloats(from, to, n);
  } else {
    Float16ToFloats(from, to, n);
  }
  return absl::OkStatus();
}

RingSync::~RingSync() {
  if (in_flight_.empty()) return;
  comm_->Abort(absl::CancelledError(
      absl::StrCat("ring sync destroyed during step ", step_)));
  WaitAll(absl::Now() + kDrainTimeout).IgnoreError();
}

absl::Status RingSync::BeginStep(int64_t step, int64_t switch_epoch) {
  if (in_step_) {
    return absl::FailedPreconditionError(absl::StrCat("ring sync: step ", step,
                                                      " begun before step ",
                                                      step_, " was finished"));
  }
  step_ = step;
  switch_epoch_ = switch_epoch;
  in_step_ = true;
  error_ = absl::OkStatus();
  bucketer_.Reset();
  return absl::OkStatus();
}

void RingSync::OnGradReady(size_t begin, size_t end) {
  if (!error_.ok()) return;
  if (!in_step_) {
    error_ = absl::FailedPreconditionError(
        absl::StrCat("gradient range [", begin, ", ", end,
                     ") reported outside a step (BeginStep not called)"));
    return;
  }
  absl::Status launch_error;
  const absl::Status marked =
      bucketer_.MarkReady(begin, end, [&](const Bucket& bucket) {
        if (launch_error.ok()) launch_error = Launch(bucket);
      });
  error_ = marked.ok() ? launch_error : marked;
}

absl::Status RingSync::Launch(const Bucket& bucket) {
  void* data = grads_.data() + bucket.begin;
  if (wire_type_ != DataType::kFloat32) {
    uint16_t* wire = wire_ + bucket.begin;
    absl::Status narrowed =
        Narrow(grads_.data() + bucket.begin, wire, bucket.size());
    if (!narrowed.ok()) {
      return Annotate(
          narrowed,
          absl::StrCat("step ", step_, ": rounding bucket ", bucket.index,
                       " (elements [", bucket.begin, ", ", bucket.end, ")) to ",
                       DataTypeName(wire_type_)));
    }
    data = wire;
  }
  if (before_launch_) {
    absl::Status ordered = before_launch_();
    if (!ordered.ok()) {
      return Annotate(ordered,
                      absl::StrCat("step ", step_, ": ordering bucket ",
                                   bucket.index, " (elements [", bucket.begin,
                                   ", ", bucket.end, ")) after backward"));
    }
  }
  in_flight_.push_back(
      {bucket, comm_->AllReduceAsync(data, data, bucket.size(), wire_type_,
                                     ReduceOp::kSum)});
  return absl::OkStatus();
}

absl::Status RingSync::WaitAll(absl::Time deadline, absl::Duration* busy) {
  absl::Status first;
  const size_t total = bucketer_.buckets().size();
  bool timed = busy != nullptr;
  absl::Duration sum = absl::ZeroDuration();
  for (InFlight& f : in_flight_) {
    absl::Status s = f.work->Wait(deadline);
    if (s.ok() && timed) {
      // The buckets run one after another: their durations add up.
      absl::StatusOr<absl::Duration> elapsed = f.work->Elapsed();
      timed = elapsed.ok();
      if (timed) sum += *elapsed;
    }
    if (s.ok() && wire_type_ != DataType::kFloat32) {
      // Every rank widens the same 16-bit sums: the ranks stay bitwise
      // equal.
      s = Widen(wire_ + f.bucket.begin, grads_.data() + f.bucket.begin,
                f.bucket.size());
    }
    if (!s.ok() && first.ok()) {
      first = Annotate(
          s, absl::StrCat("step ", step_, ": allreduce of bucket ",
                          f.bucket.index, " of ", total, " (elements [",
                          f.bucket.begin, ", ", f.bucket.end, "))"));
    }
  }
  in_flight_.clear();
  if (busy != nullptr) *busy = timed ? sum : absl::ZeroDuration();
  return first;
}

absl::StatusOr<SyncStats> RingSync::FinishStep(absl::Span<double> scalars,
                                               absl::Time deadline) {
  const absl::Time start = absl::Now();
  if (!in_step_) {
    return absl::FailedPreconditionError(
        "ring sync: FinishStep without BeginStep");
  }
  in_step_ = false;
  SyncStats stats;
  if (error_.ok() && !bucketer_.AllLaunched()) {
    const Bucket& stuck = bucketer_.buckets()[bucketer_.num_launched()];
    error_ = absl::InternalError(
        absl::StrCat("step ", step_,
                     ": backward did not report every gradient element; "
                     "bucket ",
                     stuck.index, " (elements [", stuck.begin, ", ", stuck.end,
                     ")) never became complete"));
  }
  if (!error_.ok()) {
    // The peers wait for buckets this rank will never send: fail them now.
    comm_->Abort(error_);
    WaitAll(deadline).IgnoreError();
    return error_;
  }
  // Queued behind the buckets (collectives run in issue order), so it adds
  // one small message, not a round trip, to the exposed time. The caller's
  // scalars, then one switch-epoch slot per rank (exact: integers < 2^53
  // plus zeros).
  const int world = scalar_comm_->size();
  std::vector<double> control(scalars.size() + static_cast<size_t>(world));
  std::copy(scalars.begin(), scalars.end(), control.begin());
  control[scalars.size() + static_cast<size_t>(scalar_comm_->rank())] =
      static_cast<double>(switch_epoch_);
  std::unique_ptr<Work> scalar_work = scalar_comm_->AllReduceAsync(
      control.data(), control.data(), control.size(), DataType::kFloat64,
      ReduceOp::kSum);
  const size_t element_bytes = DataTypeSize(wire_type_);
  for (const InFlight& f : in_flight_) {
    stats.bytes_sent +=
        RingAllReduceBytes(f.bucket.size() * element_bytes, world);
    stats.payload_bytes +=
        static_cast<int64_t>(f.bucket.size() * element_bytes);
    ++stats.operations;
  }
  stats.bus_factor = AllReduceBusFactor(world);
  absl::Status status = WaitAll(deadline, &stats.busy);
  absl::Status s = scalar_work->Wait(deadline);
  if (!s.ok() && status.ok()) {
    status = Annotate(s, absl::StrCat("step ", step_,
                                      ": allreduce of the step's loss and "
                                      "switch requests"));
  }
  stats.bytes_sent +=
      RingAllReduceBytes(control.size() * sizeof(double), world);
  ++stats.operations;
  RETURN_IF_ERROR(status);
  std::copy(control.begin(), control.begin() + scalars.size(), scalars.begin());
  for (size_t i = scalars.size(); i < control.size(); ++i) {
    const auto epoch = static_cast<int64_t>(control[i]);
    if (epoch > stats.switch_epoch) stats.switch_epoch = epoch;
  }
  if (stats.switch_epoch > 0) stats.switch_step = step_ + 1;
  stats.bytes_received = stats.bytes_sent;
  stats.exposed = absl::Now() - start;
  return stats;
}

absl::Status RingSync::AllReduceScalars(absl::Span<double> values,
                                        absl::Time deadline) {
  if (in_step_) {
    return absl::FailedPreconditionError(
        "ring sync: AllReduceScalars during a step");
  }
  return SumOverRanks(scalar_comm_, values, deadline);
}

void RingSync::Abort(const absl::Status& reason) { comm_->Abort(reason); }

}  // namespace gradsync
