// LocalUp and LocalDown (local_cluster.h): bring the daemons up in order
// (the coordinator, then the workers and parameter servers once it
// answers), record them, and take them down workers first.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cli/control/control_client.h"
#include "cli/control/local_cluster.h"
#include "common/status_macros.h"
#include "common/wait_status.h"
#include "security/certs.h"
#include "security/secret.h"
#include "security/tls.h"
#include "security/tls_dir.h"
#include "server/coordinator/state_db_files.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

constexpr absl::Duration kPoll = absl::Milliseconds(50);
constexpr absl::Duration kProbeTimeout = absl::Seconds(1);
// What the coordinator prints on stdout once it serves.
constexpr char kListeningLine[] = "listening on ";
constexpr int kLogTailLines = 5;
// A local cluster's certificates are made fresh by every `local up`.
constexpr int kLocalCertificateDays = 365;

// The last `lines` non-empty lines of `path`, indented, or a note that the
// log is empty.
std::string LogTail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) {
    if (!absl::StripAsciiWhitespace(line).empty()) all.push_back(line);
  }
  if (all.empty()) return absl::StrCat("  (", path, " is empty)");
  const auto keep =
      std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(all.size()), lines);
  std::vector<std::string> tail(all.end() - keep, all.end());
  return absl::StrCat("  ", absl::StrJoin(tail, "\n  "));
}

// UNAVAILABLE for the first of `daemons` (our children) that has exited.
[[nodiscard]] absl::Status CheckRunning(
    const std::vector<DaemonRecord>& daemons) {
  for (const DaemonRecord& d : daemons) {
    int status = 0;
    if (waitpid(d.pid, &status, WNOHANG) == d.pid) {
      return absl::UnavailableError(
          absl::StrCat(d.name, " (pid ", d.pid, ") ", DescribeExit(status),
                       " while starting; the end of ", d.log, ":\n",
                       LogTail(d.log, kLogTailLines)));
    }
  }
  return absl::OkStatus();
}

// The address the coordinator printed in its log, once it has.
std::string ListeningAddress(const std::string& log) {
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(kListeningLine);
    if (at != std::string::npos) {
      return std::string(absl::StripAsciiWhitespace(
          absl::string_view(line).substr(at + sizeof(kListeningLine) - 1)));
    }
  }
  return "";
}

// The first line of `log` that looks like HOST:PORT (what gradsync-ps
// prints first on stdout); empty until there is one.
std::string PrintedAddress(const std::string& log) {
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    const absl::string_view text = absl::StripAsciiWhitespace(line);
    const size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos || colon == 0 ||
        colon + 1 == text.size() ||
        text.find_first_of(" \t") != absl::string_view::npos) {
      continue;
    }
    const absl::string_view port = text.substr(colon + 1);
    if (std::all_of(port.begin(), port.end(),
                    [](char c) { return c >= '0' && c <= '9'; })) {
      return std::string(text);
    }
  }
  return "";
}

int LiveWorkers(const ListWorkersResponse& workers) {
  return static_cast<int>(std::count_if(
      workers.workers().begin(), workers.workers().end(),
      [](const WorkerInfo& w) { return w.state() != WORKER_STATE_LOST; }));
}

int LiveParameterServers(const ListWorkersResponse& workers) {
  return static_cast<int>(std::count_if(
      workers.parameter_servers().begin(), workers.parameter_servers().end(),
      [](const ParameterServerInfo& p) { return !p.lost(); }));
}

bool IsParameterServer(const DaemonRecord& d) {
  return absl::StartsWith(d.name, "ps-");
}

[[nodiscard]] absl::StatusOr<ListWorkersResponse> Probe(
    const std::string& address, const std::string& token,
    const GrpcSecurity& security) {
  ClientConfig config;
  config.address = address;
  config.rpc_timeout = kProbeTimeout;
  config.token = token;
  config.security = security;
  ControlClient client(config);
  return client.ListWorkers();
}

// The users' side of the TLS directory `dir` (plaintext for "").
[[nodiscard]] absl::StatusOr<GrpcSecurity> UserSecurity(
    const std::string& dir) {
  TlsOptions tls;
  tls.dir = dir;
  return SecurityFromOptions(tls, TlsRole::kUser);
}

