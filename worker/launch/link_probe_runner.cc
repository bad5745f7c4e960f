#include "worker/launch/link_probe_runner.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "collectives/prefix_store.h"
#include "collectives/tcp/tcp_communicator.h"
#include "collectives/transports/tcp/link_probe.h"
#include "collectives/transports/tcp/rendezvous.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "models/link_probe/link_probe_spec.h"
#include "server/ps/transport/tensor_plane_client.h"
#include "worker/daemon/rank_report.h"

namespace gradsync {
namespace {

LinkMeasurement ToProto(const MeasuredLink& link) {
  LinkMeasurement m;
  m.set_from_rank(link.from);
  m.set_to_rank(link.to);
  m.set_goodput_bytes_per_s(link.goodput_Bps);
  m.set_stream_bytes(link.stream_bytes);
  m.set_rtt_median_us(link.rtt_median_us);
  m.set_rtt_min_us(link.rtt_min_us);
  m.set_round_trips(link.round_trips);
  return m;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LinkProbeRunner>> LinkProbeRunner::Start(
    const Assignment& assignment, JobRunnerConfig config,
    std::shared_ptr<CoordinatorClient> client) {
  if (absl::Status s = ValidateAssignment(assignment); !s.ok()) return s;
  JobSpec checked = assignment.spec();
  if (absl::Status s = ValidateLinkProbe(assignment.spec(), &checked);
      !s.ok()) {
    return s;
  }
  if (checked.num_workers() != assignment.world_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "link probe ", assignment.job_id(), " has ", checked.num_workers(),
        " workers in its spec and a world of ", assignment.world_size()));
  }
  std::unique_ptr<LinkProbeRunner> runner(
      new LinkProbeRunner(assignment, checked.model().link_probe(),
                          std::move(config), std::move(client)));
  absl::MutexLock lock(&runner->join_mu_);
  runner->main_ = std::thread([r = runner.get()] { r->Main(); });
  return runner;
}

LinkProbeRunner::LinkProbeRunner(const Assignment& assignment,
                                 LinkProbeSpec probe, JobRunnerConfig config,
                                 std::shared_ptr<CoordinatorClient> client)
    : assignment_(assignment),
      probe_(std::move(probe)),
      config_(std::move(config)),
      client_(std::move(client)),
      store_(std::make_shared<CoordinatorStore>(
          client_, JobStoreScope(assignment_, config_))),
      reporter_(client_, config_.worker_id, assignment_.job_id(),
                JobReporterOptions(config_), config_.log) {
  for (int i = 0; i < assignment_.ranks_size(); ++i) {
    aborts_.push_back(std::make_unique<std::atomic<bool>>(false));
  }
}

LinkProbeRunner::~LinkProbeRunner() {
  Cancel(absl::CancelledError("the link probe runner was destroyed"));
  Join();
}

void LinkProbeRunner::Cancel(const absl::Status& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_.load()) return;
    cancel_reason_ = reason.ok() ? absl::CancelledError("cancelled") : reason;
    cancelled_.store(true);
  }
  for (const auto& abort : aborts_) abort->store(true);
  store_->Cancel(reason);
}

void LinkProbeRunner::Join() {
  absl::MutexLock lock(&join_mu_);
  if (main_.joinable()) main_.join();
}

std::string LinkProbeRunner::CancelMessage() {
  absl::MutexLock lock(&mu_);
  return absl::StrCat("the rank was cancelled: ", cancel_reason_.message());
}

void LinkProbeRunner::Log(absl::string_view line) const {
  LogJobLine(config_, assignment_.job_id(), reporter_, line);
}

void LinkProbeRunner::Main() {
  std::vector<std::thread> ranks;
  for (int i = 0; i < assignment_.ranks_size(); ++i) {
    ranks.emplace_back(
        [this, i] { RunRank(assignment_.ranks(i), aborts_[i].get()); });
  }
  for (std::thread& t : ranks) t.join();
  done_.store(true);
}

