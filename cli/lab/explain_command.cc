#include "cli/lab/explain_command.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "cli/control/command_common.h"
#include "cli/control/local_command.h"
#include "cli/framework/format.h"
#include "cli/framework/output_format.h"
#include "cli/lab/lab_command.h"
#include "cli/lab/lab_state.h"
#include "cli/lab/lab_up.h"
#include "common/flags.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "jobspec/job_spec.h"
#include "jobspec/sync_mode_name.h"
#include "study/model_profiles.h"
#include "study/sim/sim_explain.h"

namespace gradsync {
namespace lab {
namespace {

using study::Explanation;
using study::LinkFacts;
using study::ModeExplanation;

// A prediction in JSON: null where no link is in play (none was made).
std::string OrNull(double predicted_s) {
  return predicted_s > 0 ? JsonNumber(predicted_s) : "null";
}

constexpr char kUsage[] =
    "usage: gradsync explain JOB [--link-gbps B] [--link-alpha-us A]\n"
    "                            [--lab-dir DIR]\n\n"
    "The job's synchronisation measured against the alpha-beta model: per\n"
    "mode it ran in, the step split (compute, exposed communication,\n"
    "idle), the measured and predicted sync time, and the bottleneck (the\n"
    "busiest link, compute, or a slow rank); then which path the model\n"
    "says is faster at this job's N, K and S, and by how much.\n"
    "A synthetic job with a --model-profile whose layout is known is also\n"
    "run through the step simulator, which predicts its exposed\n"
    "communication and step with backward's overlap; each mode says which\n"
    "predictor it used and why (docs/simulator.md).\n"
    "Link facts: --link-gbps (each host's link, GB/s of payload); else, on\n"
    "the lab, its settings and its newest sweep's fit; else the\n"
    "coordinator's own (its --link-gbps flag).\n";

// True when every rank of `job` and every server of its shards share one
// host.
bool OnOneHost(const JobStatus& job, const ListWorkersResponse& cluster) {
  std::set<std::string> hosts;
  for (const RankPlacement& r : job.ranks()) hosts.insert(r.host());
  for (const std::string& address : job.ps_addresses()) {
    for (const ParameterServerInfo& p : cluster.parameter_servers()) {
      if (p.address() == address) hosts.insert(p.host());
    }
  }
  return hosts.size() == 1;
}

[[nodiscard]] absl::StatusOr<LinkFacts> ResolveLinks(
    double gbps, double alpha_us, const std::string& lab_dir,
    const std::string& coordinator, const ClusterLinkFacts& told) {
  LinkFacts facts;
  if (gbps > 0) {
    facts.model = {alpha_us * 1e-6, gbps * 1e9};
    facts.source = absl::StrFormat(
        "--link-gbps %g (alpha %g us): each host's link", gbps, alpha_us);
    return facts;
  }
  ASSIGN_OR_RETURN(std::optional<LabState> state, ReadLabState(lab_dir));
  if ((!state.has_value() || state->coordinator() != coordinator) &&
      told.link_gbps() > 0) {
    facts.model = {told.link_alpha_us() * 1e-6, told.link_gbps() * 1e9};
    facts.source = absl::StrFormat(
        "the coordinator's link facts: %g GB/s (alpha %g us) each host's "
        "link%s",
        told.link_gbps(), told.link_alpha_us(),
        told.source().empty() ? std::string()
                              : absl::StrCat(", from ", told.source()));
    return facts;
  }
  if (!state.has_value() || state->coordinator() != coordinator) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no link facts for the coordinator at ", coordinator,
        ": measure them with `gradsync links probe`, or pass --link-gbps B "
        "(each host's link in GB/s of payload), or run it against a lab "
        "(--lab-dir; ",
        state.has_value() ? "the lab there has another coordinator"
                          : absl::StrCat("no lab.json in ", lab_dir),
        ")"));
  }
  const double rate = static_cast<double>(state->spec().link().rate_bps());
  if (state->fitted_bandwidth_bps() > 0) {
    facts.model = {state->fitted_alpha_s(), state->fitted_bandwidth_bps()};
    facts.source = absl::StrFormat(
        "the lab in %s: %g Mbit/s links; its sweep fitted B = %.1f MB/s and "
        "alpha = %.0f us",
        lab_dir, rate / 1e6, state->fitted_bandwidth_bps() / 1e6,
        state->fitted_alpha_s() * 1e6);
  } else {
    const double payload_Bps =
        LabPayloadGbps(state->spec().link().rate_bps()) * 1e9;
    facts.model = {alpha_us * 1e-6, payload_Bps};
    facts.source = absl::StrFormat(
        "the lab in %s: %g Mbit/s links, %.1f MB/s of TCP payload (no "
        "sweep fitted alpha yet; %g us assumed)",
        lab_dir, rate / 1e6, payload_Bps / 1e6, alpha_us);
  }
  return facts;
}

}  // namespace

