// PsStep: one rank's push and pull of one step, in flight while backward
// still runs. Backward finishes gradients from the end of the flat buffer
// toward its start; the rank reports each finished range with Ready(), and
// every shard's stream sends its range end first (PushHeader.descending,
// in chunks of at most PsClientOptions::chunk_bytes) as soon as the bytes
// at the end of its not-yet-sent part are ready. So the transfer overlaps
// backward: shard K-1's stream starts with the first bucket, not once the
// whole gradient is done. Finish then waits for every shard's reply (the
// parameters of step + 1 written into `params`, the step control of shard
// 0's reply).
//
//   PsStepControl control;
//   control.scalars = {loss_sum, count};
//   control.switch_epoch = newest_epoch;
//   ASSIGN_OR_RETURN(std::unique_ptr<PsStep> ps_step,
//                    ps->StartStep(t, grads, absl::MakeSpan(params),
//                                  std::move(control)));
//   ... backward; for each finished bucket [b, e):
//   ps_step->Ready(b, e);
//   ASSIGN_OR_RETURN(PsStepResult result, ps_step->Finish(deadline));
//   // Remember a new decision; switch at the start of its step.
//   if (result.switch_epoch > acted_epoch) {
//     pending = {result.switch_epoch, result.switch_step};
//   }
//
// Partitions (BytePS's): shards on the same server (consecutive shards
// with one address, PartitionedShardLocations) push one after another, the
// highest first: the next one's gradient goes once the previous one's is
// written, while the previous one already waits for, and receives, its
// parameters. So the server's link takes in one partition while it sends
// out another, and a synchronous step's pull overlaps its push. A rank also
// waits for the parameters of the partition four turns back before it
// pushes the next (a credit, as BytePS schedules): TCP shares a server's
// link unevenly among the ranks, and a partition can only come back once
// the slowest rank pushed it, so a rank running far ahead would only pile
// replies up behind the slowest. Shards on different servers push at once,
// as before. A server's partitions share two threads, however many there
// are: one pushes them in turn, the other reads their replies in the same
// order (a thread per partition cost about 1 ms of CPU per partition and
// step in thread creation and lock traffic, which made fine partitions
// CPU-bound).
//
// Every shard gets the same header (scalars and switch_epoch included);
// the ranks act on shard 0's answer (see proto/ps.proto "Step control").
// Scalars known only after backward (the loss) go to shard 0 alone, in a
// trailer after its gradient: control.late_scalars, then SetScalars.
// Replies keep a decision until a newer one replaces it, and a shard
// created afresh (a ring -> PS switch) knows no earlier decisions: a rank
// ignores epochs it has acted on already.
//
// 16-bit gradients (PsClientOptions::wire_dtype bf16 or fp16): Ready()
// rounds its range into a 16-bit staging copy (round to nearest even;
// fp16 clamps finite values to +-65504) that the streams send, and each
// shard's 16-bit reply lands in a second staging copy and is widened into
// `params` once whole: the caller's buffers stay fp32, the wire carries
// half the bytes, and bytes_sent/bytes_received count what really went.
//
// Errors (Finish): the status of the shard that failed first, prefixed
// "ps shard K at HOST:PORT (rank R, step T)" (ps_client.h lists the codes;
// UNAVAILABLE when a server is down or went away mid-step); the reason
// given to Cancel, prefixed with the step; INVALID_ARGUMENT for a bad
// Ready range; FAILED_PRECONDITION if some elements were never marked
// ready or Finish was called twice;
// DEADLINE_EXCEEDED when `deadline` or the client's timeout passed.
// When one shard fails, the other shards' streams are cancelled at once
// (so Finish returns promptly). After an error `params` is unspecified; a
// shard whose stream failed before the whole gradient arrived took
// nothing, one that had it all may have applied it.
//
// Threading: Ready and Cancel may be called from any thread, Finish from
// one; each unpartitioned shard's stream runs on a thread of its own, each
// partitioned server's on two (above). Lock order: mu_
// only (gRPC's TryCancel is called under it; it never calls back). The PsClient
// that started the step (and so its PsClientCore, ps_client_core.h, which the
// step holds by reference) must outlive it; it takes no other call until the
// step is finished or destroyed. Destroying an unfinished step cancels it and
// waits for its streams (a bounded time).
#ifndef GRADSYNC_SERVER_PS_CLIENT_PS_STEP_H_
#define GRADSYNC_SERVER_PS_CLIENT_PS_STEP_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_client_core.h"

