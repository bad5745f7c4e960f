// Job and JobTable: the coordinator's record of each submitted training job:
// its spec, state, rank placement, per-rank progress, barriers and step
// metrics.
//
// Job states (JobState in proto/coordinator.proto):
//
//   SubmitJob
//       │
//       ▼
//    PENDING ──────────────────────────────────────────────┐
//       │ enough free devices (FIFO order)                 │
//       ▼                                                  │
//   RENDEZVOUS ─────────────────────────┐                  │ CancelJob
//       │ every rank reported READY     │ a rank reported  │ (from any
//       ▼                               │ FAILED, or a     │ state that
//    RUNNING ───────────────────────────┤ worker hosting   │ is not final)
//       │ every rank reported SUCCEEDED │ a rank was lost  │
//       ▼                               ▼                  ▼
//   SUCCEEDED                         FAILED           CANCELLED
//
// SUCCEEDED, FAILED and CANCELLED are final: the job's devices are free
// again, its store keys are erased, and it stays in the table (read-only)
// until JobTable::Retire drops it for newer ended jobs.
//
// A job keeps every step metric its ranks report (about 100 bytes per rank
// and step) for as long as it is in the table.
//
// Parameter-server jobs (the spec's mode is PS, a scripted switch goes to
// PS, or a runtime switch to PS was requested) also hold their shard
// placement (shard k on ps_shards()[k]), set when the ranks are placed or
// by the first runtime switch to PS, and the latest counters each shard's
// server reported. Runtime switch requests are numbered 1, 2, ... per job
// (switch_requests(): the newest epoch); the mode the ranks actually ran
// each step in comes from rank 0's step metrics (ModeHistory).
//
// Every change that a watcher could see (state, message, placement, rank
// progress, metrics) bumps version(), so that WatchJob can wait for news.
//
// Not thread-safe: CoordinatorService owns the table and guards it with its
// mutex.
#ifndef GRADSYNC_SERVER_COORDINATOR_JOB_H_
#define GRADSYNC_SERVER_COORDINATOR_JOB_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/coordinator.pb.h"
#include "proto/coordinator_state.pb.h"
#include "server/coordinator/auto_mode_io.h"
#include "server/coordinator/job_log.h"
#include "server/coordinator/mode_history.h"
#include "server/coordinator/worker_registry.h"

namespace gradsync {

// True for SUCCEEDED, FAILED and CANCELLED.
bool IsFinal(JobState state);

// "PENDING", "RUNNING", ... (the enum name without its prefix).
absl::string_view JobStateName(JobState state);

// OK when the diagram above has an edge `from` → `to`; FAILED_PRECONDITION
// naming both otherwise.
[[nodiscard]] absl::Status CheckTransition(JobState from, JobState to);

// Progress of one rank.
struct RankRecord {
  DeviceSlot slot;
  bool ready = false;
  bool succeeded = false;
  int64_t last_step = -1;  // highest step in its metrics or reports; -1: none
};

// A named barrier of one rendezvous generation. Ranks arrive in rounds: the
// round completes when every rank has arrived, which lets a name be reused.
struct BarrierRecord {
  int64_t round = 0;
  absl::flat_hash_set<int> arrived;  // ranks in the current round
};

// Where one PS shard of a job lives.
struct ShardPlacement {
  std::string ps_id;
  std::string address;
};

class Job {
 public:
  Job(std::string id, JobSpec spec, absl::Time submit_time);
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  const std::string& id() const { return id_; }
  const JobSpec& spec() const { return spec_; }
  // Random and new for each job (a restart is a new job): its workers get
  // it with their assignment (Assignment.job_secret).
  const std::string& secret() const { return secret_; }
  JobState state() const { return state_; }
  const std::string& message() const { return message_; }
  int64_t generation() const { return generation_; }
  int64_t version() const { return version_; }
  int world_size() const { return static_cast<int>(ranks_.size()); }
  const std::vector<RankRecord>& ranks() const { return ranks_; }
  std::vector<RankRecord>& mutable_ranks() { return ranks_; }
  const std::vector<StepMetrics>& metrics() const { return metrics_; }

  // JobSpec.max_restarts: this job restarts `restart_of`, and may not be
  // placed before `not_before` (the daemons that failed it must be known
  // lost by then); `restarted_as` is the job that restarted this one.
  const std::string& restart_of() const { return restart_of_; }
  void set_restart_of(std::string id) { restart_of_ = std::move(id); }
  absl::Time not_before() const { return not_before_; }
  void set_not_before(absl::Time t) { not_before_ = t; }
  const std::string& restarted_as() const { return restarted_as_; }
  void set_restarted_as(std::string id) { restarted_as_ = std::move(id); }
  const std::string& last_checkpoint() const { return last_checkpoint_; }

