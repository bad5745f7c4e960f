#include "cli/control/job_format.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/framework/format.h"
#include "jobspec/job_spec.h"
#include "models/model_kinds.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

// Long messages are cut in tables; `status JOB` prints them whole.
constexpr size_t kTableMessageWidth = 60;
// The longest value of a `status JOB` line (a long error message stays
// whole; a megabyte name does not).
constexpr size_t kMaxDetailBytes = 4096;

std::string StripPrefix(const std::string& name, absl::string_view prefix) {
  if (absl::StartsWith(name, prefix)) return name.substr(prefix.size());
  return name;
}

std::string Truncate(const std::string& text, size_t width) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() <= width) return line;
  return absl::StrCat(line.substr(0, width - 3), "...");
}

std::string FormatAccuracy(const JobStatus& job) {
  if (job.state() != JOB_STATE_SUCCEEDED && job.test_accuracy() == 0) {
    return "-";
  }
  return absl::StrFormat("%.4f", job.test_accuracy());
}

// How long the job has run (or ran), from its start, or its age while it
// waits.
std::string JobDuration(const JobStatus& job, double now) {
  if (job.start_time() > 0) {
    const double end = job.end_time() > 0 ? job.end_time() : now;
    return FormatElapsed(end - job.start_time());
  }
  if (job.submit_time() > 0) {
    const double end = job.end_time() > 0 ? job.end_time() : now;
    return FormatElapsed(end - job.submit_time());
  }
  return "-";
}

// Steps completed. JobStatus.step is the last step index every rank
// reported (0-based), and 0 before any report too: a running job at index
// 0 shows 0 until its second step.
int64_t StepsDone(const JobStatus& job) {
  if (job.step() > 0 || job.state() == JOB_STATE_SUCCEEDED) {
    return job.step() + 1;
  }
  return 0;
}

std::string TotalSteps(const JobSpec& spec) {
  if (spec.steps() > 0) return absl::StrCat(spec.steps());
  if (spec.epochs() > 0) return absl::StrFormat("%g epochs", spec.epochs());
  return "?";
}

std::string FormatTime(double unix_seconds) {
  if (unix_seconds <= 0) return "-";
  return absl::FormatTime(
      "%Y-%m-%d %H:%M:%S",
      absl::FromUnixSeconds(static_cast<int64_t>(std::floor(unix_seconds))),
      absl::LocalTimeZone());
}

// The mode the job runs in now (coordinators before the PS path left
// JobStatus.mode unset: the spec's then).
SyncMode CurrentMode(const JobStatus& job) {
  return job.mode() != SYNC_MODE_UNSPECIFIED ? job.mode() : job.spec().mode();
}

// "2 shards (one per server), sync, 1 MiB chunks" for status JOB.
std::string DescribePs(const JobSpec& spec) {
  const PsSpec& ps = spec.ps();
  std::string text = ps.shards() > 0
                         ? absl::StrCat(ps.shards(), " shards")
                         : std::string("one shard per parameter server");
  const std::string sync = ps.sync().empty() ? "sync" : ps.sync();
  absl::StrAppend(&text, ", ", sync);
  if (sync == "ssp")
    absl::StrAppend(&text, " (staleness ", ps.staleness(), ")");
  if (ps.chunk_bytes() > 0) {
    absl::StrAppend(&text, ", ",
                    FormatBytes(static_cast<double>(ps.chunk_bytes())),
                    " chunks");
  }
  return text;
}

bool UsesPs(const JobStatus& job) {
  if (job.spec().mode() == SYNC_MODE_PS || job.mode() == SYNC_MODE_PS ||
      !job.ps_addresses().empty()) {
    return true;
  }
  for (const SwitchSpec& s : job.spec().switches()) {
    if (s.mode() == SYNC_MODE_PS) return true;
  }
  return false;
}