study::ExplainInput ExplainInputOf(const JobStatus& job,
                                   const GetMetricsResponse& metrics,
                                   const ListWorkersResponse& cluster) {
  study::ExplainInput in;
  in.job_id = job.job_id();
  for (const RankPlacement& r : job.ranks()) in.rank_hosts.push_back(r.host());
  std::map<std::string, std::string> server_host;  // address -> host
  for (const ParameterServerInfo& p : cluster.parameter_servers()) {
    server_host[p.address()] = p.host();
  }
  for (const std::string& address : job.ps_addresses()) {
    in.shard_servers.emplace_back(address, server_host[address]);
  }
  in.ps_partition_bytes = PsPartitionBytes(job.spec().ps());
  for (const StepMetrics& m : metrics.metrics()) {
    study::ExplainStep step;
    step.step = m.step();
    step.rank = m.rank();
    step.mode = SyncPathOf(m.mode());
    step.step_s = m.step_s();
    step.compute_s = m.compute_s();
    step.comm_s = m.comm_s();
    step.idle_s = m.idle_s();
    step.sync_busy_s = m.sync_busy_s();
    step.sync_bytes = m.sync_bytes();
    step.switch_s = m.switch_s();
    step.ps_transport = m.ps_transport();
    in.steps.push_back(std::move(step));
  }
  for (const ps::ShardStats& shard : metrics.shards()) {
    in.shards.push_back({shard.shard(), shard.bytes_in(), shard.bytes_out()});
  }
  const ModelSpec& model = job.spec().model();
  in.model_kind = model.kind();
  if (model.kind() == "synthetic" && !model.profile().empty()) {
    // An unknown profile leaves none: explain then says the formula's.
    absl::StatusOr<std::vector<ProfileTensor>> tensors =
        ModelProfile(model.profile());
    if (tensors.ok()) {
      in.profile_name = model.profile();
      in.profile = *std::move(tensors);
    }
  }
  in.profile_scale = model.profile_scale() == 0 ? 1 : model.profile_scale();
  in.compute_s = model.synthetic_compute_ms() / 1e3;
  in.bucket_bytes = job.spec().bucket_bytes();
  return in;
}

