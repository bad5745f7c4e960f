#include "cli/control/links_command.h"

#include <algorithm>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/control/command_common.h"
#include "cli/control/control_client.h"
#include "common/flags.h"
#include "common/json.h"
#include "common/units.h"
#include "models/link_probe/link_probe_spec.h"
#include "study/link_facts.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

constexpr char kUsage[] =
    "usage: gradsync links probe [--pairs ring|all] [--bytes SIZE]\n"
    "                            [--round-trips N] [--expect-gbit RATE]\n"
    "                            [--mtu BYTES] [--tolerance SHARE] [--no-set]\n"
    "                            [--wait DURATION]\n"
    "       gradsync links show\n\n"
    "The link facts that `explain` and `--mode auto` model the cluster with,\n"
    "measured on the cluster. probe runs a job with one rank on each worker\n"
    "host: each times round trips and streams to the next host (--pairs\n"
    "all: to every host) over the job's authenticated TCP connections, then\n"
    "to and from each parameter-server host without a worker (--pairs all:\n"
    "from every rank) over the server's tensor plane, and the median\n"
    "goodput and half the median round trip become the\n"
    "coordinator's link facts (not with --no-set). --expect-gbit says what\n"
    "the NICs should do (line rate); links below it by more than the\n"
    "tolerance are named, and the command exits 1. show prints the facts\n"
    "the coordinator holds and where they came from.\n";

constexpr absl::Duration kPoll = absl::Milliseconds(200);

struct LinksOptions {
  std::string pairs = "ring";
  uint64_t bytes = kDefaultProbeStreamBytes;
  int round_trips = kDefaultProbeRoundTrips;
  double expect_gbit = 0;
  int mtu = 1500;
  double tolerance = 0.15;
  bool no_set = false;
  absl::Duration wait = absl::Minutes(10);
};

std::vector<FlagSpec> Flags(LinksOptions* o) {
  return {
      StringFlag("pairs", "ring|all",
                 "ring: each host to the next (each link once); all: every "
                 "ordered pair of hosts",
                 &o->pairs),
      SizeFlag("bytes", "streamed per link (64M)", kMinProbeStreamBytes,
               &o->bytes),
      IntFlag("round-trips", "small messages timed per link (20)", 1,
              &o->round_trips),
      DoubleFlag("expect-gbit", "RATE",
                 "the NICs' line rate in Gbit/s: each link is held against "
                 "its TCP payload rate",
                 0, &o->expect_gbit),
      IntFlag("mtu", "the links' MTU, for --expect-gbit (1500)", 576, &o->mtu),
      DoubleFlag("tolerance", "SHARE",
                 "how far below the expectation a link may be (0.15)", 0,
                 &o->tolerance),
      SwitchFlag("no-set", "measure and report; leave the coordinator's facts",
                 &o->no_set),
      SecondsFlag("wait", "how long the probe may take (10m)", &o->wait),
  };
}

// When the probe's job ended: its last status. DEADLINE_EXCEEDED (the job
// cancelled) after `wait`. While it waits to be placed, says why on
// `progress` (null: nothing), each new reason once.
[[nodiscard]] absl::StatusOr<JobStatus> AwaitJob(ControlClient& client,
                                                 const std::string& job_id,
                                                 absl::Duration wait,
                                                 std::ostream* progress) {
  const absl::Time deadline = absl::Now() + wait;
  std::string said;
  for (;;) {
    absl::StatusOr<JobStatus> job = client.GetJob(job_id);
    if (!job.ok()) return job.status();
    const JobState state = job->state();
    if (state == JOB_STATE_SUCCEEDED || state == JOB_STATE_FAILED ||
        state == JOB_STATE_CANCELLED) {
      return job;
    }
    if (progress != nullptr && state == JOB_STATE_PENDING &&
        !job->message().empty() && job->message() != said) {
      said = job->message();
      *progress << job_id << " is " << said << "\n";
    }
    if (absl::Now() >= deadline) {
      (void)client.CancelJob(job_id);  // best effort: it is reported below
      return absl::DeadlineExceededError(absl::StrCat(
          "the link probe ", job_id, " did not end within ",
          absl::FormatDuration(wait), " (last: ", job->message(),
          "); it was cancelled. `gradsync status ", job_id,
          "` says where it waited; a slow cluster needs a longer --wait or "
          "fewer --bytes"));
    }
    absl::SleepFor(kPoll);
  }
}

