#include "cli/lab/lab_up.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/control/local_cluster.h"
#include "cli/lab/lab_probe.h"
#include "cli/lab/lab_state.h"
#include "common/status_macros.h"
#include "security/secret.h"

namespace gradsync {
namespace lab {
namespace {

constexpr absl::Duration kStrayWait = absl::Seconds(2);

// An interface of this (root) namespace with an IPv4 address in the /24 of
// `subnet` ("A.B.C"), or "".
std::string InterfaceInSubnet(const std::string& subnet) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  const std::string start = absl::StrCat(subnet, ".");
  for (ifaddrs* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr &&
        absl::StartsWith(text, start)) {
      found = absl::StrCat(a->ifa_name, " (", text, ")");
    }
  }
  freeifaddrs(list);
  return found;
}

// Deletes what a lab of `prefix` left, after killing what runs inside its
// namespaces. Returns what it removed.
Leftovers RemoveNetwork(const std::string& prefix,
                        absl::Duration command_timeout,
                        std::vector<int>* strays) {
  Leftovers left = LabLeftovers(prefix);
  for (const std::string& ns : left.netns) {
    for (int pid : PidsInNamespace(ns)) {
      kill(pid, SIGKILL);
      if (strays != nullptr) strays->push_back(pid);
    }
  }
  // Killed processes leave their namespace only when they are gone.
  const absl::Time until = absl::Now() + kStrayWait;
  for (const std::string& ns : left.netns) {
    while (!PidsInNamespace(ns).empty() && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  RunCommands(NetworkDownCommands(prefix, left.netns, left.links),
              command_timeout)
      .IgnoreError();
  return left;
}

[[nodiscard]] absl::Status CheckBinaries(const LabConfig& config,
                                         const LabBinaries& binaries) {
  if (binaries.coordinator.empty() || binaries.worker.empty()) {
    return absl::InvalidArgumentError(
        "the lab needs gradsync-coordinator and gradsync-worker binaries");
  }
  if ((config.ps_hosts > 0 || config.colocate_ps) && binaries.ps.empty()) {
    return absl::InvalidArgumentError(
        "parameter-server hosts need the gradsync-ps binary");
  }
  return absl::OkStatus();
}

// The argument lists of every daemon of `plan`.
std::vector<std::vector<std::string>*> DaemonArgs(
    cli::control::ClusterPlan& plan) {
  std::vector<std::vector<std::string>*> out = {&plan.coordinator.args};
  for (cli::control::DaemonPlan& w : plan.workers) out.push_back(&w.args);
  for (cli::control::DaemonPlan& s : plan.servers) out.push_back(&s.args);
  return out;
}

}  // namespace

double LabPayloadGbps(int64_t rate_bps) {
  return LabPayloadBytesPerSecond(static_cast<double>(rate_bps)) / 1e9;
}

double LabAlphaUs(const LinkSettings& link) {
  return absl::ToDoubleMicroseconds(link.latency);
}

absl::Status TellCoordinatorLinks(cli::control::ControlClient& client,
                                  const LinkSettings& link) {
  absl::StatusOr<ClusterLinkFacts> facts = client.SetLinkFacts(
      LabPayloadGbps(link.rate_bps), LabAlphaUs(link),
      absl::StrCat("the lab's shaped links: ", link.rate_bps / 1e6, " Mbit/s"));
  if (!facts.ok()) {
    return absl::Status(
        facts.status().code(),
        absl::StrCat("the links are reshaped, but the coordinator at ",
                     client.address(),
                     " still has the old link facts, so --mode auto's model "
                     "is stale: ",
                     facts.status().message(),
                     "; run the same `gradsync lab set-link` again"));
  }
  return absl::OkStatus();
}

cli::control::ClusterPlan LabClusterPlan(const LabConfig& config,
                                         const std::vector<LabHost>& hosts,
                                         const LabBinaries& binaries,
                                         const std::string& run_dir) {
  cli::control::ClusterPlan plan;
  plan.run_dir = run_dir;
  for (const LabHost& host : hosts) {
    if (host.role == HostRole::kHead) {
      plan.coordinator.name = "coordinator";
      plan.coordinator.binary = binaries.coordinator;
      plan.coordinator.address =
          absl::StrCat(host.address, ":", kCoordinatorPort);
      // The links as --mode auto's model sees them.
      plan.coordinator.args = {
          "--listen",
          plan.coordinator.address,
          "--link-gbps",
          absl::StrFormat("%.9g", LabPayloadGbps(config.link.rate_bps)),
          "--link-alpha-us",
          absl::StrCat(LabAlphaUs(config.link))};
      plan.coordinator.netns = host.netns;
      plan.coordinator.host = host.name;
      continue;
    }
    for (int i = 0; i < host.workers; ++i) {
      cli::control::DaemonPlan worker;
      worker.name = host.workers == 1
                        ? absl::StrCat("worker-", host.name)
                        : absl::StrCat("worker-", host.name, "-", i);
      worker.binary = binaries.worker;
      worker.address = host.address;
      worker.devices = config.devices_per_worker;
      // Every emulated host shares this machine's cores: a rank spinning
      // for its peers would take a core another host's rank needs.
      worker.args = {"--devices",        worker.devices,
                     "--address",        host.address,
                     "--tcp-congestion", config.tcp_congestion,
                     "--spin-polls",     "0"};
      worker.args.insert(worker.args.end(),
                         {"--ps-transport", config.ps_transport});
      if (config.allow_entrypoints) {
        worker.args.push_back("--allow-entrypoints");
      }
      worker.netns = host.netns;
      worker.host = host.name;
      plan.workers.push_back(std::move(worker));
    }
    for (int i = 0; i < host.servers; ++i) {
      cli::control::DaemonPlan server;
      server.name = absl::StrCat("ps-", host.name);
      server.binary = binaries.ps;
      server.args = {"--listen", absl::StrCat(host.address, ":0"),
                     "--tcp-congestion", config.tcp_congestion};
      server.netns = host.netns;
      server.host = host.name;
      plan.servers.push_back(std::move(server));
    }
  }
  return plan;
}

absl::StatusOr<LabUpResult> LabUp(const LabUpOptions& options) {
  const LabConfig& config = options.config;
  RETURN_IF_ERROR(ValidateLabConfig(config));
  RETURN_IF_ERROR(CheckBinaries(config, options.binaries));
  RETURN_IF_ERROR(CheckLabPrivileges());
  std::error_code error;
  std::filesystem::create_directories(options.run_dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create the run directory ",
                                            options.run_dir, ": ",
                                            error.message()));
  }
  ASSIGN_OR_RETURN(std::optional<LabState> existing,
                   ReadLabState(options.run_dir));
  if (existing.has_value()) {
    ASSIGN_OR_RETURN(std::optional<cli::control::ClusterRecord> cluster,
                     cli::control::ReadClusterRecord(options.run_dir));
    const bool alive =
        cluster.has_value() && !cluster->daemons.empty() &&
        cli::control::IsRecordedDaemonAlive(cluster->daemons.front()) &&
        !LabLeftovers(existing->spec().prefix()).netns.empty();
    if (alive) {
      LabUpResult result;
      result.state = std::move(*existing);
      result.cluster = std::move(*cluster);
      result.already_up = true;
      return result;
    }
    // A dead or half-built lab: clear it before a fresh start.
    RETURN_IF_ERROR(LabDown(options.run_dir, "", absl::Seconds(5)).status());
  }
  const Leftovers left = LabLeftovers(config.prefix);
  if (!left.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a lab with prefix '", config.prefix, "' already exists (",
        absl::StrJoin(left.netns.empty() ? left.links : left.netns, ", "),
        ") but not in ", options.run_dir,
        "; take it down with `gradsync lab down --prefix ", config.prefix,
        "` or choose another --prefix"));
  }
  if (const std::string used = InterfaceInSubnet(config.subnet);
      !used.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the subnet ", config.subnet, ".0/24 is already in use here by ", used,
        "; choose another with --subnet"));
  }
  if (config.link.latency > absl::ZeroDuration()) {
    RETURN_IF_ERROR(CheckNetem(config.prefix, options.command_timeout));
  }

  const std::vector<LabHost> hosts = LabHosts(config);
  LabState state;
  *state.mutable_spec() = ToSpec(config);
  state.set_run_dir(options.run_dir);
  RETURN_IF_ERROR(WriteLabState(options.run_dir, state));
  absl::Status built =
      RunCommands(NetworkUpCommands(config, hosts), options.command_timeout);
  if (!built.ok()) {
    RemoveNetwork(config.prefix, options.command_timeout, nullptr);
    RemoveLabState(options.run_dir);
    return Annotate(built, "the lab's network could not be built (undone)");
  }
  cli::control::ClusterPlan plan =
      LabClusterPlan(config, hosts, options.binaries, options.run_dir);
  plan.timeout = options.timeout;
  // The lab's daemons talk plaintext: a join token is what proves them
  // daemons of this lab (server/coordinator/daemon_admission.h).
  const std::string join_path =
      absl::StrCat(options.run_dir, "/", cli::control::kJoinTokenFileName);
  std::remove(join_path.c_str());
  if (absl::Status written = WriteNewTokenFile(join_path).status();
      !written.ok()) {
    RemoveNetwork(config.prefix, options.command_timeout, nullptr);
    RemoveLabState(options.run_dir);
    return Annotate(written, "cannot write the lab's join token");
  }
  for (std::vector<std::string>* args : DaemonArgs(plan)) {
    args->push_back("--join-token-file");
    args->push_back(join_path);
  }
  if (config.allow_entrypoints) {
    // Only holders of the users' token may submit code for every worker
    // to run (docs/security.md): a fresh one for each lab.
    const std::string token_path =
        absl::StrCat(options.run_dir, "/", cli::control::kUserTokenFileName);
    std::remove(token_path.c_str());
    absl::StatusOr<std::string> token = WriteNewTokenFile(token_path);
    if (!token.ok()) {
      RemoveNetwork(config.prefix, options.command_timeout, nullptr);
      RemoveLabState(options.run_dir);
      return Annotate(token.status(), "cannot write the lab's users' token");
    }
    plan.user_token = *std::move(token);
    plan.coordinator.args.push_back("--user-token-file");
    plan.coordinator.args.push_back(token_path);
  }
  absl::StatusOr<cli::control::StartedCluster> started =
      cli::control::StartCluster(plan);
  if (!started.ok()) {
    RemoveNetwork(config.prefix, options.command_timeout, nullptr);
    RemoveLabState(options.run_dir);
    return Annotate(started.status(),
                    "the lab's daemons did not come up (the lab is undone)");
  }
  state.set_coordinator(started->record.coordinator_address);
  state.set_started_at(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  RETURN_IF_ERROR(WriteLabState(options.run_dir, state));
  LabUpResult result;
  result.state = std::move(state);
  result.cluster = std::move(started->record);
  return result;
}

