// A tiny in-process Coordinator gRPC service for the worker daemon's unit
// tests: it registers workers, hands out news queued by the test (
// assignments, cancellations) through the Heartbeat long-poll, serves a
// rendezvous store scoped like the real one, and records every ReportRank
// and ReportMetrics. Tests drive it from their own thread.
#ifndef GRADSYNC_TESTS_DAEMON_FAKE_COORDINATOR_H_
#define GRADSYNC_TESTS_DAEMON_FAKE_COORDINATOR_H_

#include <grpcpp/server.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collectives/memory_store.h"
#include "proto/coordinator.grpc.pb.h"

namespace gradsync::testing {

class FakeCoordinator final : public Coordinator::Service {
 public:
  FakeCoordinator() = default;

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
  // Every store call fails with `status` while it is not OK.
  void FailStoreCalls(absl::Status status);

  // Blocks until `done()` holds (checked on every recorded event) or
  // `timeout` passes; returns whether it holds.
  bool WaitFor(const std::function<bool()>& done,
               absl::Duration timeout = absl::Seconds(30));

  std::vector<RegisterWorkerRequest> registrations() const;
  std::vector<ReportRankRequest> rank_reports() const;
  std::vector<StepMetrics> metrics() const;
  std::vector<StoreScope> store_scopes() const;
  int64_t heartbeats() const;
  // Reports of `job_id` with `state`.
  std::vector<ReportRankRequest> Reports(const std::string& job_id,
                                         RankState state) const;

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
  std::vector<StoreScope> scopes_ ABSL_GUARDED_BY(mu_);
  int64_t heartbeats_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t events_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status store_failure_ ABSL_GUARDED_BY(mu_);
  MemoryStore store_;
};

// The fake served on 127.0.0.1 at a free port.
class FakeCoordinatorServer {
 public:
  FakeCoordinatorServer();
  ~FakeCoordinatorServer();
  FakeCoordinator& fake() { return fake_; }
  const std::string& address() const { return address_; }
  std::shared_ptr<Coordinator::StubInterface> NewStub() const;

 private:
  FakeCoordinator fake_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

// A 127.0.0.1 address where nothing listens.
std::string UnusedAddress();

}  // namespace gradsync::testing

#endif  // GRADSYNC_TESTS_DAEMON_FAKE_COORDINATOR_H_
