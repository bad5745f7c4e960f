// StoreServiceImpl: the thin gRPC adapter of the rendezvous store. It turns
// each StoreService RPC (proto/store.proto) into one call on a
// gradsync::Store (in practice the MemoryStore of a StoreServer) and the
// resulting absl::Status into a grpc::Status with the same code and message.
// The store logic lives in the Store; nothing here but translation and the
// bookkeeping that waiting on behalf of a remote caller needs.
//
// Waiting: Get and Wait run on a sync-server thread and block it until the
// keys are set or the request's timeout passes. They wait in slices of
// kCancelCheckInterval so that a waiter whose client went away (CANCELLED)
// or whose server is shutting down (UNAVAILABLE) gives its thread back
// within one slice instead of holding it to the end of its timeout. A key
// that is set wakes the waiter at once, whatever the slice.
//
// Errors, by RPC:
//   Set   OK.
//   Get   DEADLINE_EXCEEDED naming the key; CANCELLED; UNAVAILABLE.
//   Add   FAILED_PRECONDITION if the key holds a non-integer.
//   Wait  DEADLINE_EXCEEDED naming the missing keys; CANCELLED; UNAVAILABLE.
//
// Thread-safe: the RPC methods run concurrently on gRPC's threads.
#ifndef GRADSYNC_SERVER_STORE_STORE_SERVICE_H_
#define GRADSYNC_SERVER_STORE_STORE_SERVICE_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <atomic>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "collectives/store.h"
#include "proto/store.grpc.pb.h"

namespace gradsync {

class StoreServiceImpl final : public store::StoreService::Service {
 public:
  // How often a waiting Get or Wait checks for cancellation and shutdown.
  static constexpr absl::Duration kCancelCheckInterval =
      absl::Milliseconds(100);

  // `store` is not owned and must outlive the service.
  explicit StoreServiceImpl(Store* store);
  StoreServiceImpl(const StoreServiceImpl&) = delete;
  StoreServiceImpl& operator=(const StoreServiceImpl&) = delete;

  // Makes every waiting and future Get or Wait that has not found its keys
  // return UNAVAILABLE at its next check. Call it before
  // grpc::Server::Shutdown, which waits for the handlers to return.
  void BeginShutdown();

  grpc::Status Set(grpc::ServerContext* context,
                   const store::SetRequest* request,
                   store::SetResponse* response) override;
  grpc::Status Get(grpc::ServerContext* context,
                   const store::GetRequest* request,
                   store::GetResponse* response) override;
  grpc::Status Add(grpc::ServerContext* context,
                   const store::AddRequest* request,
                   store::AddResponse* response) override;
  grpc::Status Wait(grpc::ServerContext* context,
                    const store::WaitRequest* request,
                    store::WaitResponse* response) override;

 private:
  // Calls `wait(slice_deadline)` with successive slice deadlines until it
  // returns anything but DEADLINE_EXCEEDED, `deadline` passes (its last
  // DEADLINE_EXCEEDED is returned as is), the client cancels or the
  // service shuts down.
  [[nodiscard]] absl::Status WaitInSlices(
      grpc::ServerContext* context, absl::Time deadline,
      absl::FunctionRef<absl::Status(absl::Time)> wait);

  Store* const store_;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_STORE_STORE_SERVICE_H_
