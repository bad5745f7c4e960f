#include "study/explain.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/median.h"
#include "study/alpha_beta/sync_placement.h"

namespace gradsync {
namespace study {
namespace {

// Steps after a mode starts that carry the switch or the warm-up.
constexpr int kSettleSteps = 2;

std::string Ms(double s) { return absl::StrFormat("%.1f ms", 1e3 * s); }
std::string MiB(double b) { return absl::StrFormat("%.1f MiB", b / 1048576); }

// ", over the tensor plane", ...; "" when the workers did not say.
std::string TransportText(absl::string_view transport) {
  if (transport == "plane") return ", over the tensor plane";
  if (transport == "grpc") return ", over gRPC streams";
  if (transport == "mixed") return ", over the tensor plane and gRPC streams";
  return "";
}

// The server CPU model of a PS transport ("grpc" and "mixed": gRPC's).
const ServerCpuModel& CpuOf(const LinkFacts& links,
                            absl::string_view transport) {
  return transport == "grpc" || transport == "mixed" ? links.grpc_cpu
                                                     : links.plane_cpu;
}

// The split of a PS mode's measured sync (ModeExplanation::split).
void Split(bool links_in_play, ModeExplanation* m) {
  const double model_s = links_in_play ? m->predicted_s : m->cpu_s;
  if (!(m->sync_s > 0) || !(model_s > 0)) return;
  m->model_part_s = std::min(model_s, m->sync_s);
  m->transport_s = m->sync_s - m->model_part_s;
  const std::string what =
      !links_in_play ? "the server's CPU and memory copies (one host: no "
                       "link)"
      : m->cpu_binds ? "the server's CPU"
                     : "the server's link";
  const std::string transport =
      m->ps_transport.empty() ? "the transport" : m->ps_transport;
  m->split = absl::StrFormat(
      "of the %s PS sync, the model gives %s (%.0f%%) to %s for these "
      "bytes; the other %s (%.0f%%) is the transport's own overhead (%s: "
      "messages, copies and waits beyond the model)",
      Ms(m->sync_s), Ms(m->model_part_s), 100 * m->model_part_s / m->sync_s,
      what, Ms(m->transport_s), 100 * m->transport_s / m->sync_s, transport);
}

// The slowest rank of one step, and the step's mode (rank 0's).
struct StepView {
  SyncPath mode = SyncPath::kRing;
  std::string ps_transport;  // "mixed" when the ranks differ
  const ExplainStep* slowest = nullptr;
  double sync_s = 0;
  bool switched = false;
  int ranks = 0;
};

}  // namespace

absl::StatusOr<Explanation> ExplainJob(const ExplainInput& job,
                                       const LinkFacts& links) {
  Explanation e;
  e.job_id = job.job_id;
  e.workers = static_cast<int>(job.rank_hosts.size());
  e.links = links.source;
  std::map<std::string, std::string> server_host;  // address -> host
  for (const auto& [address, host] : job.shard_servers) {
    server_host[address] = host;
  }
  // As `--mode auto` counts them (study/alpha_beta/sync_placement.h).
  const SyncPlacement placement =
      SyncPlacementOf(job.rank_hosts, job.shard_servers);
  const std::vector<std::string>& hosts = placement.hosts;
  const std::vector<std::string>& servers = placement.servers;
  e.hosts = static_cast<int>(hosts.size());
  e.servers = static_cast<int>(servers.size());
  e.colocated = placement.colocated;

  std::map<int64_t, StepView> steps;
  std::string job_transport;  // of every PS step, as for a mode
  for (const ExplainStep& m : job.steps) {
    if (m.mode == SyncPath::kPs && !m.ps_transport.empty()) {
      job_transport = job_transport.empty() || job_transport == m.ps_transport
                          ? m.ps_transport
                          : "mixed";
    }
    e.sync_bytes = std::max(e.sync_bytes, m.sync_bytes);
    StepView& v = steps[m.step];
    ++v.ranks;
    if (m.rank == 0) v.mode = m.mode;
    v.switched = v.switched || m.switch_s > 0;
    if (!m.ps_transport.empty()) {
      v.ps_transport =
          v.ps_transport.empty() || v.ps_transport == m.ps_transport
              ? m.ps_transport
              : "mixed";
    }
    v.sync_s = std::max(v.sync_s, m.sync_busy_s);
    if (v.slowest == nullptr || m.step_s > v.slowest->step_s) {
      v.slowest = &m;
    }
  }
  if (e.sync_bytes <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job.job_id,
        " has reported no synchronised step yet; explain it once it runs"));
  }
  const double s = static_cast<double>(e.sync_bytes);
  const LinkModel& model = links.model;
  // On one host no link carries the ring (shared memory or loopback), and
  // none carries a PS whose servers share that host: the link model has
  // nothing to predict there, and says nothing rather than "0 ms".
  const SyncModelInputs in =
      SyncModelInputsOf(placement, e.sync_bytes, job.ps_partition_bytes);
  e.ring_links = e.hosts >= 2;
  if (e.ring_links) e.ring_predicted_s = PredictSeconds(in.ring, model);
  const bool have_ps = e.servers > 0 && ValidateSyncCase(in.ps).ok();
  e.ps_links = have_ps && !(e.colocated && e.hosts == 1);
  if (e.ps_links) {
    e.ps_predicted_s =
        PredictWithCpu(in.ps, e.workers, model, CpuOf(links, job_transport))
            .seconds;
  }

