// gradsync-coordinator: runs the coordinator (worker and parameter-server
// registries, job table, rendezvous store, metrics) until SIGINT or SIGTERM.
//
//   gradsync-coordinator --listen 127.0.0.1:29400 --lease-ms 5000
//                        --heartbeat-ms 500 --state-db /var/lib/gradsync/db
//
// Prints "gradsync-coordinator listening on <host:port>" on stdout once it
// serves (port 0 picks a free port), then one line per event (workers
// registered or lost, job state changes) on stderr. Exits 0 after a
// signal, 1 if it cannot start, 2 on a bad command line. --version prints
// the version and the wire version.
#include <signal.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/advertised_address.h"
#include "common/flags.h"
#include "observability/health_server.h"
#include "observability/metrics_http.h"
#include "security/grpc_log_tap.h"
#include "security/path_roots.h"
#include "security/secret.h"
#include "security/tls.h"
#include "server/coordinator/coordinator_server.h"
#include "server/coordinator/sqlite_state_store.h"

namespace {

struct Flags {
  std::string listen = "127.0.0.1:29400";
  absl::Duration lease = absl::Milliseconds(5000);
  absl::Duration heartbeat = absl::Milliseconds(500);
  std::string advertise;
  double link_gbps = 0;
  double link_alpha_us = 0;
  std::vector<std::string> checkpoint_roots;
  std::string user_token_file;
  std::string join_token_file;
  std::string state_db;
  bool accept_state_rollback = false;
  std::string metrics_listen;
  std::string health_listen;
  gradsync::TlsOptions tls;
  bool help = false;
  bool version = false;
};

std::vector<gradsync::FlagSpec> FlagTable(Flags* flags) {
  std::vector<gradsync::FlagSpec> table = {
      gradsync::StringFlag(
          "listen", "HOST:PORT",
          "address to listen on (default 127.0.0.1:29400; 0.0.0.0:29400 "
          "accepts other hosts, port 0 picks a free port)",
          &flags->listen),
      gradsync::StringFlag(
          "advertise", "HOST[:PORT]",
          "where daemons and users reach this coordinator, as printed in "
          "the join line at start and reported by `gradsync version` "
          "(default: the listen address; for a wildcard listen, the address "
          "of the interface on the default route). Set it when they reach "
          "it by another name (DNS, a NAT, a load balancer)",
          &flags->advertise),
      gradsync::MillisecondsFlag(
          "lease-ms",
          "a worker or parameter server silent for this long is lost and "
          "its jobs fail (default 5000)",
          &flags->lease),
      gradsync::MillisecondsFlag(
          "heartbeat-ms",
          "how often workers and parameter servers heartbeat (default 500; "
          "must be below --lease-ms)",
          &flags->heartbeat),
      gradsync::FlagSpec{
          "link-gbps", "B",
          "each host's link, GB/s of payload, for the alpha-beta model "
          "behind --mode auto's decisions (default: unknown)",
          [flags](absl::string_view value) {
            absl::StatusOr<double> gbps =
                gradsync::ParseDoubleValue("--link-gbps", value, 0);
            if (!gbps.ok()) return gbps.status();
            flags->link_gbps = *gbps;
            return absl::OkStatus();
          }},
      gradsync::FlagSpec{
          "link-alpha-us", "A",
          "the model's latency per message, in microseconds (default 0)",
          [flags](absl::string_view value) {
            absl::StatusOr<double> us =
                gradsync::ParseDoubleValue("--link-alpha-us", value, 0);
            if (!us.ok()) return us.status();
            flags->link_alpha_us = *us;
            return absl::OkStatus();
          }},
      gradsync::FlagSpec{
          "checkpoint-root", "DIR[,DIR...]",
          "directories jobs may keep checkpoints in (checkpoint.directory "
          "and resumeFrom must lie under one; default: anywhere). Give the "
          "workers the same --checkpoint-root",
          [flags](absl::string_view value) {
            absl::StatusOr<std::vector<std::string>> roots =
                gradsync::ParseRoots(value);
            if (!roots.ok()) return roots.status();
            flags->checkpoint_roots = *std::move(roots);
            return absl::OkStatus();
          }},
      gradsync::StringFlag(
          "user-token-file", "FILE",
          "users (the CLI) must present the token in FILE with every call "
          "(their --token-file / GRADSYNC_TOKEN_FILE); default: none, any "
          "client that reaches the port may submit, cancel and read jobs",
          &flags->user_token_file),
      gradsync::StringFlag(
          "join-token-file", "FILE",
          "workers and parameter servers must present the token in FILE "
          "(their --join-token-file) to register; under mTLS they must also "
          "present the node certificate. Default: none, and without mTLS any "
          "client that reaches the port may register as a daemon and receive "
          "job secrets",
          &flags->join_token_file),
      gradsync::StringFlag(
          "state-db", "FILE",
          "keep the coordinator's state (daemons, jobs, metrics, id "
          "counters) in this SQLite database, so that a restarted "
          "coordinator goes on where it stopped: running jobs keep running "
          "and daemons re-attach (default: none, a restart forgets "
          "everything)",
          &flags->state_db),
      gradsync::SwitchFlag(
          "accept-state-rollback",
          "start on a --state-db that its checks refuse as an older state "
          "than its sidecar FILE.generation says (copied or restored "
          "without its log FILE-wal, an older copy, an empty file beside "
          "its log, no sidecar), taking it as it is and writing the sidecar "
          "anew. Give it for that one start only",
          &flags->accept_state_rollback),
      gradsync::MetricsListenFlag(&flags->metrics_listen),
      gradsync::HealthListenFlag(&flags->health_listen),
  };
  gradsync::AddTlsFlags(&flags->tls, &table);
  table.push_back(gradsync::HelpFlag(&flags->help));
  table.push_back(gradsync::VersionFlag(&flags->version));
  return table;
}

std::string Usage() {
  Flags unused;
  return absl::StrCat(
      "usage: gradsync-coordinator [flags]\n\n"
      "Runs the gradsync coordinator until SIGINT or SIGTERM.\n\n",
      gradsync::FlagsHelp(FlagTable(&unused), gradsync::TerminalWidth()));
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  absl::StatusOr<std::vector<std::string>> positional =
      gradsync::ParseFlags(argc, argv, FlagTable(&flags));
  if (positional.ok() && !positional->empty()) {
    positional = absl::InvalidArgumentError(
        absl::StrCat("unknown argument '", (*positional)[0], "'"));
  }
  if (positional.ok() && flags.accept_state_rollback &&
      flags.state_db.empty()) {
    positional = absl::InvalidArgumentError(
        "--accept-state-rollback needs --state-db (the database to accept)");
  }
  if (positional.ok() && !flags.advertise.empty()) {
    // The syntax now (exit 2); the port and route once bound.
    if (absl::Status s = gradsync::CoordinatorAdvertisedAddress(flags.advertise,
                                                                "", 29400, "")
                             .status();
        !s.ok()) {
      positional = s;
    }
  }
  if (!positional.ok()) {
    std::cerr << "gradsync-coordinator: " << positional.status().message()
              << "\n\n"
              << Usage();
    return 2;
  }
  if (flags.help) {
    std::cout << Usage();
    return 0;
  }
  if (flags.version) {
    std::cout << gradsync::VersionLine("gradsync-coordinator") << "\n";
    return 0;
  }

  // Block the signals before gRPC starts its threads, so that they inherit
  // the mask and only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  gradsync::CoordinatorServerOptions server_options;
  absl::StatusOr<gradsync::GrpcSecurity> security =
      gradsync::SecurityFromOptions(flags.tls, gradsync::TlsRole::kDaemon);
  if (!security.ok()) {
    std::cerr << "gradsync-coordinator: " << security.status().message()
              << "\n";
    return 2;
  }
  std::cerr << "gradsync-coordinator: "
            << gradsync::SecurityLine(*security, flags.tls) << "\n";
  server_options.security = *std::move(security);
  server_options.metrics_listen = flags.metrics_listen;
  server_options.advertise = flags.advertise;

  gradsync::CoordinatorConfig config;
  config.lease = flags.lease;
  config.heartbeat_interval = flags.heartbeat;
  config.lease_check_interval =
      std::min(absl::Milliseconds(250), config.lease / 4);
  config.link_bandwidth_Bps = flags.link_gbps * 1e9;
  config.link_alpha_s = flags.link_alpha_us * 1e-6;
  config.checkpoint_roots = flags.checkpoint_roots;
  if (!flags.user_token_file.empty()) {
    absl::StatusOr<std::string> token =
        gradsync::ReadTokenFile(flags.user_token_file);
    if (!token.ok()) {
      std::cerr << "gradsync-coordinator: --user-token-file: "
                << token.status().message() << "\n";
      return 2;
    }
    config.user_token = *std::move(token);
  } else {
    std::cerr << "gradsync-coordinator: users are not authenticated (no "
                 "--user-token-file): any client that reaches "
              << flags.listen << " may submit, cancel and read jobs\n";
  }
  // Daemons prove what they are before they register (daemon_admission.h).
  config.require_node_certificate = server_options.security.tls();
  if (!flags.join_token_file.empty()) {
    absl::StatusOr<std::string> token =
        gradsync::ReadTokenFile(flags.join_token_file);
    if (!token.ok()) {
      std::cerr << "gradsync-coordinator: --join-token-file: "
                << token.status().message() << "\n";
      return 2;
    }
    config.join_token = *std::move(token);
  } else if (!config.require_node_certificate) {
    std::cerr << "gradsync-coordinator: daemons are not authenticated (no "
                 "--tls-dir, no --join-token-file): any client that reaches "
              << flags.listen
              << " may register as a worker and receive job secrets\n";
  }
  if (!flags.state_db.empty()) {
    gradsync::SqliteStateStoreOptions options;
    options.accept_rollback = flags.accept_state_rollback;
    options.log = [](absl::string_view line) {
      std::cerr << "gradsync-coordinator: --state-db: " << line << "\n";
    };
    absl::StatusOr<std::unique_ptr<gradsync::StateStore>> store =
        gradsync::OpenSqliteStateStore(flags.state_db, options);
    if (!store.ok()) {
      std::cerr << "gradsync-coordinator: --state-db: "
                << store.status().message() << "\n";
      return 1;
    }
    config.state_store = *std::move(store);
  } else {
    std::cerr << "gradsync-coordinator: no --state-db: a restart of this "
                 "coordinator forgets every job and daemon\n";
  }
  config.event_log = [](absl::string_view line) {
    std::cerr << absl::FormatTime("%Y-%m-%d %H:%M:%E3S", absl::Now(),
                                  absl::LocalTimeZone())
              << " gradsync-coordinator: " << line << std::endl;
  };
  // gRPC's log function from here on, so that its "Handshake failed" lines
  // reach the server, which names the peer (security/grpc_log_tap.h). Made
  // before the server and destroyed after it.
  absl::StatusOr<std::unique_ptr<gradsync::GrpcLogTap>> grpc_log =
      gradsync::GrpcLogTap::Install();
  if (!grpc_log.ok()) {
    std::cerr << "gradsync-coordinator: " << grpc_log.status().message()
              << "\n";
    return 1;
  }
  server_options.handshakes.log = config.event_log;
  server_options.handshakes.tap = grpc_log->get();
  absl::StatusOr<std::unique_ptr<gradsync::CoordinatorServer>> server =
      gradsync::CoordinatorServer::Start(flags.listen, std::move(config),
                                         server_options);
  if (!server.ok()) {
    std::cerr << "gradsync-coordinator: " << server.status().message() << "\n";
    return 1;
  }
  std::cout << "gradsync-coordinator listening on " << (*server)->address()
            << std::endl;
  const std::string& reach = (*server)->advertised_address();
  std::cerr << "gradsync-coordinator: reached at " << reach
            << ": start daemons with `gradsync-worker --coordinator " << reach
            << "` and `gradsync-ps --coordinator " << reach
            << "`; users set GRADSYNC_COORDINATOR=" << reach
            << " (--advertise to change it)\n";
  if (!(*server)->metrics_address().empty()) {
    std::cerr << "gradsync-coordinator: metrics on http://"
              << (*server)->metrics_address() << "/metrics\n";
  }

  // Ready as soon as it serves: the coordinator needs no one else.
  absl::StatusOr<std::unique_ptr<gradsync::HealthServer>> health =
      gradsync::ServeDaemonHealth(flags.health_listen, "gradsync-coordinator");
  if (!health.ok()) {
    std::cerr << "gradsync-coordinator: " << health.status().message() << "\n";
    (*server)->Shutdown();
    return 1;
  }
  if (*health != nullptr) {
    (*health)->SetReady(true);
    std::cerr << "gradsync-coordinator: health checks on "
              << (*health)->address() << "\n";
  }

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::cerr << "gradsync-coordinator: got " << strsignal(signal_number)
            << ", shutting down\n";
  if (*health != nullptr) (*health)->Shutdown();
  (*server)->Shutdown();
  return 0;
}
