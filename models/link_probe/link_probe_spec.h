// JobSpec.model.kind "link_probe" (LinkProbeSpec, proto/job.proto): the
// job `gradsync links probe` submits so that the worker daemons measure
// the links between their hosts. Its checks and defaults, and which ranks
// measure which links in each round, in one place for the coordinator
// (validation, one-rank-per-host placement), the workers (the rounds they
// run: worker/launch/link_probe_runner.h) and the CLI (the spec it
// builds).
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_MODELS_LINK_PROBE_LINK_PROBE_SPEC_H_
#define GRADSYNC_MODELS_LINK_PROBE_LINK_PROBE_SPEC_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/model_kind_spec.h"
#include "proto/job.pb.h"

namespace gradsync {

inline constexpr absl::string_view kLinkProbeModelKind = "link_probe";

// LinkProbeSpec defaults and bounds.
inline constexpr int64_t kDefaultProbeStreamBytes = int64_t{64} << 20;
inline constexpr int64_t kMinProbeStreamBytes = int64_t{64} << 10;
inline constexpr int64_t kMaxProbeStreamBytes = int64_t{4} << 30;
inline constexpr int32_t kDefaultProbeRoundTrips = 20;
inline constexpr int32_t kMaxProbeRoundTrips = 10000;
// The parameter servers one probe measures at most (one per host), and the
// sizes of their names in a rank's report (LinkMeasurement.ps_id, ps_host).
inline constexpr int kMaxLinkProbeServers = 1024;
inline constexpr size_t kMaxLinkPsIdBytes = 64;
inline constexpr size_t kMaxLinkPsHostBytes = 255;

enum class LinkProbePairs {
  kRing,  // rank i to rank i+1: each host's uplink and downlink once
  kAll,   // every ordered pair
};

// "ring" (and "") or "all"; INVALID_ARGUMENT naming the field otherwise.
[[nodiscard]] absl::StatusOr<LinkProbePairs> ParseLinkProbePairs(
    absl::string_view name);
absl::string_view LinkProbePairsName(LinkProbePairs pairs);

// The links measured, as rounds of (from, to) rank pairs. In every round
// each rank sends to at most one rank and receives from at most one, so
// that a round loads each host's link once in each direction, as a ring
// all-reduce does: kRing is one round (i -> i+1); kAll is ranks-1 rounds
// (round r: i -> i+r). Two ranks make one pair per direction.
std::vector<std::vector<std::pair<int, int>>> LinkProbeRounds(
    int ranks, LinkProbePairs pairs);

// The links with parameter-server hosts (Assignment.probe_servers), as
// rounds of (rank, server index) pairs run after LinkProbeRounds'. In every
// round each rank and each server take part at most once, so that no link
// carries two streams: kRing pairs server s with rank s % ranks
// (ceil(servers / ranks) rounds); kAll pairs every rank with every server
// (max(ranks, servers) rounds; round j: rank i with server
// (i + j) % max). Each pair measures both directions.
std::vector<std::vector<std::pair<int, int>>> PsProbeRounds(
    int ranks, int servers, LinkProbePairs pairs);

// True for a link-probe spec.
inline bool IsLinkProbe(const JobSpec& spec) {
  return spec.model().kind() == kLinkProbeModelKind;
}

// Checks a link-probe spec and fills `out`'s defaults (pairs "ring",
// streamBytes 64 MiB, roundTrips 20): INVALID_ARGUMENT naming the first
// bad field. It needs 2..4096 ranks (one per host), the ring mode with no
// switches, auto mode, restarts, checkpoints or 16-bit gradients, and none
// of the training models' fields (layers, data, batch, steps).
[[nodiscard]] absl::Status ValidateLinkProbe(const JobSpec& spec, JobSpec* out);

// ValidateLinkProbe after numWorkers (one rank per host): the kind's
// validate.
[[nodiscard]] absl::Status ValidateLinkProbeModel(const JobSpec& spec,
                                                  JobSpec* out);

// The link probe as a model kind (models/model_kind_spec.h): its own
// runner on the workers (worker/launch/link_probe_runner.h), no
// parameters.
inline constexpr ModelKindSpec kLinkProbeModelKindSpec = {
    kLinkProbeModelKind,
    /*summary=*/
    "a measurement of the links between the worker hosts "
    "(`gradsync links probe`)",
    ModelKindSpec::Runner::kOwnRunner,
    /*runs_on_cuda=*/false,
    ValidateLinkProbeModel,
};

}  // namespace gradsync

#endif  // GRADSYNC_MODELS_LINK_PROBE_LINK_PROBE_SPEC_H_