int RunExplain(const std::vector<std::string>& args,
               const cli::CommandEnv& env) {
  double gbps = 0, alpha_us = 0;
  std::string lab_dir;
  std::vector<FlagSpec> flags = {
      DoubleFlag("link-gbps", "B", "each host's link in GB/s of payload", 0,
                 &gbps),
      DoubleFlag("link-alpha-us", "A", "latency per message in us (0)", 0,
                 &alpha_us),
      StringFlag("lab-dir", "DIR",
                 "the lab's run directory ($GRADSYNC_LAB_DIR, else "
                 "./.lab)",
                 &lab_dir),
  };
  cli::control::CommonOptions common;
  common.formats = cli::ReadFormats();
  std::vector<std::string> positional;
  if (std::optional<int> done = cli::control::ParseCommand(
          args, flags, "explain", kUsage, env, &common, &positional)) {
    return *done;
  }
  if (std::optional<int> bad = cli::ExpectPositional(
          args, positional, 1, "a job id", "explain", env)) {
    return *bad;
  }
  lab_dir = ResolveLabDir(lab_dir, env);
  std::unique_ptr<cli::control::ControlClient> client =
      cli::control::MakeClient(common, env);
  absl::StatusOr<ListWorkersResponse> cluster = client->ListWorkers();
  if (!cluster.ok()) {
    return cli::ReportError(env, "explain", common.json, cluster.status());
  }
  absl::StatusOr<JobStatus> job = client->GetJob(positional[0]);
  if (!job.ok())
    return cli::ReportError(env, "explain", common.json, job.status());
  absl::StatusOr<LinkFacts> links = ResolveLinks(
      gbps, alpha_us, lab_dir, client->address(), cluster->link_facts());
  if (!links.ok() && OnOneHost(*job, *cluster)) {
    // No link is in play, so none needs describing (ExplainJob says so).
    links = LinkFacts{LinkModel{},
                      "none in play: every rank and server of "
                      "the job is on one host"};
  }
  if (!links.ok()) {
    return cli::ReportError(env, "explain", common.json, links.status());
  }
  absl::StatusOr<GetMetricsResponse> metrics =
      client->GetMetrics(positional[0]);
  if (!metrics.ok()) {
    return cli::ReportError(env, "explain", common.json, metrics.status());
  }
  absl::StatusOr<Explanation> e = sim::ExplainJobWithSimulator(
      ExplainInputOf(*job, *metrics, *cluster), *links);
  if (!e.ok()) return cli::ReportError(env, "explain", common.json, e.status());
  if (common.json) {
    *env.out << "{\"job\":" << JsonQuote(e->job_id)
             << ",\"ringPredictedS\":" << OrNull(e->ring_predicted_s)
             << ",\"psPredictedS\":" << OrNull(e->ps_predicted_s)
             << ",\"verdict\":" << JsonQuote(e->verdict) << ",\"modes\":[";
    for (size_t i = 0; i < e->modes.size(); ++i) {
      const ModeExplanation& m = e->modes[i];
      *env.out
          << (i ? "," : "") << "{\"mode\":" << JsonQuote(SyncPathName(m.mode))
          << ",\"steps\":" << m.steps << ",\"stepS\":" << JsonNumber(m.step_s)
          << ",\"syncS\":" << JsonNumber(m.sync_s)
          << ",\"predictedS\":" << OrNull(m.predicted_s)
          << ",\"predictor\":" << JsonQuote(m.predictor)
          << ",\"predictorReason\":" << JsonQuote(m.predictor_reason)
          << ",\"predictedExposedS\":"
          << (m.predicted_exposed_s >= 0 ? JsonNumber(m.predicted_exposed_s)
                                         : "null")
          << ",\"predictedStepS\":"
          << (m.predicted_step_s >= 0 ? JsonNumber(m.predicted_step_s) : "null")
          << ",\"bottleneck\":" << JsonQuote(m.bottleneck) << "}";
    }
    *env.out << "]}\n";
  } else if (common.output == "csv") {
    *env.out << "mode,steps,step_s,sync_s,predicted_s,bottleneck\n";
    for (const ModeExplanation& m : e->modes) {
      *env.out << SyncPathName(m.mode) << "," << m.steps << ","
               << JsonNumber(m.step_s) << "," << JsonNumber(m.sync_s) << ","
               << (m.predicted_s > 0 ? JsonNumber(m.predicted_s) : "") << ",\""
               << absl::StrReplaceAll(m.bottleneck, {{"\"", "\"\""}}) << "\"\n";
    }
  } else {  // table and wide
    *env.out << FormatExplanation(*e);
  }
  return cli::kExitOk;
}

int ExplainMain(const std::vector<std::string>& args) {
  return RunExplain(args, cli::ProcessCommandEnv());
}

}  // namespace lab
}  // namespace gradsync
