// PsShard: one parameter-server shard of a job, with no gRPC inside. It owns
// the elements [begin, end) of the job's flat fp32 parameter vector, the
// optimizer over that slice (common/optimizer.h, the code the ranks run in
// ring mode) and one gradient staging buffer per rank.
//
// A rank's step on the shard is Push then Pull:
//   PushOptions options;             // step control, chunk order
//   options.scalars = {loss_sum};
//   options.switch_epoch = newest_switch_request;
//   ASSIGN_OR_RETURN(PsShard::Push push,
//                    shard->BeginPush(rank, t, deadline, options));
//   ... fill push.unfilled() in order (recv() into it or Append) ...
//   RETURN_IF_ERROR(shard->Commit(std::move(push), deadline));
//   ASSIGN_OR_RETURN(ShardViewRef view, shard->Pull(rank, t + 1, deadline));
//   ... send view->params, view->scalar_sums, view->decision; drop the
//   view when the bytes are gone ...
//
// Chunk order: a push is filled from the start of the shard's range toward
// its end (the default), or, with PushOptions::descending, from the end
// toward the start (the order backward finishes gradients). Either way the
// gradient is summed element by element, so the result is bitwise the same.
//
// Update modes:
//   kSync   step t is applied once all N ranks committed their gradient for
//           t: the gradients are summed in rank order (0, 1, ..., N-1, so
//           the result is bitwise the same whatever order they arrived in),
//           divided by N (unless config.sum_gradients) and handed to the
//           optimizer, a block at a time (the mean is never written out);
//           Pull(t + 1) then returns. The committing thread of the last
//           rank does the work, on config.compute's threads too.
//   kAsync  each committed gradient is applied at once, as is (each rank's
//           gradient is already the mean over its local batch); Pull
//           returns the latest parameters without waiting.
//   kStaleSync  as kAsync, but BeginPush of step t waits until every rank
//           has pushed step t - staleness - 1 (stale synchronous parallel:
//           no rank runs more than `staleness` steps ahead of the slowest).
//
// Step control (proto/ps.proto, "Step control"): each push carries a few
// scalars and the newest switch epoch its rank knows of; each view carries
// what the ranks agree on:
//   scalar_sums  kSync: the sums, in rank order, of every rank's scalars
//                of the step that produced the parameters (every rank must
//                send the same number); else empty.
//   decision     (epoch E, step S) at whose start every rank acts on
//                switch request E, or (0, 0). kSync: decided when step t
//                is applied, E = the largest epoch of t's pushes, S = t + 1
//                (only if E is newer than the decided epoch). kAsync,
//                kStaleSync: decided by a commit that reports a newer
//                epoch while no decision is pending, S = (largest step
//                pushed so far, pushes in flight included) + 2; pending
//                until every rank has committed S - 1; newer epochs
//                reported meanwhile are decided (same rule) once it is
//                not. The pull after a commit carries the decision as of
//                that commit, so every rank sees (E, S) in its reply to
//                step S - 1 at the latest, and all see the same one.
//
// Shard states (ImportState seeds; Release ends):
//
//   kAwaitingSeed --ImportState--> kServing --Release--> kReleased
//         \______________________Release_______________________/
//
// Views: Pull, AcquireState hand out ShardViewRef, shared read access to the
// parameters (and optimizer state) that lets a transport send them without
// a copy. The optimizer waits until every view is dropped before it changes
// them (views are short: the time to send one shard's bytes).
//
// Errors (no shard state changes when one is returned):
//   PERMISSION_DENIED    rank outside [0, num_workers)
//   ALREADY_EXISTS       the rank already pushed this step, or is pushing it
//   FAILED_PRECONDITION  a step the shard is not at (sync: not the current
//                        step; async: not the rank's next step); the shard
//                        awaits its seed; parameters of a step that was
//                        already replaced; a state change in mid-step
//   INVALID_ARGUMENT     more bytes than the shard's gradient, a commit of
//                        an incomplete gradient, a snapshot of the wrong
//                        size or optimizer kind, a rank sending another
//                        number of step scalars than the others (kSync)
//   DEADLINE_EXCEEDED    a wait ran out; the message names the ranks that
//                        did not push (sync) or the slow rank (SSP)
//   ABORTED              the shard was released
//
// Lock order: mu_ only. Threading: thread-safe; a Push belongs to the thread
// that filled it. Memory: params, optimizer state (0-2 buffers) and, per
// rank, a staging buffer of the shard's size (its pages are only touched
// when a transport receives into it) or the transport's buffers that an
// AppendExternal push holds until its step is applied.
#ifndef GRADSYNC_SERVER_PS_PS_SHARD_H_
#define GRADSYNC_SERVER_PS_PS_SHARD_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/compute_pool.h"
#include "common/model_init/parameter_state.h"
#include "common/optimizer.h"
#include "server/ps/gradient_sum.h"

