// The local cluster of `gradsync local up` / `local down`: one
// gradsync-coordinator, N gradsync-worker and M gradsync-ps (parameter
// server) daemons on 127.0.0.1, started in the background (each in its own
// session, stdout and stderr to <run-dir>/<name>.log) and recorded in
// <run-dir>/cluster.json, which is what `local down` and a second `local
// up` read. Daemon names: "coordinator", "worker-<i>", "ps-<i>".
//
//   LocalUpConfig config;
//   config.run_dir = "/tmp/run";
//   config.workers = 2;
//   ASSIGN_OR_RETURN(LocalUpResult up, LocalUp(config));
//   ...
//   ASSIGN_OR_RETURN(LocalDownResult down, LocalDown("/tmp/run", ...));
//
// Pids read back from cluster.json are only signalled while
// /proc/<pid>/cmdline still names the daemon's binary, so a recycled pid
// is never killed.
//
// Threading: one thread at a time per run directory; two processes running
// `local up` on the same directory at once are not coordinated.
#ifndef GRADSYNC_CLI_CONTROL_LOCAL_CLUSTER_H_
#define GRADSYNC_CLI_CONTROL_LOCAL_CLUSTER_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/ps/transport/ps_transport.h"

namespace gradsync {
namespace cli {
namespace control {

inline constexpr absl::string_view kCoordinatorBinary = "gradsync-coordinator";
inline constexpr absl::string_view kWorkerBinary = "gradsync-worker";
inline constexpr absl::string_view kPsBinary = "gradsync-ps";
inline constexpr absl::string_view kClusterFile = "cluster.json";
// The users' token of the local cluster's coordinator (mode 0600).
inline constexpr absl::string_view kUserTokenFileName = "user-token";
// The coordinator's state database (its --state-db), beside them.
inline constexpr absl::string_view kStateDbFileName = "coordinator.db";
// The daemons' join token (their --join-token-file), beside it.
inline constexpr absl::string_view kJoinTokenFileName = "join-token";
// The local cluster's TLS directory under the run directory: its own CA
// and certificates (security/tls_dir.h), made fresh by each `local up`.
inline constexpr absl::string_view kTlsDirName = "tls";

// One daemon of the cluster.
struct DaemonRecord {
  std::string name;    // "coordinator", "worker-0", ...
  std::string binary;  // absolute path it was started from
  int pid = 0;
  std::string log;  // absolute path of its log
  // coordinator, parameter server: HOST:PORT (a server's from the first
  // line of its log); worker: its IP
  std::string address;
  std::string devices;  // workers: the --devices value
  // Where it runs, in `gradsync lab`: its network namespace (empty: the
  // caller's) and its host name (empty: the machine's).
  std::string netns;
  std::string host;
};

// cluster.json.
struct ClusterRecord {
  std::string run_dir;
  std::string coordinator_address;
  double started_at = 0;  // unix seconds
  // The cluster's TLS directory (`gradsync certs init`), which the CLI
  // uses for this coordinator; empty: the daemons run --insecure.
  std::string tls_dir;
  std::vector<DaemonRecord> daemons;  // the coordinator first
};

// JSON text of `record`, and back. Parsing errors are INVALID_ARGUMENT
// naming `source`.
std::string ClusterRecordToJson(const ClusterRecord& record);
[[nodiscard]] absl::StatusOr<ClusterRecord> ClusterRecordFromJson(
    absl::string_view json, absl::string_view source);

// <run_dir>/cluster.json if present (nullopt if not); INVALID_ARGUMENT if
// unreadable or malformed.
[[nodiscard]] absl::StatusOr<std::optional<ClusterRecord>> ReadClusterRecord(
    const std::string& run_dir);

// Where a daemon binary is: the first executable among
// <exe_dir>/<relative>/<name> for each of `relative_dirs`, then each
// directory of `path_env` (colon-separated). NOT_FOUND listing the places
// looked in.
[[nodiscard]] absl::StatusOr<std::string> FindDaemonBinary(
    absl::string_view name, const std::string& exe_dir,
    const std::vector<std::string>& relative_dirs, absl::string_view path_env);

// Whether `pid` is a live (not zombie) process whose command line names
// `binary_name` as its program.
bool IsDaemonAlive(int pid, absl::string_view binary_name);

// Whether the daemon of `record` is still running: our own child that has
// not exited (even before its exec), or a live process whose program is
// record.binary's file name.
bool IsRecordedDaemonAlive(const DaemonRecord& record);

// Where SpawnDaemon runs a daemon: a named network namespace (its path,
// /run/netns/NAME) and a host name of its own (a new UTS namespace), as an
// emulated host of `gradsync lab`. Empty fields: the caller's.
struct SpawnPlace {
  std::string netns_path;
  std::string hostname;
};

// Starts `binary` with `args` in a new session, stdin from /dev/null,
// stdout and stderr appended to `log_path` (created or truncated), at
// `place`. The daemon outlives this process. INTERNAL if the log or the
// namespace cannot be opened or fork fails; an exec failure (or a failure
// to enter the namespace) shows as exit status 127 and a line in the log.
[[nodiscard]] absl::StatusOr<pid_t> SpawnDaemon(
    const std::string& binary, const std::vector<std::string>& args,
    const std::string& log_path, const SpawnPlace& place = {});

// SIGTERM to each daemon still alive, wait up to `grace` for them to go,
// then SIGKILL the rest. Returns the names of the daemons that had to be
// killed.
std::vector<std::string> StopDaemons(const std::vector<DaemonRecord>& daemons,
                                     absl::Duration grace);

struct LocalUpConfig {
  std::string run_dir;  // created if missing
  int workers = 1;
  // gradsync-ps daemons, each started with --listen 127.0.0.1:0
  // --coordinator ADDRESS.
  int parameter_servers = 0;
  std::string devices_per_worker = "cpu:1";
  int port = 29400;  // 0: a free one, picked by local up
  std::string coordinator_binary;
  std::string worker_binary;
  std::string ps_binary;  // needed when parameter_servers > 0
  // Plaintext daemons (--insecure); false: mutual TLS with a fresh CA and
  // certificates in <run_dir>/tls (kTlsDirName), made on every start.
  bool insecure = false;
  // The workers' --ps-transport (server/ps/transport/ps_transport.h): "plane"
  // (the default; every gradsync-ps serves one) or "grpc".
  std::string ps_transport = kDefaultPsTransport;
  // How long the coordinator, every worker and parameter server get to
  // come up.
  absl::Duration timeout = absl::Seconds(30);
  absl::Duration stop_grace = absl::Seconds(10);
};

// One daemon StartCluster starts. `args` leave out --coordinator, which
// StartCluster adds (workers and parameter servers) once the coordinator's
// address is known.
struct DaemonPlan {
  std::string name;  // "coordinator", "worker-0", "ps-0"
  std::string binary;
  std::vector<std::string> args;
  // coordinator: HOST:PORT when known up front (else printed in its log);
  // worker: its IP.
  std::string address;
  std::string devices;  // workers
  std::string netns;    // lab: the namespace's name; empty: this one
  std::string host;     // lab: its host name; empty: the machine's
};

struct ClusterPlan {
  std::string run_dir;  // must exist
  DaemonPlan coordinator;
  std::vector<DaemonPlan> workers;
  std::vector<DaemonPlan> servers;
  absl::Duration timeout = absl::Seconds(30);
  absl::Duration stop_grace = absl::Seconds(10);
  // The users' token the coordinator was given (--user-token-file in its
  // args), for the waits' own calls; empty: none.
  std::string user_token;
  // The daemons' TLS directory (--tls-dir in their args), recorded in
  // cluster.json; the waits' own calls use its users' certificate. Empty:
  // plaintext (the daemons get --insecure in their args).
  std::string tls_dir;
};

struct StartedCluster {
  ClusterRecord record;
  int registered_workers = 0;
  int registered_parameter_servers = 0;
};

// Starts the coordinator, waits for it to answer, starts the workers and
// parameter servers, and waits until all of them have registered, keeping
// <run_dir>/cluster.json current. On error, stops whatever it started and
// removes cluster.json: UNAVAILABLE / DEADLINE_EXCEEDED naming the daemon
// that exited or did not come up, with the tail of its log.
[[nodiscard]] absl::StatusOr<StartedCluster> StartCluster(
    const ClusterPlan& plan);

// Workers first, then the parameter servers, then the coordinator; returns
// the names of those that needed SIGKILL.
std::vector<std::string> StopCluster(const std::vector<DaemonRecord>& daemons,
                                     absl::Duration grace);

struct LocalUpResult {
  ClusterRecord record;
  bool already_up = false;  // a live cluster was found in run_dir
  int registered_workers = 0;
  int registered_parameter_servers = 0;  // live ones
};

// Brings the cluster up and waits until the coordinator answers and all
// workers and parameter servers are registered (ListWorkers shows them). If
// run_dir holds a live cluster, returns it (already_up). A stale cluster.json
// (its coordinator is gone) is cleaned up first. Errors: FAILED_PRECONDITION
// when another coordinator already answers on the port; UNAVAILABLE /
// DEADLINE_EXCEEDED naming the daemon that exited or did not come up, with the
// tail of its log (whatever was started is stopped again).
[[nodiscard]] absl::StatusOr<LocalUpResult> LocalUp(
    const LocalUpConfig& config);

struct LocalDownResult {
  bool was_up = false;               // cluster.json was there
  std::vector<std::string> stopped;  // every daemon that was alive
  std::vector<std::string> killed;   // those that needed SIGKILL
};

// The processes of this machine (other than this one) whose command line
// holds `flag` followed by `value`: a daemon restarted by hand on the
// cluster's files (e.g. "--state-db" RUN_DIR/coordinator.db), which
// cluster.json does not know.
std::vector<int> ProcessesWithFlag(absl::string_view flag,
                                   absl::string_view value);

// Stops the daemons of <run_dir>/cluster.json (workers first, then the
// parameter servers, then the coordinator), and a coordinator restarted by
// hand on the cluster's state database, and removes the file; logs stay.
// No cluster.json: was_up false, nothing done.
[[nodiscard]] absl::StatusOr<LocalDownResult> LocalDown(
    const std::string& run_dir, absl::Duration grace);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_LOCAL_CLUSTER_H_