void LinkProbeRunner::RunRank(int rank, std::atomic<bool>* abort) {
  const int size = assignment_.world_size();
  auto fail = [&](absl::string_view what, const absl::Status& status) {
    const std::string message =
        cancelled_.load() ? CancelMessage() : std::string(status.message());
    Log(absl::StrCat("rank ", rank, ": link probe failed during ", what, ": ",
                     message));
    Report(rank, RANK_STATE_FAILED, absl::StrCat(what, ": ", message));
  };

  // Two rendezvous, so that each direction of a pair has its own
  // connection (collectives/transports/tcp/link_probe.h).
  std::vector<Socket> sockets[2];
  for (int set = 0; set < 2; ++set) {
    const std::string name = set == 0 ? "a" : "b";
    TcpOptions options;
    options.job_id =
        absl::StrCat(assignment_.job_id(), "/", assignment_.generation(),
                     "/link-probe-", name);
    options.job_secret = assignment_.job_secret();
    options.listen_host = config_.listen_host;
    options.connect_timeout = config_.rendezvous_timeout;
    options.timeout = config_.collective_timeout;
    options.congestion_control = config_.tcp_congestion_control;
    options.cancelled = abort;
    options.on_rejected = [this, rank](absl::string_view why) {
      Log(absl::StrCat("rank ", rank,
                       ": refused a connection at rendezvous: ", why));
    };
    PrefixStore store(store_.get(), absl::StrCat("link-probe/", name));
    absl::StatusOr<std::vector<Socket>> connected =
        ConnectAllPeers(&store, rank, size, options);
    if (!connected.ok()) {
      fail("rendezvous", connected.status());
      return;
    }
    sockets[set] = *std::move(connected);
  }
  std::vector<Socket> initiate(size), respond(size);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    // The lower rank calls on the first connection, the higher on the
    // second.
    initiate[peer] = std::move(sockets[peer > rank ? 0 : 1][peer]);
    respond[peer] = std::move(sockets[peer > rank ? 1 : 0][peer]);
  }
  Report(rank, RANK_STATE_READY, "");

  LinkProbeConfig config;
  config.rank = rank;
  config.size = size;
  // Start checked the spec, so the pairs parse and the defaults are in.
  const LinkProbePairs pairs =
      ParseLinkProbePairs(probe_.pairs()).value_or(LinkProbePairs::kRing);
  config.rounds = LinkProbeRounds(size, pairs);
  config.stream_bytes = probe_.stream_bytes();
  config.round_trips = probe_.round_trips();
  config.timeout = config_.collective_timeout;
  Log(absl::StrFormat(
      "rank %d: probing %s pairs of %d hosts: %d round trips and %s per "
      "link, over the job's authenticated TCP connections",
      rank, LinkProbePairsName(pairs), size, config.round_trips,
      FormatBytes(config.stream_bytes)));
  absl::StatusOr<std::vector<MeasuredLink>> measured = MeasureLinks(
      config, initiate, respond,
      [&](absl::string_view name, absl::Time deadline) {
        return StoreBarrier(store_.get(), name, rank, size, deadline);
      },
      abort);
  if (!measured.ok()) {
    fail("the measurement", measured.status());
    return;
  }
  std::vector<LinkMeasurement> links;
  for (const MeasuredLink& link : *measured) {
    Log(absl::StrFormat(
        "rank %d: to rank %d: %.1f MB/s, round trip %.0f us (fastest %.0f)",
        rank, link.to, link.goodput_Bps / 1e6, link.rtt_median_us,
        link.rtt_min_us));
    links.push_back(ToProto(link));
  }
  if (absl::Status s = ProbeServers(rank, pairs, abort, &links); !s.ok()) {
    fail("the parameter-server links", s);
    return;
  }
  // The log lines first: the coordinator takes none once the job ended.
  if (absl::Status s = reporter_.Flush(absl::Now() + config_.rpc_timeout);
      !s.ok() && config_.log) {
    config_.log(absl::StrCat("job ", assignment_.job_id(), ": rank ", rank,
                             ": its log lines may be lost: ", s.message()));
  }
  Report(rank, RANK_STATE_SUCCEEDED, "", links);
}