absl::StatusOr<LabDownResult> LabDown(const std::string& run_dir,
                                      const std::string& prefix,
                                      absl::Duration grace) {
  RETURN_IF_ERROR(CheckLabPrivileges());
  LabDownResult result;
  std::string lab_prefix =
      prefix.empty() ? std::string(kDefaultPrefix) : prefix;
  absl::StatusOr<std::optional<LabState>> state = ReadLabState(run_dir);
  if (state.ok() && state->has_value()) {
    result.had_state = true;
    lab_prefix = (*state)->spec().prefix();
  }
  absl::StatusOr<std::optional<cli::control::ClusterRecord>> cluster =
      cli::control::ReadClusterRecord(run_dir);
  if (cluster.ok() && cluster->has_value()) {
    for (const cli::control::DaemonRecord& d : (*cluster)->daemons) {
      if (cli::control::IsRecordedDaemonAlive(d))
        result.stopped.push_back(d.name);
    }
    result.killed = cli::control::StopCluster((*cluster)->daemons, grace);
    std::remove(absl::StrCat(run_dir, "/", cli::control::kClusterFile).c_str());
  }
  // The lab's tokens live as long as the lab.
  for (absl::string_view token :
       {cli::control::kJoinTokenFileName, cli::control::kUserTokenFileName}) {
    std::remove(absl::StrCat(run_dir, "/", token).c_str());
  }
  result.removed = RemoveNetwork(lab_prefix, absl::Seconds(10), &result.strays);
  RemoveLabState(run_dir);
  const Leftovers still = LabLeftovers(lab_prefix);
  if (!still.empty()) {
    return absl::InternalError(absl::StrCat(
        "could not remove ",
        absl::StrJoin(still.netns.empty() ? still.links : still.netns, ", "),
        "; remove them by hand (ip netns del NAME / ip link del NAME)"));
  }
  return result;
}

absl::StatusOr<LabState> SetLabLink(const std::string& run_dir,
                                    const LinkSettings& link,
                                    absl::Duration command_timeout) {
  RETURN_IF_ERROR(CheckLabPrivileges());
  ASSIGN_OR_RETURN(std::optional<LabState> state, ReadLabState(run_dir));
  if (!state.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no lab runs from ", run_dir, " (no ", kLabStateFile,
                     "); start one with `gradsync lab up`"));
  }
  LabConfig config = FromSpec(state->spec());
  config.link = link;
  RETURN_IF_ERROR(ValidateLabConfig(config));
  if (link.latency > absl::ZeroDuration()) {
    RETURN_IF_ERROR(CheckNetem(config.prefix, command_timeout));
  }
  RETURN_IF_ERROR(
      RunCommands(ShapeCommands(link, LabHosts(config)), command_timeout));
  *state->mutable_spec() = ToSpec(config);
  state->clear_probe();  // the links changed: probe them again
  state->clear_fitted_alpha_s();
  state->clear_fitted_bandwidth_bps();
  RETURN_IF_ERROR(WriteLabState(run_dir, *state));
  return *std::move(state);
}

}  // namespace lab
}  // namespace gradsync
