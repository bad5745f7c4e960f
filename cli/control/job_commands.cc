#include "cli/control/job_commands.h"

#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/control/command_common.h"
#include "cli/control/control_client.h"
#include "cli/control/job_csv.h"
#include "cli/control/job_format.h"
#include "cli/control/job_spec_builder.h"
#include "cli/control/progress.h"
#include "cli/control/trace_format.h"
#include "cli/framework/format.h"
#include "cli/framework/output_format.h"
#include "cli/framework/plot_script.h"
#include "common/status_macros.h"
#include "jobspec/sync_mode_name.h"
#include "study/alpha_beta/sync_bandwidth.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

constexpr char kSubmitUsage[] =
    "usage: gradsync submit [flags]   (or --file job.json [flags])\n\n"
    "Submits a training job to the coordinator and prints its id; --follow\n"
    "then shows its progress until it ends (exit 0 if it SUCCEEDED).\n"
    "Flags override the fields of --file; unset fields get defaults.\n\n"
    "  gradsync submit --workers 4 --model mlp --layers 784,256,256,10 \\\n"
    "      --dataset fashion-mnist --optimizer momentum --lr 0.05 \\\n"
    "      --batch-size 256 --steps 500 --mode ring --follow\n"
    "  gradsync submit --model synthetic --synthetic-floats 25M \\\n"
    "      --compute-ms 20 --workers 4 --steps 50 --follow\n"
    "  gradsync submit --workers 4 --mode ps --ps-shards 2 --sync sync \\\n"
    "      --switch-at 100:ring --steps 200 --follow\n";

// metrics --plot: the job (for its switches) and its metrics into
// metrics_plot.py, by way of a temporary file.
int PlotMetrics(
    ControlClient& client, const std::string& job_id,
    const std::vector<StepMetrics>& metrics,
    const google::protobuf::RepeatedPtrField<ps::ShardStats>& shards,
    const std::string& png, const CommandEnv& env) {
  absl::StatusOr<JobStatus> job = client.GetJob(job_id);
  if (!job.ok()) return ReportError(env, "metrics", false, job.status());
  if (metrics.empty()) {
    return ReportError(
        env, "metrics", false,
        absl::FailedPreconditionError(
            absl::StrCat("job ", job_id, " has no step metrics to plot yet")));
  }
  std::string input = absl::StrCat(png, ".XXXXXX");
  const int fd = mkstemp(input.data());
  absl::Status status =
      fd < 0 ? absl::InternalError(absl::StrCat("cannot write ", input))
             : absl::OkStatus();
  if (fd >= 0) {
    const std::string text =
        MetricsPlotInput(*job, MetricsToJson(job_id, metrics, shards));
    if (write(fd, text.data(), text.size()) !=
        static_cast<ssize_t>(text.size())) {
      status = absl::InternalError(absl::StrCat("cannot write ", input));
    }
    close(fd);
    if (status.ok()) {
      status = RunPlotScript(env.self_exe, "metrics_plot.py", {input, png});
    }
    unlink(input.c_str());
  }
  if (!status.ok()) return ReportError(env, "metrics", false, status);
  *env.out << "wrote " << png << " (" << job->switches_size()
           << (job->switches_size() == 1 ? " switch" : " switches")
           << " marked)\n"
           << std::flush;
  return kExitOk;
}

}  // namespace