  // Moves to `to` along an edge of the diagram (FAILED_PRECONDITION
  // otherwise, nothing changed), sets the message, and stamps the start
  // (RUNNING) or end (final states) time with `now`. A job that fails or
  // is cancelled after a checkpoint, and was not restarted, gets the way
  // to resume from it appended.
  [[nodiscard]] absl::Status TransitionTo(JobState to, std::string message,
                                          absl::Time now);

  // PENDING → RENDEZVOUS with rank i on slots[i]; starts generation 1.
  [[nodiscard]] absl::Status Place(std::vector<DeviceSlot> slots,
                                   absl::Time now);

  // Replaces the message (e.g. why a pending job waits); bumps the version
  // only when it changed.
  void SetMessage(std::string message);

  // Records news in rank state or progress made through mutable_ranks().
  void Touch() { ++version_; }

  // True when `rank` is in the job and placed on `worker_id`.
  bool HostsRank(absl::string_view worker_id, int rank) const;
  // Ranks placed on `worker_id`, ascending.
  std::vector<int> RanksOn(absl::string_view worker_id) const;
  // Workers hosting ranks, in rank order, without repeats.
  std::vector<std::string> WorkerIds() const;

  // Appends step metrics (ranks already checked by the caller), raises
  // each rank's last step and keeps the newest checkpoint rank 0 wrote.
  void AddMetrics(const google::protobuf::RepeatedPtrField<StepMetrics>& steps);

  // Lowest last step over the ranks (0 while some rank has none).
  int64_t MinStep() const;

  // The mode of rank 0's latest step (the spec's before any step).
  SyncMode CurrentMode() const { return modes_.current(); }

  // PS shard placement; empty until placed. Setting it bumps the version.
  const std::vector<ShardPlacement>& ps_shards() const { return ps_shards_; }
  void SetPsShards(std::vector<ShardPlacement> shards);
  // Shards placed on `ps_id`, ascending.
  std::vector<int> ShardsOn(absl::string_view ps_id) const;

  // `--mode auto` (JobSpec.auto_mode): the finished-step collector and the
  // policy, made when the ranks are placed; null for other jobs.
  struct AutoMode {
    AutoStepCollector steps;
    AutoModePolicy policy;
  };
  AutoMode* auto_mode() { return auto_mode_.get(); }

  // Numbers a runtime switch request to `mode`; returns its epoch.
  // `reason`, if any, shows in the switch's SwitchRecord.
  int64_t AddSwitchRequest(SyncMode mode, std::string reason = "");
  int64_t switch_requests() const { return switch_requests_; }
  // The mode of the newest request; UNSPECIFIED before any.
  SyncMode requested_mode() const { return requested_mode_; }

  // Keeps `stats` as the latest counters of its shard (no version bump:
  // servers report every heartbeat).
  void SetShardStats(const ps::ShardStats& stats);
  // By shard index.
  const std::map<int, ps::ShardStats>& shard_stats() const {
    return shard_stats_;
  }

  // Barriers of the current generation, by name.
  BarrierRecord& Barrier(absl::string_view name) { return barriers_[name]; }
  void ClearBarriers() { barriers_.clear(); }

  // What the job's workers logged about it (not saved, no version bump).
  JobLog& log() { return log_; }
  const JobLog& log() const { return log_; }

  // Final accuracy and loss (from rank 0's SUCCEEDED report).
  void SetResult(double test_accuracy, double test_loss);

  // A link-probe rank's measurements (its SUCCEEDED report), kept for
  // JobStatus.links. INVALID_ARGUMENT, and nothing kept, unless the job is
  // a link probe, every link starts at `rank` and ends at another of its
  // ranks (or is one direction of its link with a parameter server, each
  // direction once), and every figure is finite and >= 0; the same links again
  // (a retried report) change nothing, other ones are refused.
  [[nodiscard]] absl::Status AddLinks(
      int rank,
      const google::protobuf::RepeatedPtrField<LinkMeasurement>& links);

  // The public view.
  JobStatus Status() const;

  // ---- persistence (job_record.cc, proto/coordinator_state.proto) ----

  // The job's record without its step metrics (saved apart); `number`,
  // `pending` and `ended` are the table's (JobTable).
  SavedJob Save(int64_t number, bool pending, bool ended) const;