// "nccl", "tcp", or "nccl (auto)" when the spec left the choice to the
// workers (train_config.h: NCCL for an mlp on cuda devices); then
// ", algorithm hierarchical" when the spec forces the TCP ring's
// all-reduce algorithm.
std::string RingTransport(const JobSpec& spec) {
  const std::string& backend = spec.ring_backend();
  std::string text;
  if (!backend.empty() && backend != "auto") {
    text = backend;
  } else {
    text = absl::StrCat(RingRunsOnNccl(spec) ? "nccl" : "tcp", " (auto)");
  }
  const std::string& algorithm = spec.ring_algorithm();
  if (!algorithm.empty() && algorithm != "auto") {
    absl::StrAppend(&text, ", algorithm ", algorithm);
  }
  const std::string& dtype = spec.grad_dtype();
  if (!dtype.empty() && dtype != "fp32") {
    absl::StrAppend(&text, ", ", dtype, " gradients");
  }
  return text;
}

}  // namespace

std::string JobStateName(JobState state) {
  return StripPrefix(JobState_Name(state), "JOB_STATE_");
}

std::string WorkerStateName(WorkerState state) {
  return StripPrefix(WorkerState_Name(state), "WORKER_STATE_");
}

bool IsTerminal(JobState state) {
  return state == JOB_STATE_SUCCEEDED || state == JOB_STATE_FAILED ||
         state == JOB_STATE_CANCELLED;
}

std::string FormatDevices(
    const google::protobuf::RepeatedPtrField<Device>& devices) {
  std::vector<std::pair<std::string, std::vector<int>>> kinds;
  for (const Device& device : devices) {
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) {
      return k.first == device.kind();
    });
    if (it == kinds.end()) {
      kinds.push_back({device.kind(), {}});
      it = kinds.end() - 1;
    }
    it->second.push_back(device.index());
  }
  std::vector<std::string> parts;
  for (const auto& [kind, indices] : kinds) {
    parts.push_back(absl::StrCat(kind, ":", absl::StrJoin(indices, ",")));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, " ");
}

std::string FormatJobsTable(const ListJobsResponse& jobs, double now,
                            bool wide) {
  std::vector<std::vector<std::string>> rows;
  for (const JobStatus& job : jobs.jobs()) {
    rows.push_back({job.job_id(), job.spec().name(), JobStateName(job.state()),
                    SyncModeName(CurrentMode(job)),
                    absl::StrCat(job.spec().num_workers()),
                    absl::StrCat(StepsDone(job), "/", TotalSteps(job.spec())),
                    FormatAccuracy(job), JobDuration(job, now)});
    if (wide) {
      std::vector<std::string> hosts;
      for (const RankPlacement& rank : job.ranks()) {
        if (std::find(hosts.begin(), hosts.end(), rank.host()) == hosts.end()) {
          hosts.push_back(rank.host());
        }
      }
      rows.back().push_back(hosts.empty() ? "-" : absl::StrJoin(hosts, ","));
      rows.back().push_back(job.restart_of().empty() ? "-" : job.restart_of());
    }
    rows.back().push_back(Truncate(
        job.message(), wide ? kMaxTableCellBytes : kTableMessageWidth));
  }
  if (rows.empty()) return "no jobs\n";
  std::vector<std::string> header = {"JOB",     "NAME", "STATE",    "MODE",
                                     "WORKERS", "STEP", "ACCURACY", "TIME"};
  if (wide) {
    header.push_back("HOSTS");
    header.push_back("RESTART_OF");
  }
  header.push_back("MESSAGE");
  return FormatTable(header, rows);
}

