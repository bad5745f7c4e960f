#include "cli/lab/lab_calibrate_command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/lab/lab_calibrate.h"
#include "cli/lab/lab_calibrate_bench.h"
#include "cli/lab/lab_config.h"
#include "cli/lab/lab_probe.h"
#include "common/flags.h"
#include "study/sim/calibration.h"
#include "study/sim/calibration_fit.h"

namespace gradsync {
namespace lab {
namespace {

using cli::CommandEnv;
using cli::kExitFailure;
using cli::kExitOk;

constexpr char kUsage[] =
    "usage: gradsync lab calibrate --sweep DIR/sweep.json [--sweep ...]\n"
    "                              [-o calibration.json] [--max-workers 4]\n"
    "                              [--validate] [--markdown FILE] [flags]\n"
    "       gradsync lab calibrate --calibration FILE --sweep ... "
    "--validate\n"
    "       gradsync lab calibrate --from-bench FILE [--from-bench ...]\n"
    "                              --link RATE [--bench-colocated]\n"
    "                              [--bench-partition SIZE] [-o FILE]\n\n"
    "Fits the step simulator's calibration (alpha per message, the link's\n"
    "payload share, the PS's per-partition overhead, each transport's\n"
    "server CPU seconds per byte, incast where the cells show it) to the\n"
    "cells of recorded lab sweeps with N <= --max-workers, by least squares\n"
    "on relative error, and writes it for gradsync simulate and plan\n"
    "(--calibration FILE). --validate then predicts the held-out cells\n"
    "(N > --max-workers) and prints their errors against the target: mean\n"
    "|error| <= 8%, no cell beyond 20%. With --calibration FILE it fits\n"
    "nothing and validates that file. Reads files only; no lab needed.\n"
    "--from-bench fits on a real cluster's `gradsync bench allreduce\n"
    "--backend ring|ps -o json` output instead (or as well): every row is a\n"
    "cell of the fit, one rank per host on links of --link RATE; say where\n"
    "the bench's PS servers ran (--bench-colocated: on the ranks' hosts)\n"
    "and its --ps-partition and --ps-transport, which its rows do not.\n"
    "See docs/simulator.md, \"Calibration and validation\".\n";

struct CalibrateFlags {
  std::vector<std::string> sweeps;
  std::vector<std::string> benches;
  std::string link;  // --from-bench: each host's line rate
  bool bench_colocated = false;
  uint64_t bench_partition = kDefaultPsPartitionBytes;
  std::string bench_ps_transport = "plane";
  std::string out = "calibration.json";
  int64_t max_workers = 4;
  bool validate = false;
  std::string calibration;  // given: no fit
  std::string markdown;
  int64_t server_cores = 1;
  double link_efficiency = 0;  // > 0: held at this
  bool no_incast = false;
  bool unverified_links = false;
  bool help = false;
};

std::vector<FlagSpec> Flags(CalibrateFlags* f) {
  return {
      FlagSpec{"sweep", "FILE",
               "a sweep.json of gradsync lab sweep (repeat for more)",
               [f](absl::string_view v) {
                 f->sweeps.emplace_back(v);
                 return absl::OkStatus();
               }},
      FlagSpec{"from-bench", "FILE",
               "a `gradsync bench allreduce -o json` output of a real "
               "cluster (repeat for more)",
               [f](absl::string_view v) {
                 f->benches.emplace_back(v);
                 return absl::OkStatus();
               }},
      StringFlag("link", "RATE",
                 "--from-bench: each host's line rate (100gbit, 25gbit, ...)",
                 &f->link),
      SwitchFlag("bench-colocated",
                 "--from-bench: the PS servers ran on the ranks' hosts",
                 &f->bench_colocated),
      SizeFlag("bench-partition",
               "--from-bench: the bench's --ps-partition (4M; 0: off)", 0,
               &f->bench_partition),
      StringFlag("bench-ps-transport", "plane|grpc",
                 "--from-bench: the bench's --ps-transport (plane)",
                 &f->bench_ps_transport),
      StringFlag("out", "FILE", "the calibration to write (calibration.json)",
                 &f->out)
          .Short('o'),
      IntFlag("max-workers",
              "the fit's cells: N <= this; the rest are held "
              "out (4)",
              1, &f->max_workers),
      SwitchFlag("validate",
                 "also predict the held-out cells and print their errors",
                 &f->validate),
      StringFlag("calibration", "FILE",
                 "validate this calibration instead of fitting one "
                 "(implies --validate)",
                 &f->calibration),
      StringFlag("markdown", "FILE",
                 "also write the fit and the tables as Markdown", &f->markdown),
      IntFlag("server-cores",
              "cores each lab server's CPU cost is spread "
              "over (1)",
              1, &f->server_cores),
      FlagSpec{"link-efficiency", "SHARE",
               "hold the links' payload share at SHARE instead of fitting it",
               [f](absl::string_view v) {
                 absl::StatusOr<double> e =
                     ParseDoubleValue("--link-efficiency", v, 0);
                 if (!e.ok()) return e.status();
                 if (!(*e > 0 && *e <= 1)) {
                   return absl::InvalidArgumentError(absl::StrCat(
                       "--link-efficiency ", v, ": give a share in (0, 1]"));
                 }
                 f->link_efficiency = *e;
                 return absl::OkStatus();
               }},
      SwitchFlag("no-incast", "do not try an incast factor", &f->no_incast),
      SwitchFlag("unverified-links", "fit cells whose link probe failed too",
                 &f->unverified_links),
      HelpFlag(&f->help),
  };
}

[[nodiscard]] absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    const int err = errno;
    const std::string message =
        absl::StrCat("cannot read ", path, ": ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(message)
                         : absl::FailedPreconditionError(message);
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

[[nodiscard]] absl::Status WriteText(const std::string& path,
                                     const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// What the fit saw, for plan's uncertain regimes (calibration.h's fit*
// members): the largest N, the line rates, the members it determined.
void RecordFitRange(const std::vector<sim::MeasuredCell>& cells,
                    const sim::CalibrationFit& fit,
                    sim::SimCalibration* calibration) {
  for (const sim::MeasuredCell& c : cells) {
    calibration->fit_max_workers =
        std::max<double>(calibration->fit_max_workers, c.workers);
    if (calibration->fit_min_link_Bps == 0 ||
        c.nic_Bps < calibration->fit_min_link_Bps) {
      calibration->fit_min_link_Bps = c.nic_Bps;
    }
    calibration->fit_max_link_Bps =
        std::max(calibration->fit_max_link_Bps, c.nic_Bps);
  }
  calibration->fitted.clear();
  for (const sim::FittedParameter& p : fit.parameters) {
    if (p.fitted) calibration->fitted.push_back(p.name);
  }
}

int Fail(const CommandEnv& env, const absl::Status& status) {
  return cli::ReportError(env, "lab calibrate", false, status);
}

}  // namespace

int RunLabCalibrate(const std::vector<std::string>& args,
                    const CommandEnv& env) {
  CalibrateFlags f;
  std::vector<FlagSpec> flags = Flags(&f);
  if (env.flag_table != nullptr) {
    *env.flag_table = std::move(flags);
    return kExitOk;
  }
  absl::StatusOr<std::vector<std::string>> positional =
      ParseFlags(args, flags, /*env=*/nullptr);
  if (positional.ok() && !positional->empty()) {
    positional = absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", (*positional)[0],
                     "'; name sweeps with "
                     "--sweep FILE"));
  }
  if (!positional.ok()) {
    return cli::ReportUsageError(env, "lab calibrate", args,
                                 positional.status());
  }
  if (f.help) {
    *env.out << kUsage << "\nflags:\n" << FlagsHelp(flags, env.terminal_width);
    return kExitOk;
  }
  if (f.sweeps.empty() && f.benches.empty()) {
    return cli::ReportUsageError(
        env, "lab calibrate", args,
        absl::InvalidArgumentError(
            "name at least one sweep: --sweep DIR/sweep.json (written by "
            "gradsync lab sweep --out DIR), or a bench output: --from-bench "
            "FILE (gradsync bench allreduce -o json)"));
  }
  BenchCluster bench;
  if (!f.benches.empty()) {
    absl::StatusOr<int64_t> rate =
        f.link.empty()
            ? absl::InvalidArgumentError(
                  "--from-bench needs --link RATE: each host's line rate")
            : ParseLinkRate(f.link);
    absl::StatusOr<sim::PsTransport> transport =
        sim::ParsePsTransport(f.bench_ps_transport);
    absl::Status bad = !rate.ok() ? rate.status() : transport.status();
    if (!bad.ok()) {
      return cli::ReportUsageError(env, "lab calibrate", args, bad);
    }
    bench.link_bps = *rate;
    bench.ps_colocated = f.bench_colocated;
    bench.ps_partition_bytes = static_cast<double>(f.bench_partition);
    bench.ps_transport = *transport;
    bench.server_cores = static_cast<int>(f.server_cores);
  }
  const bool fit = f.calibration.empty();
  const bool validate = f.validate || !fit;