  // The job `saved` describes, with `metrics` replayed in arrival order
  // (they rebuild the ranks' last steps, the mode history, the newest
  // checkpoint and a --mode auto job's measurements; its policy starts
  // afresh). Metrics of ranks outside the job are skipped.
  static std::unique_ptr<Job> Restore(const SavedJob& saved,
                                      const std::vector<StepMetrics>& metrics);

 private:
  Job(std::string id, JobSpec spec, std::string secret, absl::Time submit_time);

  // Makes auto_mode_ for a placed job whose spec asks for --mode auto.
  void MakeAutoMode();

  const std::string id_;
  const JobSpec spec_;
  const std::string secret_;
  JobState state_ = JOB_STATE_PENDING;
  std::string message_;
  int64_t generation_ = 0;  // 0 until placed
  int64_t version_ = 1;
  absl::Time submit_time_;
  absl::Time start_time_ = absl::UnixEpoch();
  absl::Time end_time_ = absl::UnixEpoch();
  double test_accuracy_ = 0;
  double test_loss_ = 0;
  std::vector<LinkMeasurement> links_;  // a link probe's, by rank
  std::vector<RankRecord> ranks_;
  std::vector<StepMetrics> metrics_;
  absl::flat_hash_map<std::string, BarrierRecord> barriers_;
  ModeHistory modes_;
  std::vector<ShardPlacement> ps_shards_;
  int64_t switch_requests_ = 0;
  SyncMode requested_mode_ = SYNC_MODE_UNSPECIFIED;
  std::string last_checkpoint_;  // StepMetrics.checkpoint of rank 0
  int64_t last_checkpoint_steps_ = 0;
  int64_t first_step_ = -1;  // the lowest step rank 0 reported; -1: none yet
  std::string restart_of_;
  std::string restarted_as_;
  absl::Time not_before_ = absl::InfinitePast();
  JobLog log_;
  std::map<int, ps::ShardStats> shard_stats_;
  std::unique_ptr<AutoMode> auto_mode_;
  std::map<int64_t, std::string> switch_reasons_;  // by epoch
};

// The FAILED_PRECONDITION of a call on a job that already ended: "job J
// already ended (STATE: message); <consequence>".
[[nodiscard]] absl::Status JobEndedError(const Job& job,
                                         absl::string_view consequence);

class JobTable {
 public:
  explicit JobTable(int retained_ended_jobs)
      : retained_ended_jobs_(retained_ended_jobs) {}
  JobTable(const JobTable&) = delete;
  JobTable& operator=(const JobTable&) = delete;

  // Adds a PENDING job "job-<n>" (n from 1) at the back of the FIFO queue.
  Job* Create(JobSpec spec, absl::Time now);

  // The job with `id`; null when unknown (or retired).
  Job* Find(absl::string_view id);
  const Job* Find(absl::string_view id) const;

  // Jobs waiting for devices, oldest first.
  const std::deque<std::string>& pending() const { return pending_; }
  void RemovePending(absl::string_view id);

  // Every job, in submission order.
  std::vector<const Job*> All() const;
  std::vector<Job*> AllMutable();

  // Records that `id` ended, and drops the oldest ended jobs beyond the
  // retention limit. Returns the ids dropped.
  std::vector<std::string> Retire(absl::string_view id);

  // ---- persistence (state_saver.h) ----

  // The number of the next job ("job-<n>").
  int64_t next_number() const { return next_number_; }
  // The number of job `id`; 0 when unknown.
  int64_t NumberOf(absl::string_view id) const;
  // Jobs counted for retention, oldest first.
  const std::deque<std::string>& ended() const { return ended_; }
  // Adds a job read back from the state store under its own number, at
  // the back of the queue (`pending`) or of the ended jobs (`ended`), and
  // keeps next_number() above it.
  void Restore(std::unique_ptr<Job> job, int64_t number, bool pending,
               bool ended);
  // Raises next_number() to `number` (never lowers it).
  void RaiseNextNumber(int64_t number) {
    next_number_ = std::max(next_number_, number);
  }

 private:
  const int retained_ended_jobs_;
  int64_t next_number_ = 1;
  std::map<int64_t, std::unique_ptr<Job>> jobs_;  // by number
  absl::flat_hash_map<std::string, int64_t> numbers_;
  std::deque<std::string> pending_;
  std::deque<std::string> ended_;  // oldest first
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_JOB_H_