[[nodiscard]] absl::Status WriteClusterRecord(const ClusterRecord& record) {
  const std::string path = absl::StrCat(record.run_dir, "/", kClusterFile);
  const std::string temp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(temp, std::ios::trunc);
    out << ClusterRecordToJson(record) << "\n";
    if (!out) {
      return absl::InternalError(absl::StrCat("cannot write ", temp));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", temp, " to ", path));
  }
  return absl::OkStatus();
}

void RemoveClusterRecord(const std::string& run_dir) {
  std::remove(absl::StrCat(run_dir, "/", kClusterFile).c_str());
}

// Workers first, so that they can still tell the coordinator why their
// jobs end; then the parameter servers (the ranks no longer use them);
// then the coordinator.
std::vector<std::string> StopWorkersThenCoordinator(
    const std::vector<DaemonRecord>& daemons, absl::Duration grace) {
  std::vector<DaemonRecord> workers, servers, coordinators;
  for (const DaemonRecord& d : daemons) {
    (d.name == "coordinator" ? coordinators
     : IsParameterServer(d)  ? servers
                             : workers)
        .push_back(d);
  }
  std::vector<std::string> killed;
  for (const auto* group : {&workers, &servers, &coordinators}) {
    for (std::string& name : StopDaemons(*group, grace)) {
      killed.push_back(std::move(name));
    }
  }
  return killed;
}

// Spawns `plan` (with `--coordinator ADDRESS` added unless empty, and
// --tls-dir TLS_DIR, or --insecure when that is empty) and records it.
[[nodiscard]] absl::StatusOr<DaemonRecord> Spawn(const DaemonPlan& plan,
                                                 const std::string& run_dir,
                                                 const std::string& coordinator,
                                                 const std::string& tls_dir) {
  DaemonRecord d;
  d.name = plan.name;
  d.binary = plan.binary;
  d.log = absl::StrCat(run_dir, "/", plan.name, ".log");
  d.address = plan.address;
  d.devices = plan.devices;
  d.netns = plan.netns;
  d.host = plan.host;
  std::vector<std::string> args = plan.args;
  if (tls_dir.empty()) {
    args.push_back("--insecure");
  } else {
    args.push_back("--tls-dir");
    args.push_back(tls_dir);
  }
  if (!coordinator.empty()) {
    args.push_back("--coordinator");
    args.push_back(coordinator);
  }
  SpawnPlace place;
  if (!plan.netns.empty()) {
    place.netns_path = absl::StrCat("/run/netns/", plan.netns);
  }
  place.hostname = plan.host;
  ASSIGN_OR_RETURN(d.pid, SpawnDaemon(d.binary, args, d.log, place));
  return d;
}

