// The report pipe between an entrypoint job's process and its worker
// daemon: the gradsync package (python/gradsync, through the C API in
// python/capi/) writes one frame per step to fd GRADSYNC_REPORT_FD, and
// the daemon forwards the StepMetrics to the coordinator with the job's
// MetricsReporter, as it does for its own ranks. Each frame is a 4-byte
// little-endian length, then a binary StepMetrics of at most
// kMaxReportFrameBytes.
//
//   std::string frame = EncodeReportFrame(metrics);     // the process
//   ReportReader reader;                                // the daemon
//   reader.Append(bytes_read);
//   while (auto m = reader.Next()) { ... }              // StatusOr
//
// Errors: Next returns DATA_LOSS for a frame too long or not a
// StepMetrics; the reader stays failed after that (the stream has lost its
// framing).
// Threading: a ReportReader is used by one thread.
#ifndef GRADSYNC_WORKER_LAUNCH_REPORT_WIRE_H_
#define GRADSYNC_WORKER_LAUNCH_REPORT_WIRE_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/coordinator.pb.h"

namespace gradsync {

inline constexpr size_t kMaxReportFrameBytes = 64 * 1024;

std::string EncodeReportFrame(const StepMetrics& metrics);

class ReportReader {
 public:
  void Append(absl::string_view bytes);
  // The next whole frame's metrics, nothing while none is complete.
  [[nodiscard]] absl::StatusOr<std::optional<StepMetrics>> Next();

 private:
  std::string buffer_;
  absl::Status failed_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_LAUNCH_REPORT_WIRE_H_