  // Per mode: the settled steps every rank reported.
  std::map<SyncPath, std::vector<const StepView*>> by_mode;
  std::optional<SyncPath> previous;  // none before the first step
  int since = 0;
  for (const auto& [index, view] : steps) {
    since = view.mode == previous ? since + 1 : 1;
    previous = view.mode;
    if (view.ranks < e.workers || view.switched || since <= kSettleSteps) {
      continue;
    }
    by_mode[view.mode].push_back(&view);
  }
  // Busiest server: shard (partition) bytes summed per server.
  std::map<std::string, double> server_bytes;
  const int shard_count = static_cast<int>(job.shards.size());
  const int per_server =
      e.servers > 0 ? std::max(1, shard_count / e.servers) : 1;
  for (const ExplainShard& shard : job.shards) {
    const int k = std::min(shard.shard / per_server, e.servers - 1);
    if (k >= 0 && k < static_cast<int>(servers.size())) {
      server_bytes[servers[k]] += shard.bytes_in + shard.bytes_out;
    }
  }
  for (const auto& [mode, views] : by_mode) {
    ModeExplanation m;
    m.mode = mode;
    m.steps = static_cast<int>(views.size());
    std::vector<double> step_s, compute, comm, idle, sync;
    for (const StepView* v : views) {
      if (!v->ps_transport.empty()) {
        m.ps_transport =
            m.ps_transport.empty() || m.ps_transport == v->ps_transport
                ? v->ps_transport
                : "mixed";
      }
      step_s.push_back(v->slowest->step_s);
      compute.push_back(v->slowest->compute_s);
      comm.push_back(v->slowest->comm_s);
      idle.push_back(v->slowest->idle_s);
      sync.push_back(v->sync_s);
    }
    m.step_s = Median(step_s);
    m.compute_s = Median(compute);
    m.comm_s = Median(comm);
    m.idle_s = Median(idle);
    m.sync_s = Median(sync);
    const bool is_ps = mode == SyncPath::kPs;
    m.predicted_s = is_ps ? e.ps_predicted_s : e.ring_predicted_s;
    if (is_ps && have_ps) {
      const SyncPrediction p =
          PredictWithCpu(in.ps, e.workers, e.ps_links ? model : LinkModel{},
                         CpuOf(links, m.ps_transport));
      m.link_s = p.link_s;
      m.cpu_s = p.cpu_s;
      m.cpu_binds = p.cpu_binds;
      if (e.ps_links) m.predicted_s = p.seconds;
    }
    m.error = m.sync_s > 0 && m.predicted_s > 0
                  ? RelativeError(m.predicted_s, m.sync_s)
                  : 0;
    if (is_ps) {
      m.layout = absl::StrCat(
          "ps: ", e.servers, " server", e.servers == 1 ? "" : "s",
          e.colocated ? " on the workers' hosts" : " on hosts of their own",
          ", ", e.hosts, e.hosts == 1 ? " worker host" : " worker hosts",
          TransportText(m.ps_transport));
    } else {
      m.layout = absl::StrCat("ring over ", e.hosts,
                              e.hosts == 1 ? " host" : " hosts");
    }
    m.algbw = m.sync_s > 0 ? s / m.sync_s : 0;
    m.busbw = is_ps
                  ? m.algbw * 2 *
                        std::max(1.0, double(e.hosts) / std::max(1, e.servers))
                  : m.algbw * 2.0 * (e.workers - 1) / std::max(1, e.workers);
    std::string where;
    if (m.step_s > 0 && m.compute_s / m.step_s > 0.5) {
      where = absl::StrFormat(
          "compute: %s of the %s step is the model's own compute, not "
          "synchronisation",
          Ms(m.compute_s), Ms(m.step_s));
    } else if (m.step_s > 0 && m.idle_s / m.step_s > 0.25) {
      where = absl::StrFormat(
          "an idle wait on a slow rank: the slowest rank idles %s of its "
          "%s step; look for a straggler (per-rank compute in gradsync "
          "metrics)",
          Ms(m.idle_s), Ms(m.step_s));
    } else if (m.predicted_s <= 0) {
      where = absl::StrFormat(
          "this host, not a link: the %d ranks%s share host %s, so %s runs "
          "over %s at a measured busbw of %.2f GB/s (algbw %.2f GB/s), "
          "bounded by memory copies and the CPUs",
          e.workers, is_ps ? " and the servers" : "",
          hosts.empty() ? "?" : hosts.front(), is_ps ? "the PS" : "the ring",
          is_ps ? "loopback TCP" : "shared memory (or loopback TCP)",
          m.busbw / 1e9, m.algbw / 1e9);
    } else if (is_ps && m.cpu_binds) {
      where = absl::StrFormat(
          "the servers' CPU: each of the %d moves 2*R*S/K = %s per step "
          "through its transport (%s in the model, above the links' %s)",
          e.servers, MiB(2.0 * e.workers * s / std::max(1, e.servers)),
          Ms(m.cpu_s), Ms(m.link_s));
    } else if (is_ps && e.servers > 0 &&
               (e.colocated || e.hosts >= e.servers)) {
      std::string busiest = servers.empty() ? "" : servers.front();
      for (const auto& [address, bytes] : server_bytes) {
        if (bytes > server_bytes[busiest]) busiest = address;
      }
      where = absl::StrFormat(
          "the busiest server's link: %s (host %s) takes about %s in and "
          "as much out per step (N*S/K), against S = %s for a worker",
          busiest, server_host[busiest],
          MiB(s * e.hosts / std::max(1, e.servers)), MiB(s));
    } else if (is_ps) {
      where = absl::StrFormat(
          "the workers' links: each pushes and pulls S = %s per step; more "
          "servers would not help",
          MiB(s));
    } else {
      where = absl::StrFormat(
          "every worker's link: each carries 2(N-1)/N*S = %s each way per "
          "step, in %d steps of S/N",
          MiB(2.0 * (e.hosts - 1) / e.hosts * s), 2 * (e.hosts - 1));
    }
    if (m.predicted_s > 0 && m.sync_s > 1.5 * m.predicted_s) {
      const bool on_grpc =
          is_ps && (m.ps_transport == "grpc" || m.ps_transport == "mixed");
      absl::StrAppend(
          &where,
          absl::StrFormat("; but the links explain only %.0f%% of the "
                          "measured sync time: the rest is CPU or software "
                          "(look at the hosts' CPU use)",
                          100 * m.predicted_s / m.sync_s),
          on_grpc ? "; this PS runs on gRPC streams, whose per-message work "
                    "(and TLS) is on the CPU: the tensor plane "
                    "(--ps-transport plane) took a 1 Gbit/s lab cell from 2x "
                    "the model to within 25% of it "
                    "(docs/performance/lab-ps-transport.md)"
                  : "");
    }
    m.bottleneck = std::move(where);
    if (is_ps) Split(e.ps_links, &m);
    e.modes.push_back(std::move(m));
  }

