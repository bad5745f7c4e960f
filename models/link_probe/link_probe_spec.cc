#include "models/link_probe/link_probe_spec.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "jobspec/job_spec.h"

namespace gradsync {

absl::StatusOr<LinkProbePairs> ParseLinkProbePairs(absl::string_view name) {
  if (name.empty() || name == "ring") return LinkProbePairs::kRing;
  if (name == "all") return LinkProbePairs::kAll;
  return InvalidSpecField(
      "model.linkProbe.pairs",
      absl::StrCat("is '", name,
                   "'; use \"ring\" (each host's link once) or "
                   "\"all\" (every ordered pair of hosts)"));
}

absl::string_view LinkProbePairsName(LinkProbePairs pairs) {
  return pairs == LinkProbePairs::kAll ? "all" : "ring";
}

std::vector<std::vector<std::pair<int, int>>> LinkProbeRounds(
    int ranks, LinkProbePairs pairs) {
  std::vector<std::vector<std::pair<int, int>>> rounds;
  if (ranks < 2) return rounds;
  const int last = pairs == LinkProbePairs::kAll ? ranks - 1 : 1;
  for (int shift = 1; shift <= last; ++shift) {
    std::vector<std::pair<int, int>>& round = rounds.emplace_back();
    for (int from = 0; from < ranks; ++from) {
      round.emplace_back(from, (from + shift) % ranks);
    }
  }
  return rounds;
}

std::vector<std::vector<std::pair<int, int>>> PsProbeRounds(
    int ranks, int servers, LinkProbePairs pairs) {
  std::vector<std::vector<std::pair<int, int>>> rounds;
  if (ranks < 1 || servers < 1) return rounds;
  if (pairs == LinkProbePairs::kRing) {
    for (int s = 0; s < servers; ++s) {
      if (s % ranks == 0) rounds.emplace_back();
      rounds.back().emplace_back(s % ranks, s);
    }
    return rounds;
  }
  const int width = std::max(ranks, servers);
  for (int shift = 0; shift < width; ++shift) {
    std::vector<std::pair<int, int>> round;
    for (int r = 0; r < ranks; ++r) {
      const int s = (r + shift) % width;
      if (s < servers) round.emplace_back(r, s);
    }
    if (!round.empty()) rounds.push_back(std::move(round));
  }
  return rounds;
}

absl::Status ValidateLinkProbe(const JobSpec& spec, JobSpec* out) {
  const ModelSpec& model = spec.model();
  if (model.layer_sizes_size() > 0 || model.synthetic_floats() != 0 ||
      !model.profile().empty() || model.entrypoint().argv_size() > 0 ||
      !spec.dataset().name().empty() || spec.batch_size() != 0 ||
      spec.steps() != 0 || spec.epochs() != 0) {
    return InvalidSpecField(
        "model.kind",
        "is \"link_probe\" but the spec also sets layers, a "
        "dataset, a batch or steps; a link probe trains nothing "
        "(`gradsync links probe` builds its spec)");
  }
  if (spec.num_workers() < 2) {
    return InvalidSpecField(
        "numWorkers", absl::StrCat("is ", spec.num_workers(),
                                   "; a link probe needs a rank on each of at "
                                   "least 2 hosts"));
  }
  if (spec.mode() == SYNC_MODE_PS || spec.switches_size() > 0 ||
      spec.auto_mode().enabled()) {
    return InvalidSpecField("mode",
                            "of a link probe is the ring's TCP connections; "
                            "leave mode, switches and autoMode unset");
  }
  if (spec.max_restarts() != 0 || !spec.checkpoint().directory().empty()) {
    return InvalidSpecField(
        "maxRestarts",
        "and checkpoint do not apply to a link probe; run it "
        "again instead");
  }
  if (!spec.grad_dtype().empty() && spec.grad_dtype() != "fp32") {
    return InvalidSpecField("gradDtype", "does not apply to a link probe");
  }
  const LinkProbeSpec& probe = model.link_probe();
  absl::StatusOr<LinkProbePairs> pairs = ParseLinkProbePairs(probe.pairs());
  if (!pairs.ok()) return pairs.status();
  LinkProbeSpec& filled = *out->mutable_model()->mutable_link_probe();
  filled.set_pairs(std::string(LinkProbePairsName(*pairs)));
  if (probe.stream_bytes() == 0) {
    filled.set_stream_bytes(kDefaultProbeStreamBytes);
  } else if (probe.stream_bytes() < kMinProbeStreamBytes ||
             probe.stream_bytes() > kMaxProbeStreamBytes) {
    return InvalidSpecField(
        "model.linkProbe.streamBytes",
        absl::StrCat("is ", probe.stream_bytes(), "; use ",
                     FormatBytes(kMinProbeStreamBytes), " to ",
                     FormatBytes(kMaxProbeStreamBytes),
                     " (0: ", FormatBytes(kDefaultProbeStreamBytes), ")"));
  }
  if (probe.round_trips() == 0) {
    filled.set_round_trips(kDefaultProbeRoundTrips);
  } else if (probe.round_trips() < 0 ||
             probe.round_trips() > kMaxProbeRoundTrips) {
    return InvalidSpecField(
        "model.linkProbe.roundTrips",
        absl::StrCat("is ", probe.round_trips(), "; use 1 to ",
                     kMaxProbeRoundTrips, " (0: ", kDefaultProbeRoundTrips,
                     ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLinkProbeModel(const JobSpec& spec, JobSpec* out) {
  RETURN_IF_ERROR(ValidateNumWorkers(spec, "one rank per host"));
  return ValidateLinkProbe(spec, out);
}

}  // namespace gradsync