  std::vector<SweepFile> sweeps;
  for (const std::string& path : f.sweeps) {
    absl::StatusOr<std::string> text = ReadText(path);
    if (!text.ok()) return Fail(env, text.status());
    absl::StatusOr<SweepFile> sweep = ParseSweepJson(*text, path);
    if (!sweep.ok()) return Fail(env, sweep.status());
    sweeps.push_back(*std::move(sweep));
  }
  CellSplit split;
  split.max_workers = static_cast<int>(f.max_workers);
  split.server_cores = static_cast<int>(f.server_cores);
  split.unverified_links = f.unverified_links;
  SplitCells cells = SplitSweepCells(sweeps, split);
  // A real cluster's bench rows are all the fit's: it has no held-out N.
  size_t bench_cells = 0;
  for (const std::string& path : f.benches) {
    absl::StatusOr<std::string> text = ReadText(path);
    if (!text.ok()) return Fail(env, text.status());
    absl::StatusOr<BenchCells> parsed = ParseBenchJson(*text, path, bench);
    if (!parsed.ok()) return Fail(env, parsed.status());
    bench_cells += parsed->cells.size();
    for (sim::MeasuredCell& c : parsed->cells) cells.fit.push_back(c);
    for (std::string& why : parsed->skipped) cells.skipped.push_back(why);
  }
  *env.out << "cells: " << cells.fit.size() << " with N <= " << f.max_workers
           << " (the fit's"
           << (bench_cells > 0 ? absl::StrCat(", ", bench_cells,
                                              " of them from bench outputs")
                               : "")
           << "), " << cells.held_out.size() << " held out, "
           << cells.skipped.size() << " left out\n";
  for (const std::string& s : cells.skipped)
    *env.out << "  left out: " << s << "\n";

