// The one fake coordinator of the tests: a tiny in-process Coordinator gRPC
// service that the real clients (server/coordinator/coordinator_client.h)
// talk to on 127.0.0.1. For worker daemons it registers workers, hands out
// news queued by the test (assignments, cancellations, switch notices)
// through the Heartbeat long-poll, serves a rendezvous store scoped like
// the real one, and records every ReportRank and ReportMetrics. For
// parameter servers it hands out ids "ps-1", "ps-2", ..., answers
// heartbeats of unknown ids with NOT_FOUND (as a restarted coordinator
// would) and releases the jobs the test names. For the control commands
// it answers the users' RPCs (submit, status, list, cancel, switch, watch,
// metrics, workers) from a job table the test fills: cancel and switch
// refuse ended jobs as the real one does, and submissions are recorded and
// answered as the test says. Tests drive it from their own thread.
#ifndef GRADSYNC_TESTS_UTIL_FAKE_COORDINATOR_H_
#define GRADSYNC_TESTS_UTIL_FAKE_COORDINATOR_H_

#include <grpcpp/server.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collectives/memory_store.h"
#include "proto/coordinator.grpc.pb.h"
#include "security/tls.h"
#include "server/coordinator/coordinator_client.h"

namespace gradsync::testing {

class FakeCoordinator final : public Coordinator::Service {
 public:
  // Parameter servers are told to heartbeat every `ps_heartbeat_ms`.
  explicit FakeCoordinator(int64_t ps_heartbeat_ms = 50)
      : ps_heartbeat_ms_(ps_heartbeat_ms) {}

  // ---- what workers call ----
  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const RegisterWorkerRequest* request,
                              RegisterWorkerResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context,
                         const HeartbeatRequest* request,
                         HeartbeatResponse* response) override;
  grpc::Status ReportRank(grpc::ServerContext* context,
                          const ReportRankRequest* request,
                          ReportRankResponse* response) override;
  grpc::Status ReportMetrics(grpc::ServerContext* context,
                             const ReportMetricsRequest* request,
                             ReportMetricsResponse* response) override;
  grpc::Status StoreSet(grpc::ServerContext* context,
                        const StoreSetRequest* request,
                        StoreSetResponse* response) override;
  grpc::Status StoreGet(grpc::ServerContext* context,
                        const StoreGetRequest* request,
                        StoreGetResponse* response) override;
  grpc::Status StoreAdd(grpc::ServerContext* context,
                        const StoreAddRequest* request,
                        StoreAddResponse* response) override;
  grpc::Status StoreWait(grpc::ServerContext* context,
                         const StoreWaitRequest* request,
                         StoreWaitResponse* response) override;

  // ---- what parameter servers call ----
  grpc::Status RegisterParameterServer(
      grpc::ServerContext* context,
      const RegisterParameterServerRequest* request,
      RegisterParameterServerResponse* response) override;
  grpc::Status PsHeartbeat(grpc::ServerContext* context,
                           const PsHeartbeatRequest* request,
                           PsHeartbeatResponse* response) override;
  // Records the request; the server is no longer known.
  grpc::Status DeregisterParameterServer(
      grpc::ServerContext* context,
      const DeregisterParameterServerRequest* request,
      DeregisterParameterServerResponse* response) override;

  // ---- what users call (the control commands) ----
  grpc::Status SubmitJob(grpc::ServerContext* context,
                         const SubmitJobRequest* request,
                         SubmitJobResponse* response) override;
  grpc::Status GetJob(grpc::ServerContext* context,
                      const GetJobRequest* request,
                      JobStatus* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context,
                        const ListJobsRequest* request,
                        ListJobsResponse* response) override;
  grpc::Status CancelJob(grpc::ServerContext* context,
                         const CancelJobRequest* request,
                         JobStatus* response) override;
  grpc::Status SwitchJob(grpc::ServerContext* context,
                         const SwitchJobRequest* request,
                         SwitchJobResponse* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context,
                        const WatchJobRequest* request,
                        grpc::ServerWriter<JobEvent>* writer) override;
  grpc::Status GetMetrics(grpc::ServerContext* context,
                          const GetMetricsRequest* request,
                          GetMetricsResponse* response) override;
  grpc::Status ListWorkers(grpc::ServerContext* context,
                           const ListWorkersRequest* request,
                           ListWorkersResponse* response) override;