int RunSubmit(const std::vector<std::string>& args, const CommandEnv& env) {
  CommonOptions common;
  FollowOptions follow;
  JobSpecFlags spec_flags;
  std::vector<FlagSpec> flags;
  AddJobSpecFlags(&spec_flags, &flags);
  flags.push_back(SwitchFlag(
      "follow", "show progress until the job ends (like gradsync watch)",
      &follow.follow));
  AddFollowFlags(&follow, &flags);
  SetShortName("workers", 'w', &flags);
  SetShortName("steps", 'n', &flags);
  SetShortName("follow", 'f', &flags);
  std::vector<std::string> positional;
  if (auto done = ParseCommand(args, std::move(flags), "submit", kSubmitUsage,
                               env, &common, &positional)) {
    return *done;
  }
  if (auto done = ExpectPositional(args, positional, 0, "", "submit", env)) {
    return *done;
  }
  absl::StatusOr<JobSpec> spec = BuildJobSpec(spec_flags);
  if (!spec.ok()) return ReportError(env, "submit", common.json, spec.status());
  std::unique_ptr<ControlClient> client = MakeClient(common, env);
  absl::StatusOr<std::string> job_id = client->SubmitJob(*spec);
  if (!job_id.ok()) {
    return ReportError(env, "submit", common.json, job_id.status());
  }
  if (common.json) {
    *env.out << "{\"jobId\":" << JsonQuote(*job_id) << "}\n";
  } else {
    *env.out << "submitted job " << *job_id << " (" << spec->name() << ": "
             << spec->num_workers() << " workers, "
             << SyncModeName(spec->mode());
    for (const SwitchSpec& s : spec->switches()) {
      *env.out << ", " << SyncModeName(s.mode()) << " from step " << s.step();
    }
    *env.out << ")\n";
    if (!follow.follow) {
      *env.out << "follow it with: gradsync watch " << *job_id << "\n";
    }
  }
  env.out->flush();
  if (!follow.follow) return kExitOk;
  return Follow(*client, *job_id, follow, common.json, "submit", env);
}

int RunWatch(const std::vector<std::string>& args, const CommandEnv& env) {
  CommonOptions common;
  FollowOptions follow;
  std::vector<FlagSpec> flags;
  AddFollowFlags(&follow, &flags);
  std::vector<std::string> positional;
  if (auto done =
          ParseCommand(args, std::move(flags), "watch",
                       "usage: gradsync watch JOB [flags]\n\n"
                       "Follows a job until it ends: progress, then the "
                       "final state and the\nper-step time breakdown. Exit "
                       "0 if it SUCCEEDED, 1 otherwise.\n",
                       env, &common, &positional)) {
    return *done;
  }
  if (auto done = ExpectPositional(args, positional, 1, "job", "watch", env)) {
    return *done;
  }
  std::unique_ptr<ControlClient> client = MakeClient(common, env);
  return Follow(*client, positional[0], follow, common.json, "watch", env);
}

int RunStatus(const std::vector<std::string>& args, const CommandEnv& env) {
  CommonOptions common;
  common.formats = ReadFormats();
  std::vector<std::string> positional;
  if (auto done =
          ParseCommand(args, {}, "status",
                       "usage: gradsync status [JOB] [flags]\n\n"
                       "One job (state, step, accuracy, rank placement) or "
                       "a table of all jobs.\n",
                       env, &common, &positional)) {
    return *done;
  }
  if (positional.size() > 1) {
    return ExpectPositional(args, positional, 1, "job", "status", env).value();
  }
  std::unique_ptr<ControlClient> client = MakeClient(common, env);
  if (positional.size() == 1) {
    absl::StatusOr<JobStatus> job = client->GetJob(positional[0]);
    if (!job.ok()) return ReportError(env, "status", common.json, job.status());
    if (common.output == "json") {
      *env.out << MessageToJson(*job) << "\n";
    } else if (common.output == "csv") {
      ListJobsResponse one;
      *one.add_jobs() = *job;
      *env.out << JobsToCsv(one);
    } else {
      *env.out << FormatJobDetail(*job, NowSeconds(env));
    }
  } else {
    absl::StatusOr<ListJobsResponse> jobs = client->ListJobs();
    if (!jobs.ok()) {
      return ReportError(env, "status", common.json, jobs.status());
    }
    if (common.output == "json") {
      *env.out << MessageToJson(*jobs) << "\n";
    } else if (common.output == "csv") {
      *env.out << JobsToCsv(*jobs);
    } else {
      *env.out << FormatJobsTable(*jobs, NowSeconds(env),
                                  common.output == "wide");
    }
  }
  env.out->flush();
  return kExitOk;
}

