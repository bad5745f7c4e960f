// What the C API's source files share (not part of gradsync_c.h): the
// handles' definitions and the error convention (gs_last_error).
#ifndef GRADSYNC_PYTHON_CAPI_CAPI_INTERNAL_H_
#define GRADSYNC_PYTHON_CAPI_CAPI_INTERNAL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "proto/coordinator.pb.h"
#include "security/tls.h"
#include "server/coordinator/coordinator_client.h"
#include "worker/daemon/coordinator_store.h"

struct gs_buffer {
  std::string bytes;
};

struct gs_session {
  gradsync::RankLaunch launch;
  std::shared_ptr<gradsync::CoordinatorClient> client;
  std::unique_ptr<gradsync::CoordinatorStore> store;
  // How this process reaches the coordinator and the job's PS shards.
  gradsync::GrpcSecurity security;
  int report_fd = -1;
  absl::Mutex report_mu;
  // Where the job's PS shards are: the assignment's, then those of the
  // newest runtime switch directive that named some.
  absl::Mutex ps_mu;
  std::vector<std::string> ps_addresses ABSL_GUARDED_BY(ps_mu);
};

namespace gradsync {

// This thread's last error message (gs_last_error).
std::string& LastError();

// Records `status` as this thread's last error; returns 0 for OK, else
// its code.
int Fail(const absl::Status& status);
int Fail(absl::StatusCode code, absl::string_view message);

}  // namespace gradsync

#endif  // GRADSYNC_PYTHON_CAPI_CAPI_INTERNAL_H_
