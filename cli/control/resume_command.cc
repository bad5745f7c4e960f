// gradsync resume JOB: resubmits an ended job's spec from its newest
// checkpoint (or --from FILE), optionally with more steps.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/control/command_common.h"
#include "cli/control/job_commands.h"
#include "cli/control/job_format.h"
#include "cli/framework/format.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

constexpr char kResumeUsage[] =
    "usage: gradsync resume JOB [--from FILE] [--steps N] [--workers N]\n"
    "                       [--follow] [flags]\n\n"
    "Submits JOB's spec again as a new job that starts from JOB's newest\n"
    "checkpoint (`gradsync status JOB` shows it as saved:), or from FILE:\n"
    "its parameters, optimizer state and step. JOB must have ended; a\n"
    "SUCCEEDED job goes on only with --steps above the steps it ran.\n\n"
    "  gradsync resume job-3 --follow          # after job-3 failed\n"
    "  gradsync resume job-3 --steps 2000      # train on past the end\n"
    "  gradsync resume job-3 --workers 2       # on the nodes that are left\n";

struct ResumeFlags {
  std::string from;
  int64_t steps = 0;
  int64_t workers = 0;
};

// The spec of the new job: `job`'s, starting from its checkpoint.
[[nodiscard]] absl::StatusOr<JobSpec> ResumedSpec(const JobStatus& job,
                                                  const ResumeFlags& flags) {
  if (!IsTerminal(job.state())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job.job_id(), " is ", JobStateName(job.state()),
        "; resume it once it ended, or stop it first: gradsync cancel ",
        job.job_id()));
  }
  JobSpec spec = job.spec();
  // A job that wrote no checkpoint of its own (say, a restart cancelled
  // while it waited for devices) goes on from the one it started from.
  const std::string from = !flags.from.empty() ? flags.from
                           : !job.last_checkpoint().empty()
                               ? job.last_checkpoint()
                               : spec.checkpoint().resume_from();
  if (from.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job.job_id(), " reported no checkpoint (",
        spec.checkpoint().directory().empty()
            ? "it was submitted without --checkpoint-dir"
            : "it ended before writing its first",
        "); name one with --from FILE, or submit the job again from step 0"));
  }
  if (flags.steps > 0) {
    spec.set_steps(flags.steps);
    spec.set_epochs(0);
  }
  if (flags.workers > 0) {
    spec.set_num_workers(static_cast<int32_t>(
        std::min<int64_t>(flags.workers, std::numeric_limits<int32_t>::max())));
  }
  if (job.state() == JOB_STATE_SUCCEEDED && flags.steps == 0 &&
      flags.from.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job.job_id(),
                     " SUCCEEDED: its last checkpoint is its end; "
                     "pass --steps N (more than ",
                     job.last_checkpoint_steps(), ") to train on from it"));
  }
  spec.mutable_checkpoint()->set_resume_from(from);
  return spec;
}

}  // namespace

int RunResume(const std::vector<std::string>& args, const CommandEnv& env) {
  CommonOptions common;
  FollowOptions follow;
  ResumeFlags resume;
  std::vector<FlagSpec> flags = {
      StringFlag("from", "FILE",
                 "the checkpoint to start from (default: the job's newest)",
                 &resume.from),
      IntFlag("steps", "the new job's total steps (default: the job's)", 1,
              &resume.steps),
      IntFlag("workers",
              "the new job's ranks (default: the job's); the global batch "
              "stays, so the run goes on with the same data",
              1, &resume.workers),
      SwitchFlag("follow", "show progress until the new job ends",
                 &follow.follow)};
  AddFollowFlags(&follow, &flags);
  SetShortName("workers", 'w', &flags);
  SetShortName("steps", 'n', &flags);
  SetShortName("follow", 'f', &flags);
  std::vector<std::string> positional;
  if (auto done = ParseCommand(args, std::move(flags), "resume", kResumeUsage,
                               env, &common, &positional)) {
    return *done;
  }
  if (auto done = ExpectPositional(args, positional, 1, "job", "resume", env)) {
    return *done;
  }
  std::unique_ptr<ControlClient> client = MakeClient(common, env);
  absl::StatusOr<JobStatus> job = client->GetJob(positional[0]);
  if (!job.ok()) return ReportError(env, "resume", common.json, job.status());
  absl::StatusOr<JobSpec> spec = ResumedSpec(*job, resume);
  if (!spec.ok()) return ReportError(env, "resume", common.json, spec.status());
  absl::StatusOr<std::string> job_id = client->SubmitJob(*spec);
  if (!job_id.ok()) {
    return ReportError(env, "resume", common.json, job_id.status());
  }
  if (common.json) {
    *env.out << "{\"jobId\":" << JsonQuote(*job_id)
             << ",\"resumes\":" << JsonQuote(job->job_id())
             << ",\"resumeFrom\":"
             << JsonQuote(spec->checkpoint().resume_from()) << "}\n";
  } else {
    *env.out << "submitted job " << *job_id << ": " << job->job_id()
             << " resumed from " << spec->checkpoint().resume_from() << "\n";
    if (!follow.follow) {
      *env.out << "follow it with: gradsync watch " << *job_id << "\n";
    }
  }
  env.out->flush();
  if (!follow.follow) return kExitOk;
  return Follow(*client, *job_id, follow, common.json, "resume", env);
}

int ResumeMain(const std::vector<std::string>& args) {
  return RunResume(args, ProcessCommandEnv());
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