namespace gradsync {

enum class UpdateMode : uint8_t {
  kSync = 0,
  kAsync = 1,
  kStaleSync = 2,
};

// "sync", "async", "ssp".
const char* UpdateModeName(UpdateMode mode);

struct PsShardConfig {
  std::string job_id;
  int shard = 0;
  size_t begin = 0;  // elements [begin, end) of the flat vector
  size_t end = 0;
  int num_workers = 1;
  OptimizerConfig optimizer;
  UpdateMode mode = UpdateMode::kSync;
  int staleness = 0;            // kStaleSync: the bound s >= 0
  int64_t first_step = 0;       // the step of the first push (>= 0)
  size_t history_limit = 1024;  // PushRecords kept
  // Longest any call waits on this shard; the caller's deadline also
  // applies (the earlier one wins).
  absl::Duration max_wait = absl::Minutes(5);
  // kSync: apply the plain sum of the ranks' gradients instead of their
  // mean (the ranks pre-scaled them, as on the ring).
  bool sum_gradients = false;
  // Threads that share a synchronous step's sum and optimizer update with
  // the thread that applies it (shared by the shards of a server); null:
  // that thread alone.
  // Not part of the shard's spec: the server sets it.
  std::shared_ptr<ComputePool> compute;
};

// OK, or INVALID_ARGUMENT naming the first bad field.
[[nodiscard]] absl::Status ValidatePsShardConfig(const PsShardConfig& config);

// One gradient the shard took, in the order it took them.
struct PushRecord {
  int rank = 0;
  int64_t step = 0;
  // The smallest next step over all ranks when the push was accepted: the
  // rank was step - slowest_step steps ahead of the slowest one.
  int64_t slowest_step = 0;
};

struct PsShardStats {
  int64_t version = 0;
  uint64_t bytes_in = 0;   // gradient bytes received (failed pushes too)
  uint64_t bytes_out = 0;  // parameter and state bytes handed out
  uint64_t pushes = 0;     // gradients committed
  uint64_t pulls = 0;      // parameter views handed out
  uint64_t updates = 0;    // optimizer steps
  absl::Duration wait_last_worker;       // sync: first commit -> last
  absl::Duration last_wait_last_worker;  // of the last applied step
  // Applying updates: sync, the rank-order mean of the gradients and the
  // optimizer's update, fused block by block; async, the update.
  absl::Duration apply_time;
  absl::Duration staleness_wait;  // SSP pushes held back
  int queue_depth = 0;            // committed, not applied yet
  int max_queue_depth = 0;
  std::vector<int64_t> rank_steps;  // each rank's next step
};

// A switch decision: at the start of step `step` every rank acts on the
// switch request numbered `epoch`. (0, 0): none yet.
struct SwitchDecision {
  int64_t epoch = 0;
  int64_t step = 0;
  bool operator==(const SwitchDecision& o) const {
    return epoch == o.epoch && step == o.step;
  }
  bool operator!=(const SwitchDecision& o) const { return !(*this == o); }
};

// What a push says besides its gradient.
struct PushOptions {
  // The chunks come from the end of the range toward its start (see
  // "Chunk order" above).
  bool descending = false;
  // Step control (see above).
  std::vector<double> scalars;
  int64_t switch_epoch = 0;
};

// Read access to the shard's tensors; see "Views" above.
struct ShardView {
  int64_t version = 0;
  absl::Span<const float> params;
  // Pull only: step control (see above).
  std::vector<double> scalar_sums;
  SwitchDecision decision;
  // AcquireState only: the optimizer's state buffers and step count.
  OptimizerKind optimizer_kind = OptimizerKind::kSgd;
  uint64_t optimizer_step = 0;
  std::vector<absl::Span<const float>> state;
};
using ShardViewRef = std::shared_ptr<const ShardView>;

class PsShard : public std::enable_shared_from_this<PsShard> {
 public:
  // A shard serving `params` (end - begin floats) from config.first_step.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<PsShard>> Create(
      const PsShardConfig& config, std::vector<float> params);
  // A shard that waits for ImportState before it takes pushes.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<PsShard>>
  CreateAwaitingSeed(const PsShardConfig& config);