// The rest of StartCluster once the coordinator is spawned: its address,
// the workers and parameter servers, the wait. On error the caller stops
// what `record` lists.
[[nodiscard]] absl::Status StartAndWait(const ClusterPlan& plan,
                                        const GrpcSecurity& security,
                                        absl::Time deadline,
                                        ClusterRecord* record, int* registered,
                                        int* registered_servers) {
  // A reference into record->daemons would dangle once workers are added.
  const std::string coordinator_log = record->daemons.front().log;
  std::string address = record->daemons.front().address;
  // The address: known up front, or printed by the coordinator (port 0).
  while (address.empty()) {
    RETURN_IF_ERROR(CheckRunning(record->daemons));
    address = ListeningAddress(coordinator_log);
    if (!address.empty()) break;
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the coordinator did not report its address within ",
          absl::FormatDuration(plan.timeout), "; the end of ", coordinator_log,
          ":\n", LogTail(coordinator_log, kLogTailLines)));
    }
    absl::SleepFor(kPoll);
  }
  record->daemons.front().address = address;
  record->coordinator_address = address;
  RETURN_IF_ERROR(WriteClusterRecord(*record));
  // The coordinator answers.
  while (true) {
    RETURN_IF_ERROR(CheckRunning(record->daemons));
    if (Probe(address, plan.user_token, security).ok()) break;
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the coordinator did not answer at ", address, " within ",
          absl::FormatDuration(plan.timeout), "; the end of ", coordinator_log,
          ":\n", LogTail(coordinator_log, kLogTailLines)));
    }
    absl::SleepFor(kPoll);
  }
  for (const auto* group : {&plan.workers, &plan.servers}) {
    for (const DaemonPlan& daemon : *group) {
      ASSIGN_OR_RETURN(DaemonRecord d,
                       Spawn(daemon, plan.run_dir, address, plan.tls_dir));
      record->daemons.push_back(std::move(d));
    }
  }
  RETURN_IF_ERROR(WriteClusterRecord(*record));
  const int want_workers = static_cast<int>(plan.workers.size());
  const int want_servers = static_cast<int>(plan.servers.size());
  // Every worker and parameter server registered.
  while (true) {
    RETURN_IF_ERROR(CheckRunning(record->daemons));
    absl::StatusOr<ListWorkersResponse> workers =
        Probe(address, plan.user_token, security);
    if (workers.ok()) {
      *registered = LiveWorkers(*workers);
      *registered_servers = LiveParameterServers(*workers);
      if (*registered >= want_workers && *registered_servers >= want_servers) {
        break;
      }
    }
    if (absl::Now() > deadline) {
      const bool workers_missing = *registered < want_workers;
      std::string tails;
      for (const DaemonRecord& d : record->daemons) {
        if (d.name == "coordinator" ||
            IsParameterServer(d) == workers_missing) {
          continue;
        }
        absl::StrAppend(&tails, "\n", d.log, ":\n", LogTail(d.log, 2));
      }
      return absl::DeadlineExceededError(absl::StrCat(
          workers_missing
              ? absl::StrCat(*registered, " of ", want_workers,
                             " workers registered")
              : absl::StrCat(*registered_servers, " of ", want_servers,
                             " parameter servers (gradsync-ps) registered"),
          " with the coordinator within ", absl::FormatDuration(plan.timeout),
          " (raise --timeout on a slow machine); the ends of their logs:",
          tails));
    }
    absl::SleepFor(kPoll);
  }
  // The servers' addresses, for cluster.json: each prints its address
  // right after it registered. Best effort: missing ones stay empty.
  for (bool missing = true; missing;) {
    missing = false;
    for (DaemonRecord& d : record->daemons) {
      if (!IsParameterServer(d) || !d.address.empty()) continue;
      d.address = PrintedAddress(d.log);
      missing = missing || d.address.empty();
    }
    if (!missing || absl::Now() > deadline) break;
    absl::SleepFor(kPoll);
  }
  return WriteClusterRecord(*record);
}

// A port of 127.0.0.1 free right now (the kernel's pick for a socket
// bound to port 0), or 0 (the coordinator picks) if none could be had.
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace

std::vector<std::string> StopCluster(const std::vector<DaemonRecord>& daemons,
                                     absl::Duration grace) {
  return StopWorkersThenCoordinator(daemons, grace);
}

absl::StatusOr<StartedCluster> StartCluster(const ClusterPlan& plan) {
  const absl::Time deadline = absl::Now() + plan.timeout;
  StartedCluster started;
  ClusterRecord& record = started.record;
  record.run_dir = plan.run_dir;
  record.started_at = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  record.tls_dir = plan.tls_dir;
  // The waits' calls are a user's: the users' certificate.
  ASSIGN_OR_RETURN(const GrpcSecurity security, UserSecurity(plan.tls_dir));
  ASSIGN_OR_RETURN(DaemonRecord coordinator,
                   Spawn(plan.coordinator, plan.run_dir, "", plan.tls_dir));
  record.daemons.push_back(std::move(coordinator));
  absl::Status status = StartAndWait(plan, security, deadline, &record,
                                     &started.registered_workers,
                                     &started.registered_parameter_servers);
  if (!status.ok()) {
    StopWorkersThenCoordinator(record.daemons, plan.stop_grace);
    RemoveClusterRecord(plan.run_dir);
    return status;
  }
  return started;
}

