#include "worker/launch/report_wire.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace gradsync {

std::string EncodeReportFrame(const StepMetrics& metrics) {
  const std::string body = metrics.SerializeAsString();
  const uint32_t n = static_cast<uint32_t>(body.size());
  std::string frame;
  frame.reserve(4 + body.size());
  for (int i = 0; i < 4; ++i) frame.push_back(static_cast<char>(n >> (8 * i)));
  frame += body;
  return frame;
}

void ReportReader::Append(absl::string_view bytes) {
  if (failed_.ok()) buffer_.append(bytes.data(), bytes.size());
}

absl::StatusOr<std::optional<StepMetrics>> ReportReader::Next() {
  if (!failed_.ok()) return failed_;
  if (buffer_.size() < 4) return std::optional<StepMetrics>();
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) {
    n |= uint32_t{static_cast<unsigned char>(buffer_[i])} << (8 * i);
  }
  if (n > kMaxReportFrameBytes) {
    failed_ = absl::DataLossError(absl::StrCat(
        "a step report of ", n, " bytes (at most ", kMaxReportFrameBytes,
        "): something other than the gradsync package wrote to "
        "GRADSYNC_REPORT_FD"));
    buffer_.clear();
    return failed_;
  }
  if (buffer_.size() < 4 + size_t{n}) return std::optional<StepMetrics>();
  StepMetrics metrics;
  if (!metrics.ParseFromArray(buffer_.data() + 4, static_cast<int>(n))) {
    failed_ = absl::DataLossError(
        "a step report that is not a StepMetrics: something other than the "
        "gradsync package wrote to GRADSYNC_REPORT_FD");
    buffer_.clear();
    return failed_;
  }
  buffer_.erase(0, 4 + size_t{n});
  return std::optional<StepMetrics>(std::move(metrics));
}

}  // namespace gradsync