  // The verdict.
  std::string verdict;
  if (!e.ring_links && !e.ps_links) {
    const ModeExplanation* ring_m = nullptr;
    const ModeExplanation* ps_m = nullptr;
    for (const ModeExplanation& m : e.modes) {
      (m.mode == SyncPath::kPs ? ps_m : ring_m) = &m;
    }
    verdict = absl::StrFormat(
        "every rank%s shares one host, so no link is in play and the link "
        "model has nothing to predict",
        have_ps ? " and server" : "");
    if (ring_m != nullptr && ps_m != nullptr && ring_m->sync_s > 0 &&
        ps_m->sync_s > 0) {
      const bool ring_wins = ring_m->sync_s <= ps_m->sync_s;
      absl::StrAppend(
          &verdict,
          absl::StrFormat("; measured on this host the %s synchronises "
                          "faster: ring %s, ps %s (x%.2f)",
                          ring_wins ? "ring" : "PS", Ms(ring_m->sync_s),
                          Ms(ps_m->sync_s),
                          std::max(ring_m->sync_s, ps_m->sync_s) /
                              std::min(ring_m->sync_s, ps_m->sync_s)));
    }
    absl::StrAppend(&verdict,
                    "; to study the links, run the job across hosts or in "
                    "`gradsync lab`");
  } else if (have_ps && e.ring_links) {
    const bool ring_wins = e.ring_predicted_s <= e.ps_predicted_s;
    verdict = absl::StrFormat(
        "at N = %d hosts, K = %d server%s%s and S = %s the model says %s is "
        "faster: ring %s, ps %s (x%.2f)",
        e.hosts, e.servers, e.servers == 1 ? "" : "s",
        e.colocated ? " (colocated)" : "", MiB(s),
        ring_wins ? "the ring" : "the PS", Ms(e.ring_predicted_s),
        Ms(e.ps_predicted_s),
        std::max(e.ring_predicted_s, e.ps_predicted_s) /
            std::max(1e-12, std::min(e.ring_predicted_s, e.ps_predicted_s)));
  } else if (e.ring_links) {
    verdict = absl::StrFormat(
        "the ring's model time at N = %d hosts and S = %s is %s; the job has "
        "no parameter-server shards to compare with",
        e.hosts, MiB(s), Ms(e.ring_predicted_s));
  } else {
    verdict = absl::StrFormat(
        "the ranks share one host, so the ring crosses no link; the PS's "
        "model time through %d server%s on other hosts at S = %s is %s",
        e.servers, e.servers == 1 ? "" : "s", MiB(s), Ms(e.ps_predicted_s));
  }
  if (e.hosts >= 2) {
    const double k_star = CrossoverShards(e.hosts, /*pipelined=*/true);
    // This job's PS, on K = N separate hosts.
    SyncCase best = in.ps;
    best.layout = SyncLayout::kPsSeparate;
    best.shards = e.hosts;
    absl::StrAppend(
        &verdict,
        absl::StrFormat(
            "; a PS on separate hosts beats the ring from K* = N^2/(2(N-1)) "
            "= %.2f servers on (with K = N = %d: %s)",
            k_star, e.hosts, Ms(PredictSeconds(best, model))));
  }
  e.verdict = std::move(verdict);
  return e;
}

