#include "server/coordinator/job_log.h"

#include <algorithm>
#include <string>

namespace gradsync {
namespace {

// `text` cut to at most kMaxJobLogLineBytes, at a UTF-8 character boundary,
// with " [cut]" appended when cut.
std::string Cut(const std::string& text) {
  if (text.size() <= kMaxJobLogLineBytes) return text;
  constexpr absl::string_view kMark = " [cut]";
  size_t end = kMaxJobLogLineBytes - kMark.size();
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
    --end;
  }
  return text.substr(0, end) + std::string(kMark);
}

}  // namespace

void JobLog::Append(const google::protobuf::RepeatedPtrField<JobLogLine>& lines,
                    absl::string_view worker_id, absl::string_view host) {
  for (const JobLogLine& given : lines) {
    JobLogLine line;
    line.set_seq(next_seq_++);
    line.set_worker_id(std::string(worker_id));
    line.set_host(std::string(host));
    line.set_rank(given.rank() < 0 ? -1 : given.rank());
    line.set_time_unix_ms(given.time_unix_ms());
    line.set_text(Cut(given.text()));
    lines_.push_back(std::move(line));
    if (lines_.size() > kMaxJobLogLines) lines_.pop_front();
  }
}

GetJobLogsResponse JobLog::Read(int64_t from_seq, std::optional<int> rank,
                                size_t limit) const {
  GetJobLogsResponse response;
  from_seq = std::clamp<int64_t>(from_seq, 0, next_seq_);
  const int64_t first_kept = lines_.empty() ? next_seq_ : lines_.front().seq();
  response.set_dropped(std::max<int64_t>(0, first_kept - from_seq));
  int64_t next = std::max(from_seq, first_kept);
  for (size_t i = static_cast<size_t>(next - first_kept);
       i < lines_.size() && static_cast<size_t>(response.lines_size()) < limit;
       ++i) {
    const JobLogLine& line = lines_[i];
    next = line.seq() + 1;
    if (rank.has_value() && line.rank() != *rank) continue;
    *response.add_lines() = line;
  }
  response.set_next_seq(next);
  return response;
}

}  // namespace gradsync
