// The alpha-beta model (sync_model.h) fitted within the links' payload
// rate, and fitted to each layout of a sweep alone, as a line of the lab
// report (cli/lab/lab_report.h). Where the layouts run at different shares
// of the link, the one joint fit sits between them and misses both; this
// line says by how much each path falls short of the other.
//
// Pure function; thread-safe.
#ifndef GRADSYNC_STUDY_ALPHA_BETA_LAYOUT_FIT_H_
#define GRADSYNC_STUDY_ALPHA_BETA_LAYOUT_FIT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "study/alpha_beta/sync_model.h"

namespace gradsync {
namespace study {

// FitAlphaBeta, except where it would put B above `payload_Bps` (what the
// links carry of TCP payload): then the cells do not separate alpha from
// B, B is held at payload_Bps and alpha fitted alone (FitAlphaAtBandwidth),
// and `unconstrained` keeps the fit that was set aside.
struct LinkFit {
  LinkModel model;
  std::optional<LinkModel> unconstrained;
};
[[nodiscard]] absl::StatusOr<LinkFit> FitWithinLinks(
    const std::vector<SyncObservation>& observations, double payload_Bps);

// "fit per layout: ps B = 152 Mbit/s (75.8%), alpha = 0 us, mean |error|
// 5.5% over 22 cells; ring ..." for the layouts with at least 3 cells, B as
// a share of `reference_bps` (the links' rate), each fitted within
// `payload_Bps` (what those links carry of TCP payload: FitWithinLinks;
// "B held at" says when). "" for a sweep of one layout, or when no layout
// has enough cells.
std::string PerLayoutFits(
    const std::map<std::string, std::vector<SyncObservation>>& by_layout,
    double reference_bps, double payload_Bps);

}  // namespace study
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_ALPHA_BETA_LAYOUT_FIT_H_