int RunCancel(const std::vector<std::string>& args, const CommandEnv& env) {
  CommonOptions common;
  std::vector<std::string> positional;
  if (auto done = ParseCommand(args, {}, "cancel",
                               "usage: gradsync cancel JOB [flags]\n\n"
                               "Cancels a job: its ranks stop and it ends "
                               "CANCELLED.\n",
                               env, &common, &positional)) {
    return *done;
  }
  if (auto done = ExpectPositional(args, positional, 1, "job", "cancel", env)) {
    return *done;
  }
  std::unique_ptr<ControlClient> client = MakeClient(common, env);
  absl::StatusOr<JobStatus> job = client->CancelJob(positional[0]);
  if (!job.ok()) return ReportError(env, "cancel", common.json, job.status());
  if (common.json) {
    *env.out << MessageToJson(*job) << "\n";
  } else {
    *env.out << "cancelled job " << job->job_id() << " (now "
             << JobStateName(job->state()) << ")\n";
  }
  env.out->flush();
  return kExitOk;
}

int RunMetrics(const std::vector<std::string>& args, const CommandEnv& env) {
  CommonOptions common;
  common.formats = {"csv", "table", "wide", "json", "trace"};
  std::vector<FlagSpec> flags;
  std::string plot;
  flags.push_back(StringFlag(
      "plot", "FILE",
      "instead: a PNG of each rank's step time split (compute, comm, idle) "
      "over the steps, switches marked (python3-matplotlib)",
      &plot));
  bool shards_only = false;
  flags.push_back(FlagSpec{"shards", "",
                           "csv: the parameter-server shards' counters "
                           "instead of the step metrics",
                           [&shards_only](absl::string_view) {
                             shards_only = true;
                             return absl::OkStatus();
                           }});
  double link_gbps = 0;
  double node_link_gbps = 0;
  flags.push_back(FlagSpec{
      "link-gbps", "B",
      "table: a rank's link bandwidth in GB/s; adds the ideal busbw "
      "(B on one node; min(I(N-1)Q/(N(Q-1)), B(N-1)/(N-Q)) on Q nodes of P "
      "ranks) and each row's share of it",
      [&link_gbps](absl::string_view value) -> absl::Status {
        ASSIGN_OR_RETURN(link_gbps, ParseDoubleValue("--link-gbps", value, 0));
        return absl::OkStatus();
      }});
  flags.push_back(FlagSpec{
      "node-link-gbps", "I",
      "table, with --link-gbps: a node's link to the others in GB/s "
      "(jobs on more than one host; default: I = B, as with one rank and "
      "one NIC per node)",
      [&node_link_gbps](absl::string_view value) -> absl::Status {
        ASSIGN_OR_RETURN(node_link_gbps,
                         ParseDoubleValue("--node-link-gbps", value, 0));
        return absl::OkStatus();
      }});
  std::vector<std::string> positional;
  if (auto done =
          ParseCommand(args, std::move(flags), "metrics",
                       "usage: gradsync metrics JOB "
                       "[-o csv|table|wide|json|trace] [--shards]\n"
                       "                        [--plot FILE.png]\n"
                       "                        [--link-gbps B "
                       "[--node-link-gbps I]]\n\n"
                       "Every step metric of every rank (times in seconds, "
                       "bytes, loss, mode),\nsorted by step then rank, and "
                       "the latest counters of each parameter-\nserver "
                       "shard (PS jobs): csv prints one table, the steps or "
                       "with\n--shards the shards; json has both (the "
                       "shards under \"shards\"); table\nshows means per "
                       "rank and per sync mode and the shard table; trace "
                       "is a\nChrome trace of every rank's steps (open it in "
                       "ui.perfetto.dev or\nchrome://tracing); wide is the "
                       "table. --format and --json are the old\nspellings "
                       "of -o.\n\n"
                       "algbw = S / t, S the gradient's bytes and t the time "
                       "its synchronisation\nwas busy; busbw = algbw * "
                       "2(N-1)/N on the ring, * 2 max(1, N/K) on a PS\nof K "
                       "shards (nccl-tests' definitions; per step in csv and "
                       "json). The\ntable's are time-weighted means; "
                       "--link-gbps compares them with the busbw\nthe "
                       "cluster's links allow.\n",
                       env, &common, &positional)) {
    return *done;
  }
  if (auto done =
          ExpectPositional(args, positional, 1, "job", "metrics", env)) {
    return *done;
  }
  const std::string format =
      common.output == "wide" ? std::string("table") : common.output;
  if ((link_gbps > 0 || node_link_gbps > 0) && format != "table") {
    return ReportError(env, "metrics", common.json,
                       absl::InvalidArgumentError(
                           "--link-gbps and --node-link-gbps apply to "
                           "--format table (-o table); csv and json have "
                           "each step's "
                           "busbw_gbps"));
  }
  if (node_link_gbps > 0 && link_gbps <= 0) {
    return ReportError(
        env, "metrics", common.json,
        absl::InvalidArgumentError("--node-link-gbps needs --link-gbps (B, the "
                                   "links within a node)"));
  }
  std::unique_ptr<ControlClient> client = MakeClient(common, env);
  absl::StatusOr<GetMetricsResponse> response =
      client->GetMetrics(positional[0]);
  if (!response.ok()) {
    return ReportError(env, "metrics", common.json, response.status());
  }
  double ideal = 0;
  if (link_gbps > 0) {
    absl::StatusOr<JobStatus> job = client->GetJob(positional[0]);
    // Without --node-link-gbps a node's link is taken to be as fast as a
    // rank's (I = B); DescribeIdeal's line shows both.
    absl::StatusOr<ClusterLinks> links =
        job.ok()
            ? JobClusterLinks(*job, link_gbps,
                              node_link_gbps > 0 ? node_link_gbps : link_gbps)
            : absl::StatusOr<ClusterLinks>(job.status());
    absl::StatusOr<double> best = links.ok()
                                      ? IdealBusBandwidth(*links)
                                      : absl::StatusOr<double>(links.status());
    if (!best.ok()) {
      return ReportError(env, "metrics", common.json, best.status());
    }
    ideal = *best;
    *env.out << DescribeIdeal(*links, ideal)
             << (links->nodes > 1 && node_link_gbps <= 0
                     ? " (I = B: --node-link-gbps gives a node's own link)"
                     : "")
             << "\n\n";
  }
  const std::vector<StepMetrics> metrics = SortedMetrics(response->metrics());
  const auto& shards = response->shards();
  if (!plot.empty()) {
    return PlotMetrics(*client, positional[0], metrics, shards, plot, env);
  }
  if (format == "json") {
    *env.out << MetricsToJson(positional[0], metrics, shards);
  } else if (format == "trace") {
    *env.out << MetricsToChromeTrace(positional[0], metrics);
  } else if (format == "table") {
    const std::vector<StepBreakdown> rows = ComputeBreakdown(metrics);
    *env.out << (rows.empty()
                     ? std::string("no step metrics yet\n")
                     : absl::StrCat("per-step means:\n",
                                    FormatBreakdownTable(rows, "RANK", ideal)));
    const std::vector<StepBreakdown> modes = ComputeModeBreakdown(metrics);
    if (!modes.empty()) {
      *env.out << "\nper-step means by sync mode:\n"
               << FormatBreakdownTable(modes, "MODE", ideal);
    }
    if (!shards.empty()) {
      *env.out << "\nparameter-server shards:\n" << FormatShardTable(shards);
    }
  } else if (shards_only) {
    *env.out << ShardsToCsv(shards);
  } else {
    *env.out << MetricsToCsv(metrics);
  }
  env.out->flush();
  return kExitOk;
}

