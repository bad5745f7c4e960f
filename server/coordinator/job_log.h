// The log lines a job's workers send about it (`gradsync logs`): the newest
// kMaxJobLogLines of each job, numbered in arrival order, each cut to
// kMaxJobLogLineBytes. Kept in memory only: a coordinator restarted on its
// --state-db starts each job's log afresh (numbers included).
//
// Threading: none of its own; the coordinator's state lock guards it.
#ifndef GRADSYNC_SERVER_COORDINATOR_JOB_LOG_H_
#define GRADSYNC_SERVER_COORDINATOR_JOB_LOG_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_field.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_client.h"

namespace gradsync {

inline constexpr size_t kMaxJobLogLines = 2000;
inline constexpr size_t kMaxJobLogLineBytes = 1024;

class JobLog {
 public:
  // Appends `lines` from `worker_id` on `host`, numbering them and cutting
  // long texts; drops the oldest beyond kMaxJobLogLines.
  void Append(const google::protobuf::RepeatedPtrField<JobLogLine>& lines,
              absl::string_view worker_id, absl::string_view host);

  // The lines numbered `from_seq` on (all of them, or those about `rank`),
  // at most `limit`; next_seq is where to go on, and dropped counts the
  // lines from `from_seq` on that are no longer kept.
  GetJobLogsResponse Read(int64_t from_seq, std::optional<int> rank,
                          size_t limit) const;

  int64_t next_seq() const { return next_seq_; }

 private:
  std::deque<JobLogLine> lines_;
  int64_t next_seq_ = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_JOB_LOG_H_
