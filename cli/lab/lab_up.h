// `gradsync lab up`, `down` and `set-link`: build the emulated hosts of
// lab_config.h, start the daemons inside them, and take it all down again.
//
//   LabUpOptions options;
//   options.config.worker_hosts = 4;
//   options.config.ps_hosts = 1;
//   options.run_dir = "/tmp/lab";
//   options.binaries = ...;  // gradsync-coordinator, -worker, -ps
//   ASSIGN_OR_RETURN(LabUpResult up, LabUp(options));
//   // export GRADSYNC_COORDINATOR=<up.state.coordinator()>
//   ASSIGN_OR_RETURN(LabDownResult down, LabDown("/tmp/lab", "", grace));
//
// Up: checks privileges (and netem for --latency), refuses a subnet this
// machine already uses or names a lab of the same prefix left over, writes
// lab.json, builds the network, starts the coordinator on the head and the
// workers and servers on their hosts (each daemon in its host's network
// namespace and with the host's name), and waits until all registered
// (cli::control::StartCluster, which keeps cluster.json). Anything that fails
// undoes everything before the error returns. A live lab in the same run
// directory is returned as is (already_up).
//
// Down: stops the recorded daemons (workers, servers, coordinator), kills
// any other process still inside a lab namespace, deletes the namespaces,
// veths and bridge, and removes lab.json and cluster.json. Idempotent;
// without lab.json it cleans up by `prefix`, so it also undoes a crashed
// `up`.
#ifndef GRADSYNC_CLI_LAB_LAB_UP_H_
#define GRADSYNC_CLI_LAB_LAB_UP_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/control/control_client.h"
#include "cli/control/local_cluster.h"
#include "cli/lab/lab_config.h"
#include "cli/lab/lab_network.h"
#include "proto/lab.pb.h"

namespace gradsync {
namespace lab {

struct LabBinaries {
  std::string coordinator;
  std::string worker;
  std::string ps;  // needed with server hosts or --colocate-ps
};

struct LabUpOptions {
  LabConfig config;
  std::string run_dir;
  LabBinaries binaries;
  absl::Duration timeout = absl::Seconds(60);          // daemons registered
  absl::Duration command_timeout = absl::Seconds(10);  // each ip/tc
};

struct LabUpResult {
  LabState state;
  cli::control::ClusterRecord cluster;
  bool already_up = false;
};

[[nodiscard]] absl::StatusOr<LabUpResult> LabUp(const LabUpOptions& options);

struct LabDownResult {
  bool had_state = false;            // lab.json was there
  std::vector<std::string> stopped;  // daemons that were running
  std::vector<std::string> killed;   // needed SIGKILL
  std::vector<int> strays;           // other processes killed in the lab
  Leftovers removed;                 // namespaces and interfaces deleted
};

// `prefix` is used when run_dir holds no lab.json (empty: the default).
[[nodiscard]] absl::StatusOr<LabDownResult> LabDown(const std::string& run_dir,
                                                    const std::string& prefix,
                                                    absl::Duration grace);

// Re-shapes every link of the running lab to `link` and records it;
// returns the lab's state as written. FAILED_PRECONDITION when no lab runs
// from run_dir.
[[nodiscard]] absl::StatusOr<LabState> SetLabLink(
    const std::string& run_dir, const LinkSettings& link,
    absl::Duration command_timeout);

// What the coordinator's model is told of a link (its --link-gbps and
// --link-alpha-us, and SetLinkFacts after set-link): the TCP payload rate
// of `rate_bps` in GB/s (ExpectedGoodput of full frames), and the one-way
// delay in us.
double LabPayloadGbps(int64_t rate_bps);
double LabAlphaUs(const LinkSettings& link);

// Tells the lab's coordinator that its links are now `link`, so that
// --mode auto decides with the links as they are. The links are shaped
// already: the error says so and how to retry.
[[nodiscard]] absl::Status TellCoordinatorLinks(
    cli::control::ControlClient& client, const LinkSettings& link);

// The daemons StartCluster runs for `config`: the coordinator on the head,
// W workers per worker host, a gradsync-ps per server host (and per worker
// host with colocate_ps). Exposed for tests.
cli::control::ClusterPlan LabClusterPlan(const LabConfig& config,
                                         const std::vector<LabHost>& hosts,
                                         const LabBinaries& binaries,
                                         const std::string& run_dir);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_UP_H_
