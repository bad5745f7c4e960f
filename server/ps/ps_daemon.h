// The `gradsync-ps` daemon: command line, server start, signal wait. Kept
// out of main.cc so that the steps around serving (registering with a
// coordinator) can be wired through PsDaemonHooks without touching the
// flag parsing or the serving loop.
//
//   gradsync-ps --listen 0.0.0.0:29600 --coordinator 10.0.0.1:29500
//
// The first line on stdout is the bound address (host:port), for scripts
// that start it on port 0. Exit codes: 0 after SIGINT/SIGTERM, 1 if it
// cannot serve (listen or a hook failed), 2 on a bad command line.
#ifndef GRADSYNC_SERVER_PS_PS_DAEMON_H_
#define GRADSYNC_SERVER_PS_PS_DAEMON_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/ps/ps_server.h"

namespace gradsync {

struct PsDaemonConfig {
  std::string listen = "127.0.0.1:29600";
  // Coordinator to announce this server to ("host:port"); empty: none.
  std::string coordinator;
  PsServerOptions server;
};

// Steps the daemon runs around serving; unset ones are skipped.
struct PsDaemonHooks {
  // After the server listens, before the address is printed; an error
  // stops the daemon (exit 1). Gets the config and the bound address.
  std::function<absl::Status(const PsDaemonConfig& config,
                             const std::string& address)>
      register_with_coordinator;
};

// Parses argv. Sets *help (and returns the defaults) for -h/--help;
// INVALID_ARGUMENT naming the bad argument otherwise.
absl::StatusOr<PsDaemonConfig> ParsePsDaemonFlags(int argc, char** argv,
                                                  bool* help);

// The usage text.
const char* PsDaemonUsage();

// Serves until SIGINT or SIGTERM; returns the exit code. Blocks those
// signals in the calling thread first (call it before other threads).
int RunPsDaemon(const PsDaemonConfig& config, const PsDaemonHooks& hooks);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_PS_DAEMON_H_
