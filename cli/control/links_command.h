// `gradsync links`: the link facts `explain` and `--mode auto` model a
// cluster with, measured on the cluster itself.
//
//   gradsync links probe [--pairs ring|all] [--bytes 64M] [--round-trips 20]
//                        [--expect-gbit RATE] [--mtu 1500]
//                        [--tolerance 0.15] [--no-set] [--wait 10m]
//   gradsync links show
//
// probe submits a link-probe job (models/link_probe/link_probe_spec.h) with one
// rank on each worker host (which also measures the links of the
// parameter-server hosts without a worker, over their tensor planes), waits for
// it, prints each link's goodput and round trip against the expected payload
// rate of --expect-gbit (the NICs' line rate in Gbit/s; else against the
// median), and stores the median goodput and half the median round trip as the
// coordinator's link facts (SetLinkFacts, with the job named as their source),
// unless --no-set. Exit 0, or 1 when a link is below --expect-gbit's rate (the
// facts are set all the same: they are what the cluster does; a link far below
// the median is named, but without an expectation it fails nothing) or the
// probe failed, 2 for a bad command line. show prints the facts the coordinator
// holds and where they came from.
#ifndef GRADSYNC_CLI_CONTROL_LINKS_COMMAND_H_
#define GRADSYNC_CLI_CONTROL_LINKS_COMMAND_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/framework/command_env.h"
#include "proto/coordinator.pb.h"

namespace gradsync {
namespace cli {
namespace control {

int RunLinks(const std::vector<std::string>& args, const CommandEnv& env);

// The link-probe job for `cluster`: one rank on every host with a live
// worker, on the device kind most hosts offer (cpu on a tie).
// FAILED_PRECONDITION, saying what to start, with workers on fewer than
// two hosts.
[[nodiscard]] absl::StatusOr<JobSpec> LinkProbeJob(
    const ListWorkersResponse& cluster, const LinkProbeSpec& probe);

// The hosts whose link a probe of `cluster` measures through a parameter
// server: those of live servers with a tensor plane and no live worker
// (the coordinator's ProbeTargets, as the CLI can tell beforehand).
std::set<std::string> ProbedServerHosts(const ListWorkersResponse& cluster);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_LINKS_COMMAND_H_