std::string FormatJobDetail(const JobStatus& job, double now) {
  const JobSpec& spec = job.spec();
  std::string out;
  auto line = [&out](absl::string_view key, absl::string_view value) {
    absl::StrAppendFormat(&out, "%-10s %s\n", absl::StrCat(key, ":"),
                          TerminalSafe(value, kMaxDetailBytes,
                                       /*keep_newlines=*/true));
  };
  line("job", job.job_id());
  line("name", spec.name());
  line("state", JobStateName(job.state()));
  if (!job.message().empty()) line("message", job.message());
  line("steps",
       absl::StrCat(StepsDone(job), " of ", TotalSteps(spec), " done",
                    job.first_step() > 0
                        ? absl::StrCat(" (from step ", job.first_step(), ")")
                        : ""));
  std::string model = spec.model().kind();
  const ModelKindSpec* kind = FindModelKind(spec.model().kind());
  if (kind != nullptr && kind->describe != nullptr) {
    const std::string described = kind->describe(spec.model());
    absl::StrAppend(&model, absl::StartsWith(described, ":") ? "" : " ",
                    described);
  }
  if (kind != nullptr && kind->runner == ModelKindSpec::Runner::kOwnRunner) {
    line("model", model);
    line("training",
         absl::StrFormat("%s, %d workers", SyncModeName(spec.mode()),
                         spec.num_workers()));
  } else {
    line("model", model);
    line("dataset", spec.dataset().name());
    line("training",
         absl::StrFormat("%s, %d workers, batch %d, %s lr %g, seed %d",
                         SyncModeName(spec.mode()), spec.num_workers(),
                         spec.batch_size(), spec.optimizer().name(),
                         spec.optimizer().learning_rate(), spec.seed()));
  }
  line("mode", SyncModeName(CurrentMode(job)));
  line("ring", RingTransport(spec));
  if (UsesPs(job)) line("ps", DescribePs(spec));
  if (!job.ps_addresses().empty()) {
    std::vector<std::string> shards;
    for (int k = 0; k < job.ps_addresses_size(); ++k) {
      shards.push_back(absl::StrCat(k, "=", job.ps_addresses(k)));
    }
    line("ps shards", absl::StrJoin(shards, " "));
  }
  if (!spec.switches().empty()) {
    line("scripted", absl::StrJoin(spec.switches(), ", ",
                                   [](std::string* out, const SwitchSpec& s) {
                                     absl::StrAppend(out,
                                                     SyncModeName(s.mode()),
                                                     " from step ", s.step());
                                   }));
  }
  if (!spec.checkpoint().directory().empty()) {
    line("ckpt",
         absl::StrCat(
             spec.checkpoint().directory(),
             spec.checkpoint().every_steps() > 0
                 ? absl::StrCat(", every ", spec.checkpoint().every_steps(),
                                " steps and at the end")
                 : ", at the end"));
  }
  if (!job.last_checkpoint().empty()) {
    line("saved", absl::StrCat(job.last_checkpoint(), " (",
                               job.last_checkpoint_steps(), " steps done)"));
  }
  if (!spec.checkpoint().resume_from().empty()) {
    line("resumed", absl::StrCat("from ", spec.checkpoint().resume_from()));
  }
  if (!job.restart_of().empty()) {
    line("restarts", absl::StrCat(job.restart_of(), " (", spec.max_restarts(),
                                  " more allowed)"));
  }
  if (!job.restarted_as().empty()) {
    line("restarted", absl::StrCat("as ", job.restarted_as()));
  }
  if (job.switch_requests() > 0) {
    line("requests",
         absl::StrCat(job.switch_requests(), " runtime switch request",
                      job.switch_requests() == 1 ? "" : "s",
                      " (gradsync switch)"));
  }
  line("submitted", FormatTime(job.submit_time()));
  if (job.start_time() > 0) line("started", FormatTime(job.start_time()));
  if (job.end_time() > 0) line("ended", FormatTime(job.end_time()));
  line("time", JobDuration(job, now));
  // An entrypoint evaluates itself (its output is in `gradsync logs`).
  if ((job.state() == JOB_STATE_SUCCEEDED &&
       spec.model().kind() != "entrypoint") ||
      job.test_accuracy() != 0) {
    line("accuracy", absl::StrFormat("%.4f (test loss %.4f)",
                                     job.test_accuracy(), job.test_loss()));
  }
  if (job.ranks().empty()) {
    absl::StrAppend(&out, "\nno ranks placed yet\n");
    return out;
  }
  std::vector<std::vector<std::string>> rows;
  for (const RankPlacement& rank : job.ranks()) {
    rows.push_back(
        {absl::StrCat(rank.rank()), rank.worker_id(), rank.host(),
         absl::StrCat(rank.device().kind(), ":", rank.device().index())});
  }
  absl::StrAppend(&out, "\n",
                  FormatTable({"RANK", "WORKER", "HOST", "DEVICE"}, rows));
  if (!job.switches().empty()) {
    absl::StrAppend(&out, "\nswitches:\n", FormatSwitchTable(job));
  }
  if (!job.mode_decisions().empty()) {
    // --mode auto: each decision with its reason, one per line.
    absl::StrAppend(&out, "\nauto mode decisions:\n");
    for (const ModeDecision& d : job.mode_decisions()) {
      absl::StrAppend(&out, "  step ", d.step(), ": ", d.reason(), "\n");
    }
  }
  return out;
}