namespace gradsync {

// What a rank's push says besides its gradient (proto/ps.proto, "Step
// control").
struct PsStepControl {
  // Sync mode: summed over the ranks in rank order (e.g. the global loss
  // numerator and sample count). Every rank must send as many.
  std::vector<double> scalars;
  // Sync mode, instead of `scalars`: this many scalars known only once
  // backward is over, given to PsStep::SetScalars. Shard 0's stream sends
  // them after its gradient (PushHeader.trailer_scalars): its range is the
  // start of the flat vector, which backward finishes last, so it waits
  // for them at most the moment between the last Ready and SetScalars.
  size_t late_scalars = 0;
  // The newest switch request (epoch) the rank has heard of; 0: none.
  int64_t switch_epoch = 0;
  // > 0: the shards' optimizer runs this step with this learning rate
  // (PushHeader.learning_rate; rank 0's counts); 0: theirs.
  double learning_rate = 0;
};

// Shard 0's answer to one step, and the step's traffic.
struct PsStepResult {
  std::vector<double> scalar_sums;  // sync mode; else empty
  // The switch decision: at the start of switch_step every rank acts on
  // request switch_epoch. (0, 0): none.
  int64_t switch_epoch = 0;
  int64_t switch_step = 0;
  int64_t version = 0;  // PullHeader.version of shard 0
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  // How long at least one shard stream was busy: moving bytes or awaiting
  // its reply, not waiting for Ready (study/alpha_beta/sync_bandwidth.h
  // BusyTime).
  absl::Duration busy = absl::ZeroDuration();
};

class PsStep {
 public:
  // Starts step `step` on `core`'s shards: the shards' threads start at
  // once. This is PsClient::StartStep's last act, after it checked the
  // arguments and claimed core.step_in_flight (which the step clears when
  // it is joined); call StartStep instead.
  [[nodiscard]] static std::unique_ptr<PsStep> Launch(
      PsClientCore& core, int64_t step, absl::Span<const float> grads,
      absl::Span<float> params, PsStepControl control,
      absl::Time call_deadline);

  PsStep(const PsStep&) = delete;
  PsStep& operator=(const PsStep&) = delete;
  ~PsStep();

  // Gradient elements [begin, end) of the flat vector are final. Any
  // order; each element once; never blocks on the network. A range that
  // is empty, out of range or overlaps an earlier one cancels the step:
  // Finish returns INVALID_ARGUMENT naming it.
  void Ready(size_t begin, size_t end);

  // The step's late scalars (PsStepControl::late_scalars of them). Call
  // once, before Finish; another count, a second call, or a step without
  // late scalars cancels the step (Finish returns INVALID_ARGUMENT or
  // FAILED_PRECONDITION).
  void SetScalars(std::vector<double> scalars);

  // Waits (until `deadline`) for every shard's reply; the parameters are
  // in `params` when it returns OK. Call once, after every Ready (and
  // SetScalars).
  [[nodiscard]] absl::StatusOr<PsStepResult> Finish(absl::Time deadline);

  // Ends the step: the streams are cancelled and Finish returns `reason`
  // (CANCELLED if `reason` is OK) promptly. Thread-safe; the first reason
  // wins.
  void Cancel(const absl::Status& reason);

  int64_t step() const { return step_; }

 private:
  struct ShardCall;