  // ---- test control: the job table ----
  // The users' RPCs answer from these jobs, listed in the order added; an
  // id not added is NOT_FOUND ("no job '<id>'"). Cancel ends a job that has
  // not ended; switch counts the job's requests (the epoch).
  void AddJob(const JobStatus& job);
  // What SubmitJob answers after recording the spec: a status, and the new
  // job's id in `*job_id` (UNIMPLEMENTED while none is set).
  using SubmitAnswer =
      std::function<grpc::Status(const JobSpec& spec, std::string* job_id)>;
  void AnswerSubmissions(SubmitAnswer answer);
  // WatchJob streams `events` for `job_id` (else the job's status once).
  void SetWatchEvents(const std::string& job_id, std::vector<JobEvent> events);
  // The next `count` WatchJob calls send their first event only, then end
  // UNAVAILABLE, as when the coordinator goes away mid-watch.
  void BreakWatches(int count);
  // GetMetrics answers `metrics` for `job_id` (else nothing).
  void SetMetrics(const std::string& job_id, GetMetricsResponse metrics);
  // ListWorkers answers `workers` (else nothing).
  void SetWorkerList(ListWorkersResponse workers);
  // While held, ReportMetrics calls wait (for up to 30 s) before they are
  // recorded: a report in flight that a test can count on.
  void HoldMetrics(bool hold);
  std::vector<JobSpec> submitted() const;
  // The modes of the switches accepted, in order.
  std::vector<SyncMode> switches() const;

  // ---- test control ----
  // Queues news for `worker_id`'s next heartbeat.
  void Assign(const std::string& worker_id, const Assignment& assignment);
  void CancelJob(const std::string& worker_id, const std::string& job_id,
                 const std::string& reason);
  // Sends a runtime switch request of `job_id` in the next heartbeat.
  void NotifySwitch(const std::string& worker_id, const std::string& job_id,
                    int64_t epoch);
  // Forgets the worker: its heartbeats get NOT_FOUND until it registers.
  void DeclareLost(const std::string& worker_id);
  // As a coordinator restarted without its state database that gave the
  // id to another daemon: the worker's heartbeats get PERMISSION_DENIED
  // (not its credential) until it registers anew.
  void GiveIdAway(const std::string& worker_id);
  // Every store call fails with `status` while it is not OK.
  void FailStoreCalls(absl::Status status);
  // The next parameter-server heartbeat's reply names these jobs.
  void ReleaseJobs(std::vector<std::string> jobs);
  // Forgets every parameter server (heartbeats get NOT_FOUND).
  void ForgetParameterServers();
  // RegisterParameterServer answers UNIMPLEMENTED from now on.
  void RefusePsRegistrations();
  // The shard key registered parameter servers get, and the token of job
  // `job_id` under it (security/secret.h PsTokenForJob).
  static constexpr absl::string_view kShardKey = "fake coordinator shard key";
  static std::string PsToken(absl::string_view job_id);

  // Blocks until `done()` holds (checked on every recorded event) or
  // `timeout` passes; returns whether it holds.
  bool WaitFor(const std::function<bool()>& done,
               absl::Duration timeout = absl::Seconds(30));

  std::vector<RegisterWorkerRequest> registrations() const;
  std::vector<ReportRankRequest> rank_reports() const;
  std::vector<StepMetrics> metrics() const;
  // The log lines of every ReportMetrics, in arrival order.
  std::vector<JobLogLine> log_lines() const;
  std::vector<StoreScope> store_scopes() const;
  int64_t heartbeats() const;
  // HeartbeatRequest.held_job_ids of the latest heartbeat.
  std::vector<std::string> last_held_job_ids() const;
  // Reports of `job_id` with `state`.
  std::vector<ReportRankRequest> Reports(const std::string& job_id,
                                         RankState state) const;
  std::vector<RegisterParameterServerRequest> ps_registrations() const;
  std::vector<PsHeartbeatRequest> ps_heartbeats() const;
  std::vector<DeregisterParameterServerRequest> ps_deregistrations() const;

