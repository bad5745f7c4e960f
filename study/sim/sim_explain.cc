#include "study/sim/sim_explain.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "study/alpha_beta/sync_placement.h"
#include "study/sim/step_simulator.h"
#include "study/sim/workload.h"

namespace gradsync {
namespace sim {
namespace {

using study::ExplainInput;
using study::Explanation;
using study::LinkFacts;
using study::ModeExplanation;

[[nodiscard]] absl::Status Why(std::string sentence) {
  return absl::FailedPreconditionError(std::move(sentence));
}

// The simulated worker's workload: the profile with the job's emulated
// backward spread by FLOP share, as the synthetic model runs it.
[[nodiscard]] absl::StatusOr<SimWorkload> ExplainWorkload(
    const ExplainInput& job) {
  ProfileCompute compute;
  compute.scale = job.profile_scale;
  compute.batch = 1;
  compute.backward_total_s = job.compute_s;
  return WorkloadFromProfile(job.profile, compute);
}

}  // namespace

absl::StatusOr<SimConfig> ExplainSimConfig(const ExplainInput& job,
                                           const LinkFacts& links,
                                           SyncPath mode) {
  if (job.profile.empty()) {
    return Why(absl::StrCat(
        "the job's model (kind ",
        job.model_kind.empty() ? std::string("unknown") : job.model_kind,
        ") has no layer profile; the synthetic kind's --model-profile has "
        "one"));
  }
  if (!(links.model.bandwidth_Bps > 0)) {
    return Why("the link facts give no rate to simulate");
  }
  const SyncPlacement placement =
      SyncPlacementOf(job.rank_hosts, job.shard_servers);
  std::map<std::string, int> per_host;
  for (const std::string& h : job.rank_hosts) ++per_host[h];
  const int hosts = static_cast<int>(per_host.size());
  const int g = hosts > 0 ? per_host.begin()->second : 0;
  for (const auto& [host, ranks] : per_host) {
    if (ranks != g) {
      return Why(absl::StrFormat(
          "the ranks sit unevenly on their hosts (%d on %s, %d on %s); the "
          "simulator puts G on every node",
          g, per_host.begin()->first, ranks, host));
    }
  }
  SimConfig config;
  config.topology.workers = static_cast<int>(job.rank_hosts.size());
  config.topology.gpus_per_node = g;
  config.topology.nic_Bps = links.model.bandwidth_Bps;
  config.topology.intra_Bps = links.model.bandwidth_Bps;
  config.grad_bytes_per_element = 4;
  config.record_timeline = false;
  SimCalibration& c = config.calibration;
  c.alpha_s = links.model.alpha_s;
  c.intra_alpha_s = links.model.alpha_s;
  c.link_efficiency = 1;
  c.partition_overhead_s = 0;
  c.plane_cpu_s_per_byte = 0;
  c.grpc_cpu_s_per_byte = 0;
  c.incast_threshold_flows = 0;
  c.incast_efficiency = 1;
  c.machine = "explain's link facts";
  if (mode != SyncPath::kPs) {
    if (hosts < 2) {
      return Why("every rank shares one host: no link is in play");
    }
    if (g > 1) {
      return Why(absl::StrFormat(
          "%d ranks share each host, and the rate between the ranks of one "
          "host is not measured",
          g));
    }
    config.layout = SimLayout::kRing;
    config.bucket_bytes = job.bucket_bytes > 0
                              ? static_cast<double>(job.bucket_bytes)
                              : kDefaultBucketBytes;
  } else {
    const int servers = static_cast<int>(placement.servers.size());
    if (servers == 0) return Why("the job has no parameter-server shards");
    std::map<std::string, std::string> host_of;
    for (const auto& [address, host] : job.shard_servers) {
      host_of[address] = host;
    }
    std::set<std::string> server_hosts;
    int on_workers = 0;
    for (const std::string& server : placement.servers) {
      const std::string& host = host_of[server];
      if (host.empty()) {
        return Why(absl::StrCat("the host of server ", server,
                                " is unknown, so its links are"));
      }
      server_hosts.insert(host);
      if (per_host.count(host) > 0) ++on_workers;
    }
    if (static_cast<int>(server_hosts.size()) != servers) {
      return Why(
          "several servers share a host, which the simulator does "
          "not model");
    }
    if (on_workers != 0 && on_workers != servers) {
      return Why(
          "some servers share the workers' hosts and some do not, "
          "which the simulator does not model");
    }
    if (on_workers > 0 && hosts < 2) {
      return Why(
          "every rank and server shares one host: no link is in "
          "play");
    }
    config.layout =
        on_workers > 0 ? SimLayout::kPsColocated : SimLayout::kPsSeparate;
    config.servers = servers;
    config.partition_bytes = static_cast<double>(job.ps_partition_bytes);
  }
  if (absl::Status s = ValidateSimConfig(config); !s.ok()) {
    return Why(
        absl::StrCat("the simulator refuses this layout: ", s.message()));
  }
  return config;
}

absl::StatusOr<Explanation> ExplainJobWithSimulator(const ExplainInput& job,
                                                    const LinkFacts& links) {
  ASSIGN_OR_RETURN(Explanation e, study::ExplainJob(job, links));
  for (ModeExplanation& m : e.modes) {
    absl::StatusOr<SimConfig> config = ExplainSimConfig(job, links, m.mode);
    if (!config.ok()) {
      m.predictor_reason = std::string(config.status().message());
      continue;
    }
    absl::StatusOr<SimWorkload> work = ExplainWorkload(job);
    if (!work.ok()) {
      m.predictor_reason = absl::StrCat("the job's profile does not simulate: ",
                                        work.status().message());
      continue;
    }
    const double bytes =
        static_cast<double>(work->elements()) * config->grad_bytes_per_element;
    if (bytes != static_cast<double>(e.sync_bytes)) {
      m.predictor_reason = absl::StrFormat(
          "the profile %s at scale %g has %.0f bytes of gradient, the job "
          "synchronised %d",
          job.profile_name, job.profile_scale, bytes, e.sync_bytes);
      continue;
    }
    absl::StatusOr<SimResult> r = SimulateStep(*config, *work);
    if (!r.ok()) {
      m.predictor_reason =
          absl::StrCat("the simulator failed: ", r.status().message());
      continue;
    }
    m.predictor = "simulator";
    m.predicted_exposed_s = r->exposed_comm_s;
    m.predicted_step_s = r->step_s;
    const SimConfig& c = *config;
    m.predictor_reason = absl::StrFormat(
        "the simulator, from the job's layer profile %s and its layout: %s, "
        "N = %d, G = %d, %s",
        job.profile_name, SimLayoutName(c.layout), c.topology.workers,
        c.topology.gpus_per_node,
        IsPsLayout(c.layout)
            ? absl::StrFormat("K = %d, partitions of %.0f bytes", c.servers,
                              c.partition_bytes)
            : absl::StrFormat("buckets of %.0f bytes", c.bucket_bytes));
  }
  return e;
}

}  // namespace sim
}  // namespace gradsync