  PsShard(const PsShard&) = delete;
  PsShard& operator=(const PsShard&) = delete;
  ~PsShard();

  // One rank's gradient for one step, being received. Move-only; dropping
  // it uncommitted abandons the push (the rank may push that step again).
  class Push {
   public:
    Push(Push&& other) noexcept;
    Push& operator=(Push&& other) noexcept;
    Push(const Push&) = delete;
    Push& operator=(const Push&) = delete;
    ~Push();

    int rank() const { return rank_; }
    int64_t step() const { return step_; }
    bool descending() const { return options_.descending; }
    size_t size_bytes() const { return size_bytes_; }
    size_t filled_bytes() const { return filled_; }
    // The bytes still to receive (receive straight into them): ascending,
    // the gradient's bytes [filled, size); descending, [0, size - filled).
    absl::Span<char> unfilled() {
      return absl::MakeSpan(descending() ? data_ : data_ + filled_,
                            size_bytes_ - filled_);
    }
    // Marks `n` bytes of unfilled() as received: its first `n` bytes
    // (ascending) or its last `n` (descending). INVALID_ARGUMENT if n
    // exceeds what is left.
    [[nodiscard]] absl::Status MarkFilled(size_t n);
    // Copies `bytes` into the next unfilled bytes (MarkFilled's rules).
    [[nodiscard]] absl::Status Append(absl::Span<const char> bytes);
    // Takes the next `bytes` where they are, without a copy: the shard
    // reads them when it applies the step and holds `keep_alive` (which
    // must keep them valid) until then. For transports that receive into
    // buffers of their own (gRPC). MarkFilled's rules: in a descending
    // push each call takes the bytes that end where the previous call's
    // began, so a chunk in several pieces is taken last piece first.
    [[nodiscard]] absl::Status AppendExternal(
        absl::Span<const char> bytes, std::shared_ptr<const void> keep_alive);
    // The step scalars, when they come after the gradient (a trailer):
    // INVALID_ARGUMENT unless there are as many as BeginPush was given.
    [[nodiscard]] absl::Status SetScalars(std::vector<double> scalars);

   private:
    friend class PsShard;
    Push(std::shared_ptr<PsShard> shard, int rank, int64_t step, char* data,
         size_t size_bytes, PushOptions options);
    // Records bytes [at, at + n) of the gradient as lying at `bytes`.
    void AddSegment(const char* bytes, size_t n);

    std::shared_ptr<PsShard> shard_;  // null once committed or moved from
    int rank_ = 0;
    int64_t step_ = 0;
    PushOptions options_;
    char* data_ = nullptr;  // the rank's staging buffer
    size_t size_bytes_ = 0;
    size_t filled_ = 0;
    // Where the gradient's bytes are, in data_ or external: in order
    // (ascending), or in reverse order (descending; Commit reverses it).
    GradientSegments segments_;
    std::vector<std::shared_ptr<const void>> holds_;
  };