absl::StatusOr<LocalUpResult> LocalUp(const LocalUpConfig& config) {
  if (config.workers < 1) {
    return absl::InvalidArgumentError("--workers must be >= 1");
  }
  if (config.parameter_servers < 0) {
    return absl::InvalidArgumentError("--ps must be >= 0");
  }
  if (config.port < 0 || config.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--port ", config.port, " is not a TCP port"));
  }
  RETURN_IF_ERROR(CheckPsTransport("--ps-transport", config.ps_transport));
  std::error_code error;
  std::filesystem::create_directories(config.run_dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create the run directory ",
                                            config.run_dir, ": ",
                                            error.message()));
  }
  const std::string token_path =
      absl::StrCat(config.run_dir, "/", kUserTokenFileName);
  ASSIGN_OR_RETURN(std::optional<ClusterRecord> existing,
                   ReadClusterRecord(config.run_dir));
  if (existing.has_value()) {
    const auto coordinator = std::find_if(
        existing->daemons.begin(), existing->daemons.end(),
        [](const DaemonRecord& d) { return d.name == "coordinator"; });
    if (coordinator != existing->daemons.end() &&
        IsRecordedDaemonAlive(*coordinator)) {
      absl::StatusOr<std::string> token = ReadTokenFile(token_path);
      absl::StatusOr<GrpcSecurity> security = UserSecurity(existing->tls_dir);
      absl::StatusOr<ListWorkersResponse> workers =
          security.ok()
              ? Probe(existing->coordinator_address,
                      token.ok() ? *token : std::string(), *security)
              : absl::StatusOr<ListWorkersResponse>(security.status());
      if (workers.ok()) {
        LocalUpResult result;
        result.record = std::move(*existing);
        result.already_up = true;
        result.registered_workers = LiveWorkers(*workers);
        result.registered_parameter_servers = LiveParameterServers(*workers);
        return result;
      }
    }
    // Stale: whatever is left of it goes before a fresh start.
    StopWorkersThenCoordinator(existing->daemons, config.stop_grace);
    RemoveClusterRecord(config.run_dir);
  }
  if (config.port != 0) {
    const std::string address = absl::StrCat("127.0.0.1:", config.port);
    // Any answer, UNAUTHENTICATED included, means a coordinator is there.
    absl::StatusOr<ListWorkersResponse> there =
        Probe(address, "", GrpcSecurity());
    if (there.ok() || absl::IsUnauthenticated(there.status())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "a coordinator already answers at ", address,
          ", not one started from ", config.run_dir,
          "; use it (export GRADSYNC_COORDINATOR=", address,
          "), stop it, or pick another port with --port (0: any free one)"));
    }
  }

  ClusterPlan plan;
  plan.run_dir = config.run_dir;
  plan.timeout = config.timeout;
  plan.stop_grace = config.stop_grace;
  plan.coordinator.name = "coordinator";
  plan.coordinator.binary = config.coordinator_binary;
  // With --port 0 a free port is picked here, not by the coordinator: its
  // command line then names the port it serves, so a restart by hand with
  // that line comes back where its workers look (trust finding 9). Only
  // the line changes: the address still comes from the log it prints.
  const int port = config.port != 0 ? config.port : FreeLoopbackPort();
  plan.coordinator.args = {"--listen", absl::StrCat("127.0.0.1:", port)};
  // Users authenticate by default: a fresh token for each cluster, which
  // the CLI finds in the run directory (or through GRADSYNC_TOKEN_FILE).
  std::remove(token_path.c_str());
  ASSIGN_OR_RETURN(plan.user_token, WriteNewTokenFile(token_path));
  plan.coordinator.args.push_back("--user-token-file");
  plan.coordinator.args.push_back(token_path);
  // Daemons prove they are this cluster's with a join token of their own,
  // which no user gets (server/coordinator/daemon_admission.h): under
  // --insecure it is their only proof.
  const std::string join_path =
      absl::StrCat(config.run_dir, "/", kJoinTokenFileName);
  std::remove(join_path.c_str());
  RETURN_IF_ERROR(WriteNewTokenFile(join_path).status());
  plan.coordinator.args.push_back("--join-token-file");
  plan.coordinator.args.push_back(join_path);
  // The coordinator survives its own restart on this database; a new
  // cluster starts from an empty one.
  const std::string state_db =
      absl::StrCat(config.run_dir, "/", kStateDbFileName);
  // With its generation sidecar: a sidecar left beside no database would
  // make the coordinator refuse to start (state_db_files.h).
  for (absl::string_view suffix :
       {absl::string_view(), kStateDbWalSuffix, absl::string_view("-shm"),
        absl::string_view("-journal"), kStateDbGenerationSuffix}) {
    std::remove(absl::StrCat(state_db, suffix).c_str());
  }
  plan.coordinator.args.push_back("--state-db");
  plan.coordinator.args.push_back(state_db);
  // mTLS by default too: a fresh CA and certificates for each cluster,
  // which every daemon gets (--tls-dir) and the CLI finds in cluster.json
  // (or through GRADSYNC_TLS_DIR).
  const std::string tls_dir = absl::StrCat(config.run_dir, "/", kTlsDirName);
  RemoveTlsDir(tls_dir);  // a previous cluster's
  if (!config.insecure) {
    plan.tls_dir = tls_dir;
    ASSIGN_OR_RETURN(const ClusterCertificates certs,
                     NewClusterCertificates(kLocalCertificateDays));
    RETURN_IF_ERROR(Annotate(WriteTlsDir(plan.tls_dir, certs, /*force=*/false),
                             "cannot write the local cluster's certificates"));
    // Nothing signs another certificate for a local cluster: its CA key
    // does not stay on disk while the cluster runs.
    const std::string ca_key = absl::StrCat(plan.tls_dir, "/", kCaKeyFile);
    if (std::remove(ca_key.c_str()) != 0) {
      return absl::InternalError(
          absl::StrCat("cannot remove the local CA's key ", ca_key));
    }
  }
  if (config.port != 0) {
    plan.coordinator.address = absl::StrCat("127.0.0.1:", config.port);
  }
  for (int i = 0; i < config.workers; ++i) {
    DaemonPlan worker;
    worker.name = absl::StrCat("worker-", i);
    worker.binary = config.worker_binary;
    worker.address = "127.0.0.1";
    worker.devices = config.devices_per_worker;
    // A local cluster is its user's own machine: entrypoint jobs (their
    // own scripts) may run, as that user, in any directory.
    worker.args = {"--devices",    worker.devices,        "--address",
                   worker.address, "--allow-entrypoints", "--join-token-file",
                   join_path,      "--ps-transport",      config.ps_transport};
    plan.workers.push_back(std::move(worker));
  }
  for (int i = 0; i < config.parameter_servers; ++i) {
    DaemonPlan server;
    server.name = absl::StrCat("ps-", i);
    server.binary = config.ps_binary;
    // Each serves a tensor plane (gradsync-ps's default --tensor-port 0).
    server.args = {"--listen", "127.0.0.1:0", "--join-token-file", join_path};
    plan.servers.push_back(std::move(server));
  }
  absl::StatusOr<StartedCluster> started = StartCluster(plan);
  if (!started.ok()) {
    return Annotate(started.status(),
                    "the local cluster did not come up (stopped it)");
  }
  LocalUpResult result;
  result.record = std::move(started->record);
  result.registered_workers = started->registered_workers;
  result.registered_parameter_servers = started->registered_parameter_servers;
  return result;
}