 private:
  struct News {
    std::vector<Assignment> assignments;
    std::vector<std::string> cancels;
    std::string reason;
    std::vector<SwitchNotice> switches;
  };
  grpc::Status CheckStore(const StoreScope& scope, std::string* prefix);

  mutable absl::Mutex mu_;
  int next_worker_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, News> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<RegisterWorkerRequest> registrations_ ABSL_GUARDED_BY(mu_);
  std::vector<ReportRankRequest> reports_ ABSL_GUARDED_BY(mu_);
  std::vector<StepMetrics> metrics_ ABSL_GUARDED_BY(mu_);
  std::vector<JobLogLine> log_lines_ ABSL_GUARDED_BY(mu_);
  std::vector<StoreScope> scopes_ ABSL_GUARDED_BY(mu_);
  int64_t heartbeats_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> last_held_job_ids_ ABSL_GUARDED_BY(mu_);
  int64_t events_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status store_failure_ ABSL_GUARDED_BY(mu_);
  MemoryStore store_;

  const int64_t ps_heartbeat_ms_;
  std::vector<RegisterParameterServerRequest> ps_registrations_
      ABSL_GUARDED_BY(mu_);
  std::vector<PsHeartbeatRequest> ps_heartbeats_ ABSL_GUARDED_BY(mu_);
  std::vector<DeregisterParameterServerRequest> ps_deregistrations_
      ABSL_GUARDED_BY(mu_);
  std::set<std::string> known_ps_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> given_away_ ABSL_GUARDED_BY(mu_);  // GiveIdAway
  std::vector<std::string> release_ ABSL_GUARDED_BY(mu_);
  bool refuse_ps_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_metrics_ ABSL_GUARDED_BY(mu_) = false;

  // The job table (fake_coordinator_jobs.cc).
  JobStatus* FindJobLocked(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<JobStatus> jobs_ ABSL_GUARDED_BY(mu_);
  SubmitAnswer submit_answer_ ABSL_GUARDED_BY(mu_);
  std::vector<JobSpec> submitted_ ABSL_GUARDED_BY(mu_);
  std::vector<SyncMode> switches_ ABSL_GUARDED_BY(mu_);
  int break_watches_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::vector<JobEvent>> watch_events_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, GetMetricsResponse> job_metrics_ ABSL_GUARDED_BY(mu_);
  ListWorkersResponse worker_list_ ABSL_GUARDED_BY(mu_);
};

// The fake served on 127.0.0.1:`port` (0: a free port), with `security`
// (security/tls.h; default plaintext); port() is 0 when that failed.
class FakeCoordinatorServer {
 public:
  explicit FakeCoordinatorServer(int port = 0, int64_t ps_heartbeat_ms = 50,
                                 const GrpcSecurity& security = {});
  ~FakeCoordinatorServer();
  FakeCoordinator& fake() { return fake_; }
  int port() const { return port_; }
  const std::string& address() const { return address_; }
  // A new client of the real gRPC implementation, on its own channel.
  std::shared_ptr<CoordinatorClient> NewClient() const;
  // Stops serving at once (calls in flight fail). Idempotent.
  void Shutdown();

 private:
  FakeCoordinator fake_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string address_;
};

// A client of the real gRPC implementation for `address` (where nothing
// may listen).
std::shared_ptr<CoordinatorClient> NewTestClient(const std::string& address);

// A 127.0.0.1 address where nothing listens.
std::string UnusedAddress();

}  // namespace gradsync::testing

#endif  // GRADSYNC_TESTS_UTIL_FAKE_COORDINATOR_H_