std::string FormatSwitchTable(const JobStatus& job) {
  std::vector<std::vector<std::string>> rows;
  for (const SwitchRecord& s : job.switches()) {
    rows.push_back({absl::StrCat(s.step()), SyncModeName(s.from_mode()),
                    SyncModeName(s.to_mode()),
                    s.epoch() > 0 ? absl::StrCat("request ", s.epoch())
                                  : std::string("scripted"),
                    FormatMillis(s.move_s())});
  }
  return FormatTable({"STEP", "FROM", "TO", "BY", "MOVE_MS"}, rows);
}

std::string FormatWorkersTable(const ListWorkersResponse& workers, double now) {
  std::vector<std::vector<std::string>> rows;
  for (const WorkerInfo& worker : workers.workers()) {
    const std::string heartbeat =
        worker.last_heartbeat() > 0
            ? absl::StrCat(FormatElapsed(now - worker.last_heartbeat()), " ago")
            : "-";
    rows.push_back(
        {worker.worker_id(), worker.host(), worker.address(),
         FormatDevices(worker.devices()), WorkerStateName(worker.state()),
         absl::StrCat(worker.free_devices()),
         worker.job_ids().empty() ? "-" : absl::StrJoin(worker.job_ids(), ","),
         heartbeat});
  }
  std::string out =
      rows.empty()
          ? "no workers registered (start some with `gradsync local up` or "
            "gradsync-worker --coordinator ADDRESS)\n"
          : FormatTable({"ID", "HOST", "ADDRESS", "DEVICES", "STATE", "FREE",
                         "JOBS", "HEARTBEAT"},
                        rows);
  if (workers.link_facts().link_gbps() > 0) {
    absl::StrAppend(
        &out,
        absl::StrFormat("links (--mode auto's model): %g GB/s of payload per "
                        "host, alpha %g us\n",
                        workers.link_facts().link_gbps(),
                        workers.link_facts().link_alpha_us()));
  }
  if (workers.parameter_servers().empty()) return out;
  std::vector<std::vector<std::string>> servers;
  for (const ParameterServerInfo& ps : workers.parameter_servers()) {
    servers.push_back(
        {ps.ps_id(), ps.host(), ps.address(), ps.lost() ? "LOST" : "LIVE",
         absl::StrCat(ps.shards()),
         ps.job_ids().empty() ? "-" : absl::StrJoin(ps.job_ids(), ","),
         ps.last_heartbeat() > 0
             ? absl::StrCat(FormatElapsed(now - ps.last_heartbeat()), " ago")
             : "-"});
  }
  absl::StrAppend(&out, "\nparameter servers:\n",
                  FormatTable({"ID", "HOST", "ADDRESS", "STATE", "SHARDS",
                               "JOBS", "HEARTBEAT"},
                              servers));
  return out;
}

std::vector<StepMetrics> SortedMetrics(
    const google::protobuf::RepeatedPtrField<StepMetrics>& metrics) {
  std::vector<StepMetrics> sorted(metrics.begin(), metrics.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const StepMetrics& a, const StepMetrics& b) {
                     if (a.step() != b.step()) return a.step() < b.step();
                     return a.rank() < b.rank();
                   });
  return sorted;
}