absl::Status LinkProbeRunner::ProbeServers(int rank, LinkProbePairs pairs,
                                           std::atomic<bool>* abort,
                                           std::vector<LinkMeasurement>* out) {
  const int size = assignment_.world_size();
  const auto rounds =
      PsProbeRounds(size, assignment_.probe_servers_size(), pairs);
  if (!rounds.empty() && rank == assignment_.ranks(0)) {
    Log(absl::StrFormat(
        "rank %d: probing %d parameter-server host(s) in %d round(s), over "
        "their tensor planes",
        rank, assignment_.probe_servers_size(), rounds.size()));
  }
  for (size_t r = 0; r < rounds.size(); ++r) {
    for (const auto& [from, server] : rounds[r]) {
      if (from != rank) continue;
      RETURN_IF_ERROR(
          ProbeOneServer(rank, assignment_.probe_servers(server), abort, out));
    }
    // Every stream of this round ends before the next round's start.
    RETURN_IF_ERROR(
        StoreBarrier(store_.get(), absl::StrCat("link-probe/ps-round-", r + 1),
                     rank, size, absl::Now() + config_.collective_timeout));
  }
  return absl::OkStatus();
}

absl::Status LinkProbeRunner::ProbeOneServer(
    int rank, const ProbeServer& server, std::atomic<bool>* abort,
    std::vector<LinkMeasurement>* out) {
  const std::string who = absl::StrCat(
      "parameter server ", server.ps_id(), " (host ", server.host(),
      ", tensor plane at ", server.plane_address(), ")");
  auto named = [&](absl::string_view phase, const absl::Status& s) {
    return absl::Status(s.code(),
                        absl::StrCat(phase, " with ", who, ": ", s.message()));
  };
  const PlaneIdentity identity{assignment_.job_id(), rank,
                               assignment_.ps_token()};
  absl::StatusOr<std::unique_ptr<TensorPlaneChannel>> channel =
      TensorPlaneChannel::Connect(
          server.plane_address(), config_.tcp_congestion_control, identity,
          absl::Now() + config_.rendezvous_timeout, abort);
  if (!channel.ok()) {
    // A PS job's ranks would fail the same way: say what to check.
    return named(
        "connecting",
        absl::Status(channel.status().code(),
                     absl::StrCat(channel.status().message(),
                                  "; a PS job's ranks would not reach it "
                                  "either: check that this host reaches that "
                                  "address and port (a firewall?), or start "
                                  "the server with --advertise")));
  }
  const absl::Duration timeout = config_.collective_timeout;
  absl::StatusOr<RoundTripTimes> times = (*channel)->ProbeRoundTrips(
      probe_.round_trips(), absl::Now() + timeout, abort);
  if (!times.ok()) return named("round trips", times.status());
  absl::StatusOr<double> up = (*channel)->ProbeUpload(
      probe_.stream_bytes(), absl::Now() + timeout, abort);
  if (!up.ok()) return named("the stream to the server", up.status());
  absl::StatusOr<double> down = (*channel)->ProbeDownload(
      probe_.stream_bytes(), absl::Now() + timeout, abort);
  if (!down.ok()) return named("the stream from the server", down.status());
  for (const bool from_ps : {false, true}) {
    LinkMeasurement& m = out->emplace_back();
    m.set_from_rank(rank);
    m.set_ps_id(server.ps_id());
    m.set_ps_host(server.host());
    m.set_from_ps(from_ps);
    m.set_goodput_bytes_per_s(from_ps ? *down : *up);
    m.set_stream_bytes(probe_.stream_bytes());
    m.set_rtt_median_us(times->median_us);
    m.set_rtt_min_us(times->min_us);
    m.set_round_trips(times->count);
  }
  Log(absl::StrFormat(
      "rank %d: with %s: %.1f MB/s to it, %.1f MB/s from it, round trip "
      "%.0f us (fastest %.0f)",
      rank, who, *up / 1e6, *down / 1e6, times->median_us, times->min_us));
  return absl::OkStatus();
}

void LinkProbeRunner::Report(int rank, RankState state,
                             absl::string_view message,
                             const std::vector<LinkMeasurement>& links) {
  ReportRankRequest request;
  request.set_worker_id(config_.worker_id);
  request.set_credential(config_.credential);
  request.set_job_id(assignment_.job_id());
  request.set_rank(rank);
  request.set_state(state);
  if (state == RANK_STATE_FAILED) request.set_operation("link probe");
  request.set_message(std::string(message));
  for (const LinkMeasurement& link : links) *request.add_links() = link;
  ReportRankState(*client_, request, config_.rpc_timeout, config_.coordinator,
                  cancelled_, [this](absl::string_view line) { Log(line); });
}

}  // namespace gradsync
