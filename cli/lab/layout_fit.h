// The alpha-beta model fitted to each layout of a sweep alone, as a line of
// the lab report. Where the layouts run at different shares of the link,
// the one joint fit sits between them and misses both; this line says by
// how much each path falls short of the other.
//
// Pure function; thread-safe.
#ifndef GRADSYNC_CLI_LAB_LAYOUT_FIT_H_
#define GRADSYNC_CLI_LAB_LAYOUT_FIT_H_

#include <map>
#include <string>
#include <vector>

#include "common/sync_model.h"

namespace gradsync {
namespace lab {

// "fit per layout: ps B = 152 Mbit/s (75.8%), alpha = 0 us, mean |error|
// 5.5% over 22 cells; ring ..." for the layouts with at least 3 cells, B as
// a share of `reference_bps` (the links' rate); a layout whose fit puts B
// above the links is named not identifiable. "" for a sweep of one layout,
// or when no layout has enough cells.
std::string PerLayoutFits(
    const std::map<std::string, std::vector<SyncObservation>>& by_layout,
    double reference_bps);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAYOUT_FIT_H_
