#include "cli/lab/layout_fit.h"

#include <cmath>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gradsync {
namespace lab {

std::string PerLayoutFits(
    const std::map<std::string, std::vector<SyncObservation>>& by_layout,
    double reference_bps) {
  std::vector<std::string> parts;
  for (const auto& [layout, observations] : by_layout) {
    // Fewer cells than this, or cells that vary only one term, leave alpha
    // and B free to trade against each other.
    if (observations.size() < 3) continue;
    absl::StatusOr<LinkModel> fit = FitAlphaBeta(observations);
    if (!fit.ok()) continue;
    if (reference_bps > 0 && fit->bandwidth_Bps * 8 > reference_bps) {
      parts.push_back(absl::StrFormat(
          "%s not identifiable (B would exceed the %.0f Mbit/s links: these "
          "cells do not separate alpha from B)",
          layout, reference_bps / 1e6));
      continue;
    }
    double sum = 0;
    for (const SyncObservation& o : observations) {
      sum += std::abs(RelativeError(PredictSeconds(o.cost, *fit), o.seconds));
    }
    parts.push_back(absl::StrFormat(
        "%s B = %.0f Mbit/s (%.1f%%), alpha = %.0f us, mean |error| %.1f%% "
        "over %d cells",
        layout, fit->bandwidth_Bps * 8 / 1e6,
        reference_bps > 0 ? 100 * fit->bandwidth_Bps * 8 / reference_bps : 0,
        fit->alpha_s * 1e6, 100 * sum / observations.size(),
        static_cast<int>(observations.size())));
  }
  if (by_layout.size() < 2 || parts.empty()) return "";
  return absl::StrCat("fit per layout: ", absl::StrJoin(parts, "; "));
}

}  // namespace lab
}  // namespace gradsync