  std::string markdown;
  sim::SimCalibration calibration;
  if (fit) {
    if (cells.fit.empty()) {
      return Fail(env, absl::FailedPreconditionError(absl::StrCat(
                           "no cell with N <= ", f.max_workers,
                           " to fit; sweep --workers 2,3,4 first (or raise "
                           "--max-workers)")));
    }
    sim::FitOptions options;
    options.start.link_efficiency = kLabMss / (kLabMtu + 14.0);
    if (f.link_efficiency > 0) {
      options.start.link_efficiency = f.link_efficiency;
      options.fit_link_efficiency = false;
    }
    options.fit_incast = !f.no_incast;
    DescribeSource(sweeps, Hostname(),
                   static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)),
                   absl::ToUnixSeconds(absl::Now()), &options.start);
    if (!f.benches.empty()) {
      const std::string from_bench =
          absl::StrCat("bench outputs ", absl::StrJoin(f.benches, ", "), " (",
                       DescribeLinkRate(bench.link_bps), " links)");
      options.start.machine =
          sweeps.empty()
              ? absl::StrCat(from_bench, ", fitted on ", Hostname())
              : absl::StrCat(options.start.machine, "; ", from_bench);
    }
    absl::StatusOr<sim::CalibrationFit> result =
        sim::FitCalibration(cells.fit, options);
    if (!result.ok()) return Fail(env, result.status());
    calibration = result->calibration;
    RecordFitRange(cells.fit, *result, &calibration);
    *env.out << "\n" << FormatFit(*result, false);
    if (absl::Status s =
            WriteText(f.out, sim::CalibrationToJson(calibration) + "\n");
        !s.ok()) {
      return Fail(env, s);
    }
    *env.out << "wrote " << f.out << " (" << calibration.machine << ", "
             << calibration.date << ", commit " << calibration.commit
             << "); use it with gradsync simulate or plan --calibration "
             << f.out << "\n";
    absl::StrAppend(&markdown, "## Calibration\n\nFitted on ", cells.fit.size(),
                    " cells with N <= ", f.max_workers, " and written to `",
                    f.out, "`: ", calibration.machine, ", ", calibration.date,
                    ", commit ", calibration.commit, ".\n\n",
                    FormatFit(*result, true), "\n");
  } else {
    absl::StatusOr<sim::SimCalibration> loaded =
        sim::LoadCalibration(f.calibration);
    if (!loaded.ok()) return Fail(env, loaded.status());
    calibration = *std::move(loaded);
    *env.out << "calibration " << f.calibration << ": "
             << sim::CalibrationToJson(calibration) << "\n";
    absl::StrAppend(&markdown, "## Calibration\n\n`", f.calibration,
                    "`:\n\n```json\n", sim::CalibrationToJson(calibration),
                    "\n```\n\n");
  }

  if (validate) {
    if (cells.held_out.empty()) {
      return Fail(env, absl::FailedPreconditionError(
                           absl::StrCat("no held-out cell (N > ", f.max_workers,
                                        ") in the sweeps to validate on")));
    }
    absl::StatusOr<std::vector<sim::CellError>> rows =
        sim::PredictCells(cells.held_out, calibration);
    if (!rows.ok()) return Fail(env, rows.status());
    const sim::ErrorTargets targets;
    *env.out << "\nheld-out cells (N > " << f.max_workers
             << ", never seen by the fit):\n"
             << FormatErrorTable(*rows, targets, false);
    absl::StrAppend(&markdown, "## Held-out cells (N > ", f.max_workers,
                    ")\n\n", FormatErrorTable(*rows, targets, true));
  }
  if (!cells.skipped.empty()) {
    absl::StrAppend(&markdown,
                    "\nLeft out: ", absl::StrJoin(cells.skipped, "; "), ".\n");
  }
  if (!f.markdown.empty()) {
    if (absl::Status s = WriteText(f.markdown, markdown); !s.ok()) {
      return Fail(env, s);
    }
    *env.out << "wrote " << f.markdown << "\n";
  }
  return kExitOk;
}

}  // namespace lab
}  // namespace gradsync
