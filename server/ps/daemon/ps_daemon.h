// The `gradsync-ps` daemon: command line, server start, registration with
// the coordinator, signal wait. Kept out of main.cc so that tests can run
// it with their own coordinator connection (PsDaemonHooks).
//
//   gradsync-ps --listen 0.0.0.0:29600 --coordinator 10.0.0.1:29500
//
// With --coordinator it registers (RegisterParameterServer: this host's
// name, the address workers connect to, its pid) before it prints its
// address, retrying for up to register_timeout, then heartbeats in the
// background: every shard's counters go up, the shards of jobs the
// coordinator says ended are released (ps_registration.h). The address it
// registers is the bound one, or <host name>:<port> when it listens on a
// wildcard address (0.0.0.0, ::).
//
// The first line on stdout is the bound address (host:port), for scripts
// that start it on port 0. Exit codes: 0 after SIGINT/SIGTERM, 1 if it
// cannot serve (listen failed, or the coordinator could not be registered
// with: unreachable for register_timeout, or refused), 2 on a bad command
// line.
#ifndef GRADSYNC_SERVER_PS_DAEMON_PS_DAEMON_H_
#define GRADSYNC_SERVER_PS_DAEMON_PS_DAEMON_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "security/tls.h"
#include "server/coordinator/coordinator_client.h"
#include "server/ps/daemon/ps_server.h"

namespace gradsync {

// PsServerOptions as the daemon starts them: a tensor plane on any free
// port (--tensor-port 0), the workers' default transport.
inline PsServerOptions DaemonServerOptions() {
  PsServerOptions options;
  options.tensor_port = 0;
  return options;
}

struct PsDaemonConfig {
  std::string listen = "127.0.0.1:29600";
  // Coordinator to register with ("host:port"); empty: none.
  std::string coordinator;
  // --advertise HOST[:PORT]: the address workers are told to connect to;
  // empty: the listen address, or this host's name for a wildcard listen
  // (RegisteredPsAddress).
  std::string advertise;
  // --join-token-file: the cluster's join token, sent when registering;
  // empty: none.
  std::string join_token_file;
  // --host NAME: the host name registered (placement, explain); empty:
  // this machine's.
  std::string host;
  // How long the first registration may keep failing before exit 1.
  absl::Duration register_timeout = absl::Seconds(30);
  PsServerOptions server = DaemonServerOptions();
  // --tls-dir / --insecure: the server's and the coordinator channel's
  // security, resolved by RunPsDaemon (server.transport.security is
  // replaced by it).
  TlsOptions tls;
  // --ps-plaintext: the server itself in plaintext, whatever `tls` says
  // (the coordinator channel keeps it).
  bool ps_plaintext = false;
  // --health-listen: the plaintext probe port (observability/health_server.h),
  // ready while registered with the coordinator (or, without one, while
  // serving); empty: none.
  std::string health_listen;
  // --version: print the version and the wire version instead of serving.
  bool version = false;
};

// What the daemon uses beyond its config; unset ones take the defaults.
struct PsDaemonHooks {
  // The coordinator's client; default: ConnectCoordinator(coordinator), a
  // gRPC channel with the daemon's security that reconnects quickly.
  std::function<std::shared_ptr<CoordinatorClient>(
      const std::string& coordinator)>
      connect_coordinator;
};

// Parses argv (common/flags.h). Sets *help for -h/--help and
// config.version for --version; INVALID_ARGUMENT naming the bad argument
// otherwise.
[[nodiscard]] absl::StatusOr<PsDaemonConfig> ParsePsDaemonFlags(int argc,
                                                                char** argv,
                                                                bool* help);

// The usage text, its flags wrapped to `width` columns.
std::string PsDaemonUsage(int width = 80);

// The address to register for a server listening on `listen_host` at
// `port`: listen_host:port; for a wildcard host, the address of the
// interface that reaches `coordinator` (LocalAddressToward), else this
// host's name.
std::string AdvertisedPsAddress(const std::string& listen_host, int port,
                                const std::string& coordinator = "");

// The address to register: `advertise` ("HOST", "HOST:PORT", "[V6]" or
// "[V6]:PORT"; the bound `port` when it names none), else
// AdvertisedPsAddress(listen_host, port, coordinator).
std::string RegisteredPsAddress(const std::string& advertise,
                                const std::string& listen_host, int port,
                                const std::string& coordinator = "");

// Serves until SIGINT or SIGTERM; returns the exit code (2 when the
// --tls-dir files cannot be used). Blocks those
// signals in the calling thread first (call it before other threads).
int RunPsDaemon(const PsDaemonConfig& config,
                const PsDaemonHooks& hooks = PsDaemonHooks());

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_DAEMON_PS_DAEMON_H_