int Show(const LinksOptions&, const CommonOptions& common,
         const CommandEnv& env) {
  std::unique_ptr<ControlClient> client = MakeClient(common, env);
  absl::StatusOr<ListWorkersResponse> cluster = client->ListWorkers();
  if (!cluster.ok()) {
    return ReportError(env, "links", common.json, cluster.status());
  }
  const ClusterLinkFacts& f = cluster->link_facts();
  if (common.json) {
    *env.out << "{\"linkGbps\":" << JsonNumber(f.link_gbps())
             << ",\"linkAlphaUs\":" << JsonNumber(f.link_alpha_us())
             << ",\"source\":" << JsonQuote(f.source()) << "}\n";
    return kExitOk;
  }
  if (f.link_gbps() <= 0) {
    *env.out << "no link facts: run `gradsync links probe` (or start the "
                "coordinator with --link-gbps)\n";
    return kExitOk;
  }
  *env.out << absl::StrFormat(
      "B = %.3f GB/s, alpha = %.1f us%s\n", f.link_gbps(), f.link_alpha_us(),
      f.source().empty() ? std::string() : absl::StrCat(" (", f.source(), ")"));
  return kExitOk;
}

int Probe(const LinksOptions& o, const CommonOptions& common,
          const CommandEnv& env) {
  auto fail = [&](const absl::Status& status) {
    return ReportError(env, "links", common.json, status);
  };
  absl::StatusOr<LinkProbePairs> pairs = ParseLinkProbePairs(o.pairs);
  if (!pairs.ok()) return fail(pairs.status());
  if (!(o.tolerance < 1)) {
    return fail(absl::InvalidArgumentError(absl::StrCat(
        "--tolerance ", o.tolerance, ": give a share below 1, e.g. 0.15")));
  }
  std::unique_ptr<ControlClient> client = MakeClient(common, env);
  absl::StatusOr<ListWorkersResponse> cluster = client->ListWorkers();
  if (!cluster.ok()) return fail(cluster.status());
  LinkProbeSpec probe;
  probe.set_pairs(std::string(LinkProbePairsName(*pairs)));
  probe.set_stream_bytes(static_cast<int64_t>(o.bytes));
  probe.set_round_trips(o.round_trips);
  absl::StatusOr<JobSpec> spec = LinkProbeJob(*cluster, probe);
  if (!spec.ok()) return fail(spec.status());
  absl::StatusOr<std::string> job_id = client->SubmitJob(*spec);
  if (!job_id.ok()) return fail(job_id.status());
  const int ps_hosts = static_cast<int>(ProbedServerHosts(*cluster).size());
  const int links_probed =
      spec->num_workers() *
          (*pairs == LinkProbePairs::kAll ? spec->num_workers() - 1 : 1) +
      2 * ps_hosts * (*pairs == LinkProbePairs::kAll ? spec->num_workers() : 1);
  if (!common.json) {
    *env.err << absl::StrFormat(
        "probing %d links between %d hosts%s as %s: %s each, %s in all\n",
        links_probed, spec->num_workers(),
        ps_hosts == 0
            ? ""
            : absl::StrFormat(" and %d parameter-server host(s)", ps_hosts),
        *job_id, FormatBytes(static_cast<double>(o.bytes)),
        FormatBytes(static_cast<double>(o.bytes) * links_probed));
  }
  absl::StatusOr<JobStatus> job =
      AwaitJob(*client, *job_id, o.wait, common.json ? nullptr : env.err);
  if (!job.ok()) return fail(job.status());
  if (job->state() != JOB_STATE_SUCCEEDED) {
    return fail(absl::AbortedError(
        absl::StrCat("the link probe ", *job_id, " ended ",
                     JobState_Name(job->state()), ": ", job->message(),
                     "; `gradsync logs ", *job_id, "` has each rank's lines")));
  }
  std::vector<study::HostLink> links;
  std::vector<std::string> link_servers;  // each link's PS id, or ""
  std::set<std::string> probed;           // hosts with a measured link
  for (const RankPlacement& r : job->ranks()) probed.insert(r.host());
  for (const LinkMeasurement& m : job->links()) {
    if (m.from_rank() < 0 || m.from_rank() >= job->ranks_size() ||
        (m.ps_id().empty() &&
         (m.to_rank() < 0 || m.to_rank() >= job->ranks_size()))) {
      continue;  // the coordinator checks them; a stray one is not a link
    }
    std::string from = job->ranks(m.from_rank()).host();
    std::string to;
    if (m.ps_id().empty()) {
      to = job->ranks(m.to_rank()).host();
    } else {
      probed.insert(m.ps_host());
      to = absl::StrCat(m.ps_host(), " (", m.ps_id(), ")");
      if (m.from_ps()) std::swap(from, to);
    }
    links.push_back({std::move(from), std::move(to), m.goodput_bytes_per_s(),
                     m.rtt_median_us(), m.rtt_min_us()});
    link_servers.push_back(m.ps_id());
  }
  const double expected_Bps =
      o.expect_gbit > 0
          ? study::TcpPayloadBytesPerSecond(o.expect_gbit * 1e9, o.mtu)
          : 0;
  absl::StatusOr<study::LinkEstimate> estimate =
      study::EstimateLinks(links, expected_Bps, o.tolerance);
  if (!estimate.ok()) return fail(estimate.status());

  // Parameter-server hosts whose link nobody measured: no tensor plane,
  // or a server that registered after the probe was placed.
  std::set<std::string> unprobed_ps;
  for (const ParameterServerInfo& ps : cluster->parameter_servers()) {
    if (!ps.lost() && !probed.count(ps.host())) unprobed_ps.insert(ps.host());
  }
  bool set = false;
  if (!o.no_set) {
    const std::string source = absl::StrFormat(
        "links probe %s, %s: median of %d links (%s)", *job_id,
        absl::FormatTime("%Y-%m-%d %H:%M UTC", absl::Now(),
                         absl::UTCTimeZone()),
        static_cast<int>(links.size()), LinkProbePairsName(*pairs));
    absl::StatusOr<ClusterLinkFacts> facts = client->SetLinkFacts(
        estimate->bandwidth_Bps / 1e9, estimate->alpha_s * 1e6, source);
    if (!facts.ok()) return fail(facts.status());
    set = true;
  }
  if (common.json) {
    *env.out << "{\"job\":" << JsonQuote(*job_id) << ",\"links\":[";
    for (size_t i = 0; i < links.size(); ++i) {
      const bool below =
          std::find(estimate->below.begin(), estimate->below.end(),
                    static_cast<int>(i)) != estimate->below.end();
      *env.out << (i ? "," : "") << "{\"from\":" << JsonQuote(links[i].from)
               << ",\"to\":" << JsonQuote(links[i].to)
               << ",\"psId\":" << JsonQuote(link_servers[i])
               << ",\"goodputBytesPerS\":" << JsonNumber(links[i].goodput_Bps)
               << ",\"rttMedianUs\":" << JsonNumber(links[i].rtt_median_us)
               << ",\"rttMinUs\":" << JsonNumber(links[i].rtt_min_us)
               << ",\"below\":" << (below ? "true" : "false") << "}";
    }
    *env.out << "],\"linkGbps\":" << JsonNumber(estimate->bandwidth_Bps / 1e9)
             << ",\"linkAlphaUs\":" << JsonNumber(estimate->alpha_s * 1e6)
             << ",\"expectedBytesPerS\":" << JsonNumber(expected_Bps)
             << ",\"below\":" << estimate->below.size()
             << ",\"set\":" << (set ? "true" : "false")
             << ",\"unprobedPsHosts\":[";
    int i = 0;
    for (const std::string& host : unprobed_ps) {
      *env.out << (i++ ? "," : "") << JsonQuote(host);
    }
    *env.out << "]}\n";
  } else {
    *env.out << study::FormatLinkEstimate(links, *estimate);
    if (!unprobed_ps.empty()) {
      *env.out << "not probed: parameter-server host(s) "
               << absl::StrJoin(unprobed_ps, ", ")
               << " (no worker daemon there, and no tensor plane: "
                  "gradsync-ps --tensor-port -1, or a server that came after "
                  "the probe started); the model assumes their links are like "
                  "these\n";
    }
    *env.out << (set ? "the coordinator's link facts are set: `gradsync "
                       "explain` and --mode auto use them\n"
                     : "--no-set: the coordinator's link facts are "
                       "unchanged\n");
  }
  // Below the median is news; below what the operator expects is a
  // failed check.
  return estimate->expected && !estimate->below.empty() ? kExitFailure
                                                        : kExitOk;
}

}  // namespace