absl::StatusOr<ClusterLinks> JobClusterLinks(const JobStatus& job,
                                             double link_gbps,
                                             double node_link_gbps) {
  std::map<std::string, int> ranks_on;
  for (const RankPlacement& rank : job.ranks()) ++ranks_on[rank.host()];
  if (ranks_on.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("job ", job.job_id(),
                     " has no ranks placed yet, so its cluster is not known"));
  }
  ClusterLinks links;
  links.link_gbps = link_gbps;
  links.node_link_gbps = node_link_gbps;
  links.nodes = static_cast<int>(ranks_on.size());
  links.ranks_per_node = 0;
  bool even = true;
  for (const auto& [host, count] : ranks_on) {
    even = even && count == ranks_on.begin()->second;
    links.ranks_per_node = std::max(links.ranks_per_node, count);
    links.node_ranks.push_back(count);
  }
  if (even) links.node_ranks.clear();
  return links;
}

std::string DescribeIdeal(const ClusterLinks& links, double ideal_gbps) {
  std::string out = absl::StrFormat("ideal busbw %.2f GB/s (B %.2f GB/s",
                                    ideal_gbps, links.link_gbps);
  if (links.nodes > 1) {
    absl::StrAppend(&out,
                    absl::StrFormat(", I %.2f GB/s", links.node_link_gbps));
  }
  if (!links.node_ranks.empty()) {
    absl::StrAppend(&out, "; ", links.nodes, " nodes of ",
                    absl::StrJoin(links.node_ranks, "+"),
                    " ranks, the fullest binds)");
    return out;
  }
  absl::StrAppend(&out, "; ", links.nodes,
                  links.nodes == 1 ? " node, " : " nodes, ",
                  links.ranks_per_node,
                  links.ranks_per_node == 1 ? " rank" : " ranks", " each)");
  return out;
}

std::string MetricsToCsv(const std::vector<StepMetrics>& metrics) {
  std::string out = absl::StrCat(CsvHeader(*StepMetrics::descriptor()), "\n");
  for (const StepMetrics& metric : metrics) {
    absl::StrAppend(&out, CsvRow(metric), "\n");
  }
  return out;
}

std::string MetricsToJson(
    absl::string_view job_id, const std::vector<StepMetrics>& metrics,
    const google::protobuf::RepeatedPtrField<ps::ShardStats>& shards) {
  std::vector<std::string> items;
  items.reserve(metrics.size());
  for (const StepMetrics& metric : metrics) {
    items.push_back(MessageToJson(metric));
  }
  std::vector<std::string> shard_items;
  for (const ps::ShardStats& shard : shards) {
    shard_items.push_back(MessageToJson(shard));
  }
  return absl::StrCat("{\"jobId\":", JsonQuote(job_id), ",\"metrics\":[",
                      absl::StrJoin(items, ","), "],\"shards\":[",
                      absl::StrJoin(shard_items, ","), "]}\n");
}

std::string ShardsToCsv(
    const google::protobuf::RepeatedPtrField<ps::ShardStats>& shards) {
  std::string out =
      absl::StrCat(CsvHeader(*ps::ShardStats::descriptor()), "\n");
  for (const ps::ShardStats& shard : shards) {
    absl::StrAppend(&out, CsvRow(shard), "\n");
  }
  return out;
}

std::string FormatShardTable(
    const google::protobuf::RepeatedPtrField<ps::ShardStats>& shards) {
  std::vector<std::vector<std::string>> rows;
  for (const ps::ShardStats& s : shards) {
    rows.push_back({absl::StrCat(s.shard()), absl::StrCat(s.end() - s.begin()),
                    absl::StrCat(s.pushes()), absl::StrCat(s.pulls()),
                    absl::StrCat(s.updates()),
                    FormatBytes(static_cast<double>(s.bytes_in())),
                    FormatBytes(static_cast<double>(s.bytes_out())),
                    FormatMillis(s.wait_last_worker_s()),
                    FormatMillis(s.apply_s()),
                    FormatMillis(s.staleness_wait_s()),
                    absl::StrCat(s.queue_depth(), "/", s.max_queue_depth())});
  }
  return FormatTable(
      {"SHARD", "ELEMENTS", "PUSHES", "PULLS", "UPDATES", "BYTES_IN",
       "BYTES_OUT", "WAIT_LAST_MS", "APPLY_MS", "SSP_WAIT_MS", "QUEUE/MAX"},
      rows);
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
