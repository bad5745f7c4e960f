// Fuzz target: the coordinator's request validation. The input is a
// serialized request of one of the calls a hostile client can make (the
// first byte picks which), handed to one CoordinatorService with a worker
// and a job in it. Every call must return a status, never crash, and the
// registered worker must stay registered.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "common/wire_version.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_service.h"

namespace {

struct Fixture {
  std::unique_ptr<gradsync::CoordinatorService> service;
  std::string worker_id;
  std::string credential;
};

Fixture& TheFixture() {
  static Fixture* fixture = [] {
    auto* f = new Fixture;
    gradsync::CoordinatorConfig config;
    config.lease = absl::Hours(24);
    f->service = *gradsync::CoordinatorService::Create(config);
    gradsync::RegisterWorkerRequest worker;
    worker.set_host("host-a");
    worker.set_address("127.0.0.1");
    worker.set_wire_version(gradsync::kWireVersion);
    worker.add_devices()->set_kind("cpu");
    auto registered = f->service->RegisterWorker(worker);
    if (!registered.ok()) abort();
    f->worker_id = registered->worker_id();
    f->credential = registered->credential();
    return f;
  }();
  return *fixture;
}

template <typename Request>
bool Parse(const uint8_t* data, size_t size, Request* request) {
  return request->ParseFromArray(data, static_cast<int>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Fixture& f = TheFixture();
  gradsync::CoordinatorService& service = *f.service;
  const uint8_t which = data[0] % 8;
  ++data;
  --size;
  // Blocking calls get no time to wait.
  const absl::Time now = absl::Now();
  switch (which) {
    case 0: {
      gradsync::SubmitJobRequest r;
      if (Parse(data, size, &r)) (void)service.SubmitJob(r);
      break;
    }
    case 1: {
      gradsync::ReportRankRequest r;
      if (Parse(data, size, &r)) (void)service.ReportRank(r);
      break;
    }
    case 2: {
      gradsync::ReportMetricsRequest r;
      if (Parse(data, size, &r)) (void)service.ReportMetrics(r);
      break;
    }
    case 3: {
      gradsync::StoreSetRequest r;
      if (Parse(data, size, &r)) (void)service.StoreSet(r);
      break;
    }
    case 4: {
      gradsync::StoreGetRequest r;
      if (Parse(data, size, &r)) (void)service.StoreGet(r, now);
      break;
    }
    case 5: {
      gradsync::SwitchJobRequest r;
      if (Parse(data, size, &r)) (void)service.SwitchJob(r);
      break;
    }
    case 6: {
      gradsync::RegisterParameterServerRequest r;
      if (Parse(data, size, &r)) (void)service.RegisterParameterServer(r);
      break;
    }
    default: {
      gradsync::HeartbeatRequest r;
      if (Parse(data, size, &r)) (void)service.Heartbeat(r, now);
      break;
    }
  }
  // Nobody without the credential deregistered or stole our worker.
  gradsync::HeartbeatRequest beat;
  beat.set_worker_id(f.worker_id);
  beat.set_credential(f.credential);
  if (!service.Heartbeat(beat, now).ok()) abort();
  return 0;
}