  PsStep(PsClientCore& core, int64_t step, absl::Span<const float> grads,
         absl::Span<float> params, PsStepControl control,
         absl::Time call_deadline);
  // Starts the shards' threads.
  void Start();
  // The bytes of gradient elements [at, at + n) as they go on the wire
  // (16-bit: the staging copy Ready filled), and their element size.
  absl::Span<const char> GradBytes(size_t at, size_t n) const;
  size_t element_bytes() const { return element_bytes_; }
  // Where shard k's reply lands: params_' bytes, or the 16-bit staging.
  absl::Span<char> ReplyBytes(size_t begin, size_t n);
  // After shard k's whole reply: widens the 16-bit staging into params_.
  void WidenReply(size_t begin, size_t n);
  // Ready's work; INVALID_ARGUMENT for a bad range (nothing marked).
  [[nodiscard]] absl::Status MarkReady(size_t begin, size_t end);
  // Shard k's stream: Push, then Pull.
  [[nodiscard]] absl::Status RunShard(size_t k);
  // Shard k's push: connects, starts the stream, sends the header, then
  // (its turn come) the descending chunks as they become ready, the
  // trailer; leaves the stream and the outcome in calls_[k].
  void Push(size_t k);
  // Shard k's reply after Push(k): reads the parameters, finishes the
  // call; the shard's outcome.
  [[nodiscard]] absl::Status Pull(size_t k);
  // Push and Pull over the tensor plane (ps_step_plane.cc), the same
  // protocol on the client's connection instead of a gRPC stream.
  void PushPlane(size_t k);
  [[nodiscard]] absl::Status PullPlane(size_t k);
  // Shard k's PushHeader (its trailer announced if it carries the late
  // scalars).
  ps::PushHeader HeaderFor(size_t k) const;
  // Whether shard k's push ends with the late scalars' trailer.
  bool CarriesTrailer(size_t k) const {
    return k == 0 && control_.late_scalars > 0;
  }
  // A server's partitions [first, last]: the writer pushes them in turn,
  // the highest first, and marks each in pushed_; the reader takes each
  // in the same order once pushed, reads its reply and reports it
  // (ShardDone). Two threads per server however many partitions it has.
  void RunLaneWriter(size_t first, size_t last);
  void RunLaneReader(size_t first, size_t last);
  // Waits until elements below `sent_begin` of shard k are ready (returns
  // the lowest index of the ready run just below it, clipped to the shard),
  // the step is cancelled, or the call's deadline passes.
  [[nodiscard]] absl::StatusOr<size_t> WaitReady(size_t k, size_t sent_begin);
  // Why a waiting stream must stop: the Cancel reason, or CANCELLED when
  // another shard failed first; OK to go on.
  [[nodiscard]] absl::Status StoppedLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits until the partition before shard k on its server (shard k + 1
  // there) has written its whole push and the one four turns back has its
  // reply, the step is cancelled, or the call's deadline passes. At once
  // for a shard with no such partition.
  [[nodiscard]] absl::Status WaitPushTurn(size_t k);
  // Shard k's push is written (or failed): the next partition may go.
  void PushWritten(size_t k);
  // Waits until SetScalars gave the late scalars, the step is cancelled,
  // or the call's deadline passes.
  [[nodiscard]] absl::StatusOr<std::vector<double>> WaitScalars();
  // Shard k's thread ended with `status`.
  void ShardDone(size_t k, absl::Status status);
  // Cancels every stream but `except` (none: calls_.size()).
  void CancelStreams(size_t except);
  // Joins the shards' threads (once) and lets the client start steps.
  void Join();
  // The step's error: the Cancel reason or the first failure, named.
  [[nodiscard]] absl::Status ErrorLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The elements not yet marked ready, for errors: "[0, 10), [20, 30)".
  std::string MissingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  PsClientCore& core_;  // the client's, shared with it
  const int64_t step_;
  const absl::Span<const float> grads_;
  const absl::Span<float> params_;
  const PsStepControl control_;
  const absl::Time call_deadline_;
  const DataType wire_dtype_;
  const size_t element_bytes_;  // 4, or 2 for a 16-bit wire
  // 16-bit wire: the gradient rounded as Ready() marks it (written under
  // mu_ before its range is marked, read by the streams after), and the
  // replies before they are widened into params_. Empty for fp32.
  std::vector<uint16_t> wire_grads_;
  std::vector<uint16_t> wire_params_;
  std::vector<std::unique_ptr<ShardCall>> calls_;
  std::vector<std::thread> lanes_;  // partitioned servers' writers, readers
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> bytes_received_{0};

  mutable absl::Mutex mu_;
  // Ready elements as disjoint, merged intervals: begin -> end.
  std::map<size_t, size_t> ready_ ABSL_GUARDED_BY(mu_);
  size_t ready_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<std::vector<double>> late_scalars_ ABSL_GUARDED_BY(mu_);
  absl::Status cancelled_ ABSL_GUARDED_BY(mu_);
  int failed_shard_ ABSL_GUARDED_BY(mu_) = -1;  // the first to fail
  size_t done_ ABSL_GUARDED_BY(mu_) = 0;        // shard threads finished
  // Per shard: its push is written (partitions go in turn, see the top).
  std::vector<bool> push_written_ ABSL_GUARDED_BY(mu_);
  // Per shard of a lane: Push returned, Pull may begin.
  std::vector<bool> pushed_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool joined_ = false;  // by the thread that calls Finish or ~PsStep
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_CLIENT_PS_STEP_H_