std::set<std::string> ProbedServerHosts(const ListWorkersResponse& cluster) {
  std::set<std::string> worker_hosts, hosts;
  for (const WorkerInfo& w : cluster.workers()) {
    if (w.state() != WORKER_STATE_LOST) worker_hosts.insert(w.host());
  }
  for (const ParameterServerInfo& ps : cluster.parameter_servers()) {
    if (!ps.lost() && ps.tensor_port() > 0 && !worker_hosts.count(ps.host())) {
      hosts.insert(ps.host());
    }
  }
  return hosts;
}

absl::StatusOr<JobSpec> LinkProbeJob(const ListWorkersResponse& cluster,
                                     const LinkProbeSpec& probe) {
  // Hosts with a live worker, per device kind.
  std::map<std::string, std::set<std::string>> hosts_of;
  std::set<std::string> all_hosts;
  for (const WorkerInfo& w : cluster.workers()) {
    if (w.state() == WORKER_STATE_LOST) continue;
    all_hosts.insert(w.host());
    for (const Device& d : w.devices()) hosts_of[d.kind()].insert(w.host());
  }
  std::string kind = "cpu";
  for (const auto& [k, hosts] : hosts_of) {
    if (hosts.size() > hosts_of[kind].size()) kind = k;
  }
  const int hosts = static_cast<int>(hosts_of[kind].size());
  if (hosts < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "live workers on ", all_hosts.size(), " host(s)",
        all_hosts.empty()
            ? ""
            : absl::StrCat(" (", absl::StrJoin(all_hosts, ", "), ")"),
        ": a link probe needs worker daemons on at least two hosts. Start "
        "gradsync-worker on the others (docs/operations.md, \"Across "
        "nodes\"); one host has no links to measure"));
  }
  JobSpec spec;
  spec.set_name("links-probe");
  spec.mutable_model()->set_kind(std::string(kLinkProbeModelKind));
  *spec.mutable_model()->mutable_link_probe() = probe;
  spec.set_num_workers(hosts);
  spec.set_device(kind);
  return spec;
}

int RunLinks(const std::vector<std::string>& args, const CommandEnv& env) {
  LinksOptions options;
  CommonOptions common;
  std::vector<std::string> positional;
  if (std::optional<int> done = ParseCommand(
          args, Flags(&options), "links", kUsage, env, &common, &positional)) {
    return *done;
  }
  if (std::optional<int> bad = ExpectPositional(
          args, positional, 1, "probe or show", "links", env)) {
    return *bad;
  }
  if (positional[0] == "show") return Show(options, common, env);
  if (positional[0] == "probe") return Probe(options, common, env);
  return ReportUsageError(
      env, "links", args,
      absl::InvalidArgumentError(absl::StrCat(
          "unknown subcommand '", positional[0], "'; say probe or show")));
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
