// PsStep::ShardCall: one shard's call within a step, shared by
// ps_step.cc and ps_step_stream.cc. Internal to PsStep.
#ifndef GRADSYNC_SERVER_PS_CLIENT_PS_STEP_CALL_H_
#define GRADSYNC_SERVER_PS_CLIENT_PS_STEP_CALL_H_

#include <grpcpp/client_context.h>

#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_client_stream.h"
#include "server/ps/client/ps_step.h"
#include "server/ps/transport/raw_tensor_rpc.h"
#include "server/ps/transport/tensor_plane_client.h"
#include "study/alpha_beta/sync_bandwidth.h"

namespace gradsync {

struct PsStep::ShardCall {
  // Made before the thread starts (so that Cancel can reach the call
  // early) and destroyed by the thread once the call is over: gRPC keeps
  // the last messages it sent referenced until then. Guarded by mu_
  // (the pointer; the thread uses the object while it runs).
  std::unique_ptr<grpc::ClientContext> context;
  std::thread thread;
  absl::Status status;  // written by the thread, read after the join
  ps::PullHeader reply;
  // When the stream was busy (not waiting for Ready); written by the
  // thread, read after the join.
  std::vector<TimeInterval> busy;
  // Between Push and Pull (written by Push, then read by Pull, on one
  // thread or handed over through PsStep::pushed_): the stream, the pin
  // on the gradient bytes gRPC may still send, whether the stream is
  // open, the push's outcome, and when the stream last became busy.
  std::unique_ptr<RawClientStream> stream;
  // Instead of `stream`, with the tensor plane: the connection the push
  // went over (the client's; guarded by mu_, so that Cancel can shut it).
  TensorPlaneChannel* plane = nullptr;
  std::unique_ptr<SendPin> pin;
  bool open = false;
  absl::Time busy_since;
  bool done = false;  // guarded by PsStep::mu_
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_CLIENT_PS_STEP_CALL_H_