int RunWorkers(const std::vector<std::string>& args, const CommandEnv& env) {
  CommonOptions common;
  common.formats = ReadFormats();
  std::vector<std::string> positional;
  if (auto done = ParseCommand(args, {}, "workers",
                               "usage: gradsync workers [flags]\n\n"
                               "The registered workers: devices, state, free "
                               "devices, jobs.\n",
                               env, &common, &positional)) {
    return *done;
  }
  if (auto done = ExpectPositional(args, positional, 0, "", "workers", env)) {
    return *done;
  }
  std::unique_ptr<ControlClient> client = MakeClient(common, env);
  absl::StatusOr<ListWorkersResponse> workers = client->ListWorkers();
  if (!workers.ok()) {
    return ReportError(env, "workers", common.json, workers.status());
  }
  if (common.output == "json") {
    *env.out << MessageToJson(*workers) << "\n";
  } else if (common.output == "csv") {
    *env.out << WorkersToCsv(*workers);
  } else {  // table and wide: the table has every column already
    *env.out << FormatWorkersTable(*workers, NowSeconds(env));
  }
  env.out->flush();
  return kExitOk;
}

int RunSwitch(const std::vector<std::string>& args, const CommandEnv& env) {
  CommonOptions common;
  std::vector<std::string> positional;
  if (auto done =
          ParseCommand(args, {}, "switch",
                       "usage: gradsync switch JOB ps|ring [flags]\n\n"
                       "Asks a pending or running job to synchronise "
                       "through the parameter\nserver (ps) or the peer "
                       "ring (ring). The ranks apply it at the next\nstep "
                       "boundary they agree on; `gradsync status JOB` "
                       "shows the step.\n",
                       env, &common, &positional)) {
    return *done;
  }
  if (positional.size() == 1) {
    return ReportUsageError(
        env, "switch", args,
        absl::InvalidArgumentError("name the mode to switch to: ps or ring"));
  }
  if (auto done = ExpectPositional(args, positional, 2, "job", "switch", env)) {
    return *done;
  }
  const absl::StatusOr<SyncMode> parsed =
      ParseSyncModeName(positional[1], "the mode");
  if (!parsed.ok()) {
    return ReportUsageError(env, "switch", args, parsed.status());
  }
  const SyncMode mode = *parsed;
  const std::string mode_name = SyncModeName(mode);
  std::unique_ptr<ControlClient> client = MakeClient(common, env);
  absl::StatusOr<SwitchJobResponse> response =
      client->SwitchJob(positional[0], mode);
  if (!response.ok()) {
    return ReportError(env, "switch", common.json, response.status());
  }
  if (common.json) {
    *env.out << MessageToJson(*response) << "\n";
  } else {
    const JobStatus& job = response->status();
    *env.out << "job " << job.job_id() << ": switch to " << mode_name
             << " requested (epoch " << response->epoch() << "); "
             << (job.state() == JOB_STATE_PENDING
                     ? "the job is pending: its ranks get it with their "
                       "assignment and apply it at the first step boundary "
                       "they agree on"
                     : "it applies at the next step boundary the ranks "
                       "agree on")
             << "\n";
    if (job.mode() == mode && job.state() != JOB_STATE_PENDING) {
      *env.out << "(the job already runs in " << mode_name
               << " mode: it stays there unless an earlier request is "
                  "still pending)\n";
    }
    *env.out << "see when it took effect with: gradsync status " << job.job_id()
             << "\n";
  }
  env.out->flush();
  return kExitOk;
}

int SubmitMain(const std::vector<std::string>& args) {
  return RunSubmit(args, ProcessCommandEnv());
}
int WatchMain(const std::vector<std::string>& args) {
  return RunWatch(args, ProcessCommandEnv());
}
int StatusMain(const std::vector<std::string>& args) {
  return RunStatus(args, ProcessCommandEnv());
}
int CancelMain(const std::vector<std::string>& args) {
  return RunCancel(args, ProcessCommandEnv());
}
int MetricsMain(const std::vector<std::string>& args) {
  return RunMetrics(args, ProcessCommandEnv());
}
int WorkersMain(const std::vector<std::string>& args) {
  return RunWorkers(args, ProcessCommandEnv());
}
int SwitchMain(const std::vector<std::string>& args) {
  return RunSwitch(args, ProcessCommandEnv());
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