  // Starts rank `rank`'s push of step `step`. kStaleSync waits (until
  // `deadline` or config.max_wait) while the rank is more than `staleness`
  // steps ahead of the slowest rank. kSync: INVALID_ARGUMENT if
  // options.scalars has another length than the scalars of the ranks that
  // committed the step already.
  [[nodiscard]] absl::StatusOr<Push> BeginPush(
      int rank, int64_t step, absl::Time deadline,
      PushOptions options = PushOptions());

  // Takes a completely filled push. kSync: the last rank's commit of a
  // step sums, averages and applies it; kAsync/kStaleSync: applies this
  // gradient. Waits for outstanding views (until `deadline`); on error the
  // push is abandoned and nothing changes (INVALID_ARGUMENT for scalars as
  // in BeginPush).
  [[nodiscard]] absl::Status Commit(Push push, absl::Time deadline);

  // The parameters for step `step` (sync: waits until step - 1 is applied;
  // FAILED_PRECONDITION if they were already replaced by a later step).
  // kAsync/kStaleSync: the latest parameters, at once. DEADLINE_EXCEEDED
  // names the ranks that have not pushed step - 1. The view carries the
  // step control (see above).
  [[nodiscard]] absl::StatusOr<ShardViewRef> Pull(int rank, int64_t step,
                                                  absl::Time deadline);

  // Parameters plus optimizer state, for a switch to ring mode. kSync:
  // FAILED_PRECONDITION while some ranks pushed the current step but
  // others did not (switches happen at step boundaries), or if `step` > 0
  // and the shard is not at `step`. kAsync/kStaleSync with `step` > 0:
  // first waits (until `deadline`) until every rank has committed every
  // step before `step` and no push is in flight (DEADLINE_EXCEEDED names
  // the ranks behind); FAILED_PRECONDITION if a rank pushed `step` or
  // later already. The view's version is then `step`.
  [[nodiscard]] absl::StatusOr<ShardViewRef> AcquireState(absl::Time deadline,
                                                          int64_t step = 0);
  // A copy of what AcquireState shows.
  [[nodiscard]] absl::StatusOr<ParameterState> ExportState(absl::Time deadline,
                                                           int64_t step = 0);
  // Replaces parameters, optimizer state and step (a switch to PS mode, or
  // the seed of a shard created awaiting it); every rank's next step
  // becomes state.step. FAILED_PRECONDITION while pushes are in progress
  // or committed; INVALID_ARGUMENT for sizes or kind that do not match.
  [[nodiscard]] absl::Status ImportState(ParameterState state,
                                         absl::Time deadline);

  // Ends the shard: waiting calls return ABORTED, later calls too.
  void Release();

  const PsShardConfig& config() const { return config_; }
  size_t size() const { return config_.end - config_.begin; }
  PsShardStats Stats() const;
  // The current switch decision (see "Step control").
  SwitchDecision decision() const;
  // The newest config.history_limit PushRecords, oldest first.
  std::vector<PushRecord> History() const;

 private:
  enum class State { kAwaitingSeed, kServing, kReleased };

  struct RankSlot {
    int64_t next_step = 0;         // the step this rank pushes next
    bool pushing = false;          // a Push owns `staging`
    bool committed = false;        // kSync: gradient for version_ is in
    int64_t accepted_slowest = 0;  // SlowestStepLocked() at BeginPush
    std::unique_ptr<float[]> staging;
    // kSync, committed: the gradient's bytes and what keeps them valid.
    GradientSegments segments;
    std::vector<std::shared_ptr<const void>> holds;
    // kSync, committed: the push's step control.
    std::vector<double> scalars;
    int64_t switch_epoch = 0;
    // kAsync/kStaleSync: the decision as of the rank's last commit, which
    // the pull after it carries (see "Step control").
    SwitchDecision reply;
    bool has_reply = false;
  };

  PsShard(const PsShardConfig& config, Optimizer optimizer,
          std::vector<float> params, State state);

