// EntrypointRunner: runs the ranks of an entrypoint job (JobSpec.model.kind
// "entrypoint") placed on this worker: one process per rank, the user's
// own program (a PyTorch script), started, supervised and accounted for by
// the daemon, as TorchElastic's agent does for torchrun's workers.
//
// Lifecycle (its own thread, which also spawns, so that PR_SET_PDEATHSIG
// ties the processes to it: rank_process.h):
//   checks: the daemon allows entrypoints (--allow-entrypoints) and the
//     workdir lies under its --workdir-root (done in Start: a refused job
//     fails before anything runs)
//   per local rank: a 0600 rank file (the job's credentials, RankLaunch),
//     the environment (rank_env.h), the process; ReportRank READY
//   supervision, until every process has ended:
//     stdout and stderr lines -> the job's log ("rank R: ..."), for
//       `gradsync logs JOB --rank R`; the last lines of stderr are kept
//     step reports on the report pipe (report_wire.h) -> the coordinator,
//       through the job's MetricsReporter
//     a rank that reports no step for step_deadline_ms is killed, and
//       fails naming the rank, its last step and the deadline
//     exit 0 -> ReportRank SUCCEEDED; a non-zero exit or a signal ->
//       FAILED naming the rank, the exit code or signal and the last
//       stderr line (a Python traceback's last line); the coordinator then
//       fails the job and cancels the other ranks
//     when a rank's process ends, the rest of its process group is killed:
//       nothing a rank started outlives it
//   the rank files are removed; Done() becomes true.
//
// Cancel(reason): SIGTERM to every rank's process group, SIGKILL to what
// is left after term_grace_ms; each rank then reports FAILED quoting the
// reason (the coordinator ignores reports of jobs that already ended).
//
// Errors: Start returns PERMISSION_DENIED when the daemon does not allow
// entrypoints or the workdir is outside the roots, INVALID_ARGUMENT for a
// malformed assignment; later errors are reported as a rank's failure.
// Threading: Cancel, Done and Join are thread-safe; the destructor cancels
// and joins.
#ifndef GRADSYNC_WORKER_LAUNCH_ENTRYPOINT_RUNNER_H_
#define GRADSYNC_WORKER_LAUNCH_ENTRYPOINT_RUNNER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "jobspec/job_spec.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_client.h"
#include "worker/daemon/job_runner.h"
#include "worker/daemon/metrics_reporter.h"

namespace gradsync {

// What an entrypoint needs beyond JobRunnerConfig (the daemon's flags).
struct EntrypointConfig {
  // --allow-entrypoints: without it every entrypoint job is refused.
  bool allow = false;
  // --workdir-root: the directories a job's workdir must lie under
  // (security/path_roots.h); empty: anywhere.
  std::vector<std::string> workdir_roots;
  // The daemon's --tls-dir (the processes reach the coordinator with it);
  // empty: plaintext.
  std::string tls_dir;
  // Prepended to the processes' PYTHONPATH (the gradsync package); empty:
  // nothing.
  std::string python_dir;
  // This daemon's leftovers.h tag.
  std::string agent_tag;
  // Where the rank files go; empty: $TMPDIR, else /tmp.
  std::string rank_file_dir;
};

class EntrypointRunner final : public JobHandle {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<EntrypointRunner>> Start(
      const Assignment& assignment, JobRunnerConfig config,
      EntrypointConfig entrypoint, std::shared_ptr<CoordinatorClient> client);

  ~EntrypointRunner() override;

  void Cancel(const absl::Status& reason) override;
  bool Done() const override { return done_.load(); }
  void Join() override;
  // The processes act on switches themselves (the gradsync package reads
  // the job's store at each optimizer step); nothing to do here.
  void NotifySwitch(int64_t epoch) override {}

 private:
  struct Rank;

  EntrypointRunner(const Assignment& assignment, JobRunnerConfig config,
                   EntrypointConfig entrypoint,
                   std::shared_ptr<CoordinatorClient> client);

  void Main();
  // Writes the rank file and starts the process of local rank `index`.
  [[nodiscard]] absl::Status StartRank(Rank& rank, int index);
  // Reads what is ready on the ranks' pipes for up to `wait`.
  void PollOutput(std::vector<std::unique_ptr<Rank>>& ranks,
                  absl::Duration wait);
  // Handles a rank whose process has ended (wait status `status`).
  void Finish(Rank& rank, int status);
  void Report(int rank, RankState state, int64_t step,
              absl::string_view operation, absl::string_view message);
  bool cancelled() const { return cancelled_.load(); }
  std::string CancelMessage();
  void Log(absl::string_view line) const;

  const Assignment assignment_;
  const JobRunnerConfig config_;
  const EntrypointConfig entrypoint_;
  const std::shared_ptr<CoordinatorClient> client_;
  mutable MetricsReporter reporter_;

  std::atomic<bool> cancelled_{false};
  std::atomic<bool> done_{false};

  absl::Mutex mu_;
  absl::Status cancel_reason_ ABSL_GUARDED_BY(mu_);

  absl::Mutex join_mu_;
  std::thread main_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_LAUNCH_ENTRYPOINT_RUNNER_H_