absl::StatusOr<LocalDownResult> LocalDown(const std::string& run_dir,
                                          absl::Duration grace) {
  LocalDownResult result;
  ASSIGN_OR_RETURN(std::optional<ClusterRecord> record,
                   ReadClusterRecord(run_dir));
  if (!record.has_value()) return result;
  result.was_up = true;
  for (const DaemonRecord& d : record->daemons) {
    if (IsRecordedDaemonAlive(d)) {
      result.stopped.push_back(d.name);
    }
  }
  result.killed = StopWorkersThenCoordinator(record->daemons, grace);
  // A coordinator restarted by hand (trust finding 9) has a pid cluster.json
  // does not know; it runs on the cluster's state database.
  std::vector<DaemonRecord> strays;
  for (const std::string& dir : {run_dir, record->run_dir}) {
    for (int pid : ProcessesWithFlag(
             "--state-db", absl::StrCat(dir, "/", kStateDbFileName))) {
      if (std::none_of(strays.begin(), strays.end(),
                       [pid](const DaemonRecord& d) { return d.pid == pid; })) {
        DaemonRecord stray;
        stray.name =
            absl::StrCat("coordinator (restarted by hand, pid ", pid, ")");
        stray.pid = pid;
        strays.push_back(stray);
        result.stopped.push_back(stray.name);
      }
    }
  }
  if (!strays.empty()) {
    for (std::string& name : StopCluster(strays, grace)) {
      result.killed.push_back(std::move(name));
    }
  }
  RemoveClusterRecord(run_dir);
  std::remove(absl::StrCat(run_dir, "/", kUserTokenFileName).c_str());
  std::remove(absl::StrCat(run_dir, "/", kJoinTokenFileName).c_str());
  if (!record->tls_dir.empty()) RemoveTlsDir(record->tls_dir);
  return result;
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