std::string FormatExplanation(const Explanation& e) {
  std::string out = absl::StrFormat(
      "job %s: %d ranks on %d host%s, gradient S = %s per step\nlinks: "
      "%s\n",
      e.job_id, e.workers, e.hosts, e.hosts == 1 ? "" : "s",
      MiB(static_cast<double>(e.sync_bytes)), e.links);
  for (const ModeExplanation& m : e.modes) {
    const std::string sync =
        m.predicted_s > 0
            ? absl::StrFormat("sync %s measured, %s predicted (%+.0f%%)",
                              Ms(m.sync_s), Ms(m.predicted_s), 100 * m.error)
            : absl::StrFormat(
                  "sync %s measured (busbw %.2f GB/s); no link "
                  "prediction: no link is in play",
                  Ms(m.sync_s), m.busbw / 1e9);
    std::string terms;
    if (m.mode == SyncPath::kPs && m.predicted_s > 0) {
      terms = absl::StrFormat(
          "\n  model terms: link %s, server CPU %s (%s binds)", Ms(m.link_s),
          Ms(m.cpu_s), m.cpu_binds ? "the CPU" : "the link");
    } else if (m.mode == SyncPath::kPs && m.cpu_s > 0) {
      terms = absl::StrFormat("\n  model terms: server CPU %s (no link)",
                              Ms(m.cpu_s));
    }
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "\n%s (%s), median of %d steps: step %s = compute %s + exposed "
            "comm %s + idle %s\n  %s%s\n  bottleneck: %s\n",
            SyncPathName(m.mode), m.layout, m.steps, Ms(m.step_s),
            Ms(m.compute_s), Ms(m.comm_s), Ms(m.idle_s), sync, terms,
            m.bottleneck));
    if (m.predicted_step_s >= 0) {
      absl::StrAppend(
          &out,
          absl::StrFormat("  simulator: exposed comm %s measured, %s "
                          "predicted; step %s measured, %s predicted (%s)\n",
                          Ms(m.comm_s), Ms(m.predicted_exposed_s), Ms(m.step_s),
                          Ms(m.predicted_step_s), m.predictor_reason));
    } else if (m.predicted_s > 0 && !m.predictor_reason.empty()) {
      // Where no link is in play the formula predicted nothing either.
      absl::StrAppend(&out, "  predicted by the ", m.predictor, ": ",
                      m.predictor_reason, "\n");
    }
    if (!m.split.empty()) absl::StrAppend(&out, "  split: ", m.split, "\n");
  }
  if (e.modes.empty()) {
    absl::StrAppend(&out,
                    "\nno settled step yet (the first steps of each "
                    "mode are left out)\n");
  }
  absl::StrAppend(&out, "\nverdict: ", e.verdict, "\n");
  return out;
}

}  // namespace study
}  // namespace gradsync
