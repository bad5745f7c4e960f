// gradsync logs JOB [--rank R] [--follow]: the lines a job's workers logged
// about it, through the coordinator (GetJobLogs), so that an operator need
// not log in to each node.
#include "cli/control/logs_command.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/control/command_common.h"
#include "cli/control/job_format.h"
#include "cli/framework/format.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

constexpr char kLogsUsage[] =
    "usage: gradsync logs JOB [--rank R] [-f|--follow] [-o table|json]\n\n"
    "The lines JOB's workers logged about it (starting ranks, rendezvous,\n"
    "switches, checkpoints, failures, the end), oldest first, each with\n"
    "its time, host and rank (\"-\": the worker's own). --rank keeps one\n"
    "rank's; --follow prints new lines as they come until the job ends.\n"
    "The coordinator keeps the newest 2000 lines of each job, in memory\n"
    "only; json prints one line object per line of output.\n\n"
    "  gradsync logs job-3\n"
    "  gradsync logs job-3 --rank 2 --follow\n";

// How often --follow asks for new lines.
constexpr absl::Duration kFollowPoll = absl::Milliseconds(500);

}  // namespace

std::string FormatLogLine(const JobLogLine& line) {
  const std::string rank =
      line.rank() < 0 ? std::string("-") : absl::StrCat(line.rank());
  return absl::StrCat(
      absl::FormatTime("%Y-%m-%d %H:%M:%E3S",
                       absl::FromUnixMillis(line.time_unix_ms()),
                       absl::UTCTimeZone()),
      "  ", TerminalSafe(line.host(), 64), "  rank ", rank, "  ",
      TerminalSafe(line.text(), 4096));
}

int RunLogs(const std::vector<std::string>& args, const CommandEnv& env) {
  CommonOptions common;
  std::vector<FlagSpec> flags;
  int64_t rank = -1;
  bool follow = false;
  flags.push_back(IntFlag("rank", "only the lines about this rank", 0, &rank));
  flags.push_back(SwitchFlag(
      "follow", "print new lines as they come until the job ends", &follow));
  SetShortName("follow", 'f', &flags);
  std::vector<std::string> positional;
  if (auto done = ParseCommand(args, std::move(flags), "logs", kLogsUsage, env,
                               &common, &positional)) {
    return *done;
  }
  if (auto done = ExpectPositional(args, positional, 1, "job", "logs", env)) {
    return *done;
  }
  std::unique_ptr<ControlClient> client = MakeClient(common, env);
  GetJobLogsRequest request;
  request.set_job_id(positional[0]);
  if (rank >= 0) request.set_rank(static_cast<int>(rank));
  bool saw_end = false;
  for (;;) {
    absl::StatusOr<GetJobLogsResponse> response = client->GetJobLogs(request);
    if (!response.ok()) {
      return ReportError(env, "logs", common.json, response.status());
    }
    if (response->dropped() > 0 && !common.json) {
      *env.err << "gradsync logs: " << response->dropped()
               << " older lines are no longer kept by the coordinator\n";
    }
    for (const JobLogLine& line : response->lines()) {
      *env.out << (common.json ? MessageToJson(line) : FormatLogLine(line))
               << "\n";
    }
    env.out->flush();
    const bool more =
        response->next_seq() > request.from_seq() && response->lines_size() > 0;
    request.set_from_seq(response->next_seq());
    if (more) continue;  // perhaps a full page: ask again at once
    if (!follow || saw_end) return kExitOk;
    // After the end, one more look: a worker's last lines may come after
    // the report that ended the job.
    saw_end = IsTerminal(response->state());
    absl::SleepFor(saw_end ? 2 * kFollowPoll : kFollowPoll);
  }
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
