// LinkProbeRunner: runs the rank of a link-probe job (JobSpec.model.kind
// "link_probe", models/link_probe/link_probe_spec.h) placed on this worker, for
// `gradsync links probe`. The coordinator places one rank on each worker
// host; each measures its links to the others and reports them with its
// success (ReportRankRequest.links), where the CLI reads them and sets the
// coordinator's link facts.
//
// Lifecycle (its own thread, one more per local rank):
//   the spec checked again on receipt (ValidateLinkProbe)
//   two TCP rendezvous through the job's store ("link-probe/a/",
//     "link-probe/b/"), each with the ring's HMAC handshake over the job
//     secret, listening on the worker's address: one connection per peer
//     and direction (collectives/transports/tcp/link_probe.h)
//   ReportRank READY
//   MeasureLinks: the spec's rounds of round trips and streams, barriers
//     through the store
//   then the links with the parameter servers of
//     Assignment.probe_servers (hosts without a worker), over their
//     tensor planes after the plane's handshake over the job's PS token
//     (server/ps/transport/tensor_plane_probe.h), in PsProbeRounds' rounds
//   ReportRank SUCCEEDED with the links, or FAILED naming the peer, the
//     round and the phase
//
// Cancel(reason) aborts the rendezvous and the measurement at once; each
// rank then reports FAILED quoting the reason.
//
// Errors: Start returns INVALID_ARGUMENT for a malformed assignment or a
// spec the jobspec checks refuse; later errors are a rank's failure.
// Threading: Cancel, Done and Join are thread-safe; the destructor cancels
// and joins.
#ifndef GRADSYNC_WORKER_LAUNCH_LINK_PROBE_RUNNER_H_
#define GRADSYNC_WORKER_LAUNCH_LINK_PROBE_RUNNER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "models/link_probe/link_probe_spec.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_client.h"
#include "worker/daemon/coordinator_store.h"
#include "worker/daemon/job_runner.h"
#include "worker/daemon/metrics_reporter.h"

namespace gradsync {

class LinkProbeRunner final : public JobHandle {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<LinkProbeRunner>> Start(
      const Assignment& assignment, JobRunnerConfig config,
      std::shared_ptr<CoordinatorClient> client);

  ~LinkProbeRunner() override;

  void Cancel(const absl::Status& reason) override;
  bool Done() const override { return done_.load(); }
  void Join() override;
  void NotifySwitch(int64_t epoch) override {}  // a probe never switches

 private:
  LinkProbeRunner(const Assignment& assignment, LinkProbeSpec probe,
                  JobRunnerConfig config,
                  std::shared_ptr<CoordinatorClient> client);

  void Main();
  void RunRank(int rank, std::atomic<bool>* abort);
  // This rank's links with the parameter servers of
  // Assignment.probe_servers, in PsProbeRounds' rounds (a store barrier
  // after each), appended to `out`. An error names the server and the
  // phase.
  [[nodiscard]] absl::Status ProbeServers(int rank, LinkProbePairs pairs,
                                          std::atomic<bool>* abort,
                                          std::vector<LinkMeasurement>* out);
  [[nodiscard]] absl::Status ProbeOneServer(int rank, const ProbeServer& server,
                                            std::atomic<bool>* abort,
                                            std::vector<LinkMeasurement>* out);
  void Report(int rank, RankState state, absl::string_view message,
              const std::vector<LinkMeasurement>& links = {});
  std::string CancelMessage();
  void Log(absl::string_view line) const;

  const Assignment assignment_;
  const LinkProbeSpec probe_;  // checked, with its defaults
  const JobRunnerConfig config_;
  const std::shared_ptr<CoordinatorClient> client_;
  const std::shared_ptr<CoordinatorStore> store_;
  mutable MetricsReporter reporter_;
  // One abort flag per local rank (MeasureLinks sets its own on failure).
  std::vector<std::unique_ptr<std::atomic<bool>>> aborts_;

  std::atomic<bool> cancelled_{false};
  std::atomic<bool> done_{false};

  absl::Mutex mu_;
  absl::Status cancel_reason_ ABSL_GUARDED_BY(mu_);

  absl::Mutex join_mu_;
  std::thread main_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_LAUNCH_LINK_PROBE_RUNNER_H_
