#include "study/alpha_beta/layout_fit.h"

#include <cmath>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace gradsync {
namespace study {

absl::StatusOr<LinkFit> FitWithinLinks(
    const std::vector<SyncObservation>& observations, double payload_Bps) {
  LinkFit fit;
  ASSIGN_OR_RETURN(fit.model, FitAlphaBeta(observations));
  if (payload_Bps > 0 && fit.model.bandwidth_Bps > payload_Bps) {
    fit.unconstrained = fit.model;
    ASSIGN_OR_RETURN(fit.model, FitAlphaAtBandwidth(observations, payload_Bps));
  }
  return fit;
}

std::string PerLayoutFits(
    const std::map<std::string, std::vector<SyncObservation>>& by_layout,
    double reference_bps, double payload_Bps) {
  std::vector<std::string> parts;
  for (const auto& [layout, observations] : by_layout) {
    // Fewer cells than this, or cells that vary only one term, leave alpha
    // and B free to trade against each other.
    if (observations.size() < 3) continue;
    absl::StatusOr<LinkFit> fit = FitWithinLinks(observations, payload_Bps);
    if (!fit.ok()) continue;
    const LinkModel& model = fit->model;
    double sum = 0;
    for (const SyncObservation& o : observations) {
      sum += std::abs(RelativeError(PredictSeconds(o.cost, model), o.seconds));
    }
    parts.push_back(absl::StrFormat(
        "%s B %s %.0f Mbit/s (%.1f%%%s), alpha = %.0f us, mean |error| "
        "%.1f%% over %d cells",
        layout, fit->unconstrained ? "held at" : "=",
        model.bandwidth_Bps * 8 / 1e6,
        reference_bps > 0 ? 100 * model.bandwidth_Bps * 8 / reference_bps : 0,
        fit->unconstrained
            ? absl::StrFormat(", the links' payload; alone %.0f Mbit/s",
                              fit->unconstrained->bandwidth_Bps * 8 / 1e6)
            : "",
        model.alpha_s * 1e6, 100 * sum / observations.size(),
        static_cast<int>(observations.size())));
  }
  if (by_layout.size() < 2 || parts.empty()) return "";
  return absl::StrCat("fit per layout: ", absl::StrJoin(parts, "; "));
}

}  // namespace study
}  // namespace gradsync