  // Drops a push that was not committed.
  void Abandon(int rank);
  void ReleaseView();
  // Applies the committed gradients' rank-order mean (their sum with
  // config.sum_gradients) to the parameters, block by block while each
  // block of the mean is in L1 (ReduceInBlocks into Optimizer::StepRange):
  // the whole mean is never written out. The caller is the writer
  // (writing_); nothing changes on error.
  [[nodiscard]] absl::Status ApplyMean(
      absl::Span<const GradientSegments* const> parts);
  // A view whose version is `version`; `pull_rank` >= 0 adds that rank's
  // step control.
  ShardViewRef MakeViewLocked(bool with_state, int64_t version, int pull_rank)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status CheckPushLocked(int rank, int64_t step) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status CheckServingLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t SlowestStepLocked(int* slowest_rank) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits until no view is alive and nobody writes, then marks the
  // parameters as being written. `what` names the writer in errors.
  [[nodiscard]] absl::Status BeginWriteLocked(absl::Time deadline,
                                              const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ranks that have not committed the current step (kSync).
  std::string MissingRanksLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Describe() const;
  absl::Time CapDeadline(absl::Time deadline) const;
  [[nodiscard]] absl::Status CommitSyncLocked(Push& push, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] absl::Status CommitAsyncLocked(Push& push, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordLocked(int rank, int64_t step, int64_t slowest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Step control (ps_shard_control.cc). kSync: INVALID_ARGUMENT unless
  // `count` scalars match the step's committed ones.
  [[nodiscard]] absl::Status CheckScalarsLocked(int rank, int64_t step,
                                                size_t count) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // kSync, after step version_ - 1 was applied: its scalar sums and the
  // decision of its pushes' epochs.
  void FinishSyncStepLocked(std::vector<double> sums)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The rank-order sums of the committed ranks' scalars (kSync).
  std::vector<double> SumScalarsLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // kAsync/kStaleSync: a committed push reported `epoch`.
  void NoteEpochLocked(int64_t epoch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // kAsync/kStaleSync: decides the newest reported epoch if it is newer
  // than the decision and no decision is pending.
  void MaybeDecideLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The largest step a push was begun for (in flight or committed).
  int64_t LargestPushedStepLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fills the view's step control for `rank`'s pull.
  void FillControlLocked(int rank, ShardView* view) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // kAsync/kStaleSync: ranks behind `step` or pushing (for drain errors).
  std::string DrainProgressLocked(int64_t step) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PsShardConfig config_;

  mutable absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_);
  // kSync: the step whose gradients are being gathered, and the step the
  // parameters are for. Else first_step + updates applied.
  int64_t version_ ABSL_GUARDED_BY(mu_);
  std::vector<RankSlot> ranks_ ABSL_GUARDED_BY(mu_);
  int committed_ ABSL_GUARDED_BY(mu_) = 0;  // kSync: ranks in for version_
  int appliers_ ABSL_GUARDED_BY(mu_) = 0;   // async: commits not applied
  absl::Time first_commit_ ABSL_GUARDED_BY(mu_);
  // Readers/writer protocol over params_ and optimizer_: views count as
  // readers; a writer (apply, import) waits for zero readers and blocks new
  // ones while `writing_`.
  int readers_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  PsShardStats stats_ ABSL_GUARDED_BY(mu_);
  std::deque<PushRecord> history_ ABSL_GUARDED_BY(mu_);
  // Step control. kSync: the number of scalars of the step's committed
  // pushes (valid while committed_ > 0), the sums of the last applied
  // step. All modes: the decision; kAsync/kStaleSync: the newest epoch a
  // commit reported (decided once no decision is pending).
  size_t step_scalars_ ABSL_GUARDED_BY(mu_) = 0;
  int step_scalars_rank_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<double> scalar_sums_ ABSL_GUARDED_BY(mu_);
  SwitchDecision decision_ ABSL_GUARDED_BY(mu_);
  int64_t reported_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> bytes_in_{0};

  // Written only by the thread that set writing_; read through views.
  std::vector<float> params_;
  Optimizer optimizer_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_PS_SHARD_H_
