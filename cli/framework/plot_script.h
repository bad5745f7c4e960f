// Plots through gradsync's matplotlib scripts, for every command's --plot
// (CLI framework): scripts/lab_plot.py for `lab sweep --plot`,
// metrics_plot.py for `metrics --plot`, bench_plot.py for `bench --plot`.
// They are copied next to the built binary and installed in
// share/gradsync, and run with Debian's /usr/bin/python3
// (python3-matplotlib).
//
// Errors: NOT_FOUND when the script is in none of the places it may be;
// DEADLINE_EXCEEDED when it runs past its deadline (it is killed);
// INTERNAL when it fails, naming the command and the package it needs.
// Threading: RunPlotScript forks; call it from one thread at a time.
#ifndef GRADSYNC_CLI_FRAMEWORK_PLOT_SCRIPT_H_
#define GRADSYNC_CLI_FRAMEWORK_PLOT_SCRIPT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gradsync {
namespace cli {

// Where `script` may be, in order, for the binary at `self_exe`: its
// directory, ../share/gradsync, ../../scripts (the source tree, from
// build/cli).
std::vector<std::string> PlotScriptCandidates(absl::string_view self_exe,
                                              absl::string_view script);

// Runs the first of PlotScriptCandidates that exists with `args`, for at
// most `deadline`.
[[nodiscard]] absl::Status RunPlotScript(
    absl::string_view self_exe, absl::string_view script,
    const std::vector<std::string>& args,
    absl::Duration deadline = absl::Minutes(2));

}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_FRAMEWORK_PLOT_SCRIPT_H_
