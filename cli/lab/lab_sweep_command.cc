#include "cli/lab/lab_sweep_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cli/control/command_common.h"
#include "cli/control/local_command.h"
#include "cli/framework/plot_script.h"
#include "cli/lab/lab_command.h"
#include "cli/lab/lab_probe.h"
#include "cli/lab/lab_report.h"
#include "cli/lab/lab_state.h"
#include "cli/lab/lab_sweep.h"
#include "cli/lab/lab_up.h"
#include "common/flags.h"
#include "common/status_macros.h"
#include "common/units.h"
#include "study/model_profiles.h"

namespace gradsync {
namespace lab {
namespace {

using cli::CommandEnv;
using cli::kExitFailure;
using cli::kExitOk;

constexpr char kSweepUsage[] =
    "usage: gradsync lab sweep [--workers 2,4,6,8] [--shards 1,2,N/2,N]\n"
    "                          [--sizes 4M,16M] [--links RATE,...]\n"
    "                          [--layouts ring,ps,ps-colocated] [flags]\n"
    "       gradsync lab report SWEEP.json [--out DIR] [--plot]\n\n"
    "sweep: one synthetic job per cell (N workers, K shards, S bytes of\n"
    "gradient, link rate, layout) on the running lab; each cell's sync time\n"
    "comes from the job's own step metrics (the slowest rank per step, the\n"
    "median over the steps after the warm-up). The report fits the alpha-\n"
    "beta model (alpha and B) to the trusted cells and prints measured\n"
    "next to predicted, the errors, and the four PS-vs-ring findings.\n"
    "Sizes use K = 1024. Writes sweep.json, sweep.csv and report.txt into\n"
    "--out; --plot adds PNGs (python3-matplotlib). report: analyses and\n"
    "plots a recorded sweep.json again.\n";

struct SweepFlags {
  std::string workers = "2,4,6,8";
  std::string shards = "1,2,N/2,N";
  std::string sizes = "4M,16M";
  std::string links;
  std::string layouts = "ring,ps";
  int64_t steps = 8;
  int64_t warmup = 2;
  double compute_ms = 0;
  absl::Duration cell_timeout = absl::Minutes(5);
  double cpu_limit = 0.9;
  int64_t partition_bytes = 128 << 10;
  std::string profile;
  double profile_scale = 1;
  int64_t bucket_bytes = 0;
  std::string out = "lab-sweep";
  bool plot = false;
  std::string run_dir;
  cli::control::CommonOptions common;
};

std::vector<FlagSpec> SweepFlagSpecs(SweepFlags* f) {
  return {
      StringFlag("workers", "N,...", "worker counts (2,4,6,8)", &f->workers),
      StringFlag("shards", "K,...",
                 "PS shard counts per N: numbers, N, N/2, all "
                 "(1,2,N/2,N)",
                 &f->shards),
      StringFlag("sizes", "S,...", "gradient sizes (4M,16M)", &f->sizes),
      StringFlag("links", "RATE,...",
                 "link rates to sweep, reshaping the lab (its "
                 "current rate)",
                 &f->links),
      StringFlag("layouts", "L,...",
                 "ring, ps (server hosts), ps-colocated (ring,ps)",
                 &f->layouts),
      IntFlag("steps", "measured steps per cell (8)", 1, &f->steps),
      IntFlag("warmup", "steps left out at the start (2)", 0, &f->warmup),
      DoubleFlag("compute-ms", "MS", "emulated compute per step (0)", 0,
                 &f->compute_ms),
      SecondsFlag("cell-timeout", "longest a cell may run (300)",
                  &f->cell_timeout),
      DoubleFlag("cpu-limit", "SHARE",
                 "CPU busy share above which a cell is CPU-bound (0.9)", 0,
                 &f->cpu_limit),
      FlagSpec{"ps-partition", "SIZE",
               "PS cells: each server's slice in partitions of SIZE, which "
               "pipelines push and pull (128K)",
               [f](absl::string_view v) {
                 absl::StatusOr<uint64_t> size = ParseSize(v);
                 if (!size.ok() || *size < 4096 || *size % 4 != 0) {
                   return absl::InvalidArgumentError(absl::StrCat(
                       "--ps-partition '", v,
                       "': give a size of at least 4K, a multiple of 4"));
                 }
                 f->partition_bytes = static_cast<int64_t>(*size);
                 return absl::OkStatus();
               }},
      StringFlag("model-profile", "NAME",
                 "cells shaped as resnet50, vgg16 or bert-large "
                 "(their layers and compute order; replaces --sizes)",
                 &f->profile),
      DoubleFlag("profile-scale", "X",
                 "--model-profile: every layer at X of its size (1)", 1e-9,
                 &f->profile_scale),
      FlagSpec{"bucket-bytes", "SIZE",
               "--model-profile: all-reduce bucket size (25M, DDP's)",
               [f](absl::string_view v) {
                 absl::StatusOr<uint64_t> size = ParseSize(v);
                 if (!size.ok()) return size.status();
                 f->bucket_bytes = static_cast<int64_t>(*size);
                 return absl::OkStatus();
               }},
      StringFlag("out", "DIR", "where results go (lab-sweep)", &f->out),
      SwitchFlag("plot", "also write PNG plots", &f->plot),
      StringFlag("run-dir", "DIR", "the lab's ($GRADSYNC_LAB_DIR, else ./.lab)",
                 &f->run_dir),
  };
}

template <typename T>
[[nodiscard]] absl::StatusOr<std::vector<T>> ParseList(
    absl::string_view flag, absl::string_view text,
    const std::function<absl::StatusOr<T>(absl::string_view)>& parse) {
  std::vector<T> values;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    absl::StatusOr<T> value = parse(absl::StripAsciiWhitespace(item));
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": ", value.status().message()));
    }
    values.push_back(*value);
  }
  if (values.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " is empty"));
  }
  return values;
}

[[nodiscard]] absl::StatusOr<SweepGrid> BuildGrid(const SweepFlags& f) {
  SweepGrid grid;
  ASSIGN_OR_RETURN(
      grid.workers,
      ParseList<int>(
          "workers", f.workers, [](absl::string_view v) -> absl::StatusOr<int> {
            int n = 0;
            if (!absl::SimpleAtoi(v, &n) || n < 1) {
              return absl::InvalidArgumentError(absl::StrCat("'", v,
                                                             "' is not a "
                                                             "count >= 1"));
            }
            return n;
          }));
  grid.shards.clear();
  for (absl::string_view t : absl::StrSplit(f.shards, ',', absl::SkipEmpty())) {
    RETURN_IF_ERROR(ResolveShards(t, 8).status());
    grid.shards.emplace_back(t);
  }
  ASSIGN_OR_RETURN(
      grid.bytes,
      ParseList<int64_t>("sizes", f.sizes,
                         [](absl::string_view v) -> absl::StatusOr<int64_t> {
                           ASSIGN_OR_RETURN(size_t s, ParseSize(v));
                           if (s < 4 || s % 4 != 0) {
                             return absl::InvalidArgumentError(
                                 absl::StrCat("'", v,
                                              "' is not a multiple of 4 "
                                              "bytes (fp32)"));
                           }
                           return static_cast<int64_t>(s);
                         }));
  if (!f.profile.empty()) {
    ASSIGN_OR_RETURN(std::vector<ProfileTensor> tensors,
                     ModelProfile(f.profile));
    ASSIGN_OR_RETURN(std::vector<size_t> floats,
                     ScaledLayerFloats(tensors, f.profile_scale));
    int64_t total = 0;
    for (size_t n : floats) total += static_cast<int64_t>(n);
    grid.bytes = {4 * total};
  }
  if (!f.links.empty()) {
    ASSIGN_OR_RETURN(grid.rates_bps,
                     ParseList<int64_t>("links", f.links, ParseLinkRate));
  }
  ASSIGN_OR_RETURN(grid.layouts, ParseList<SyncLayout>("layouts", f.layouts,
                                                       ParseSyncLayout));
  return grid;
}

// "<model name>, N CPUs, X GiB" from /proc.
std::string MachineDescription() {
  std::ifstream cpu("/proc/cpuinfo");
  std::string model;
  for (std::string line; std::getline(cpu, line);) {
    if (line.rfind("model name", 0) == 0) {
      model = std::string(
          absl::StripAsciiWhitespace(line.substr(line.find(':') + 1)));
      break;
    }
  }
  std::ifstream mem("/proc/meminfo");
  double gib = 0;
  for (std::string line; std::getline(mem, line);) {
    if (line.rfind("MemTotal:", 0) == 0) {
      gib = std::atof(line.substr(9).c_str()) / 1048576.0;
      break;
    }
  }
  return absl::StrFormat("%s, %ld CPUs, %.0f GiB", model,
                         sysconf(_SC_NPROCESSORS_ONLN), gib);
}

// The source commit of the tree this binary sits in, or "unknown".
std::string SourceCommit(const CommandEnv& env) {
  const std::string dir =
      std::filesystem::path(env.self_exe).parent_path().string();
  if (dir.empty()) return "unknown";
  const std::string command =
      absl::StrCat("git -C '", dir, "' rev-parse --short HEAD 2>/dev/null");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "unknown";
  char buffer[64] = {};
  const bool read = fgets(buffer, sizeof(buffer), pipe) != nullptr;
  pclose(pipe);
  std::string commit(absl::StripAsciiWhitespace(read ? buffer : ""));
  return commit.empty() ? "unknown" : commit;
}

[[nodiscard]] absl::Status WriteFile(const std::string& path,
                                     const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

int Finish(SweepResults& results, const SweepFlags& f, const CommandEnv& env,
           const std::string& verb) {
  ReportOptions options;
  if (absl::Status s = AnalyseSweep(&results, options); !s.ok()) {
    *env.err << "gradsync lab " << verb << ": " << s.message() << "\n";
  }
  std::error_code error;
  std::filesystem::create_directories(f.out, error);
  const std::string json = absl::StrCat(f.out, "/sweep.json");
  const std::string report = FormatSweepReport(results);
  for (const auto& [path, text] :
       std::vector<std::pair<std::string, std::string>>{
           {json, LabJson(results)},
           {absl::StrCat(f.out, "/sweep.csv"), SweepCsv(results)},
           {absl::StrCat(f.out, "/report.txt"), report}}) {
    if (absl::Status s = WriteFile(path, text); !s.ok()) {
      return cli::ReportError(env, absl::StrCat("lab ", verb), false, s);
    }
  }
  *env.out << report << "wrote " << f.out << "/{sweep.json,sweep.csv,"
           << "report.txt}\n";
  if (f.plot) {
    if (absl::Status s =
            cli::RunPlotScript(env.self_exe, "lab_plot.py", {json, f.out});
        !s.ok()) {
      return cli::ReportError(env, absl::StrCat("lab ", verb), false, s);
    }
    *env.out << "plots in " << f.out << "\n";
  }
  return kExitOk;
}

}  // namespace

int RunLabSweep(const std::vector<std::string>& args, const CommandEnv& env) {
  SweepFlags f;
  std::vector<std::string> positional;
  if (std::optional<int> done = cli::control::ParseCommand(
          args, SweepFlagSpecs(&f), "lab sweep", kSweepUsage, env, &f.common,
          &positional)) {
    return *done;
  }
  absl::StatusOr<SweepGrid> grid = BuildGrid(f);
  if (!grid.ok()) {
    return cli::ReportUsageError(env, "lab sweep", args, grid.status());
  }
  const std::string run_dir = ResolveLabDir(f.run_dir, env);
  absl::StatusOr<std::optional<LabState>> state = ReadLabState(run_dir);
  if (!state.ok() || !state->has_value()) {
    return cli::ReportError(
        env, "lab sweep", false,
        state.ok()
            ? absl::FailedPreconditionError(absl::StrCat(
                  "no lab in ", run_dir, "; start one with gradsync lab up"))
            : state.status());
  }
  const LabConfig lab = FromSpec((*state)->spec());
  SweepResults results;
  *results.mutable_lab() = (*state)->spec();
  std::vector<std::string> skipped;
  absl::StatusOr<std::vector<CellSpec>> cells =
      ExpandGrid(*grid, lab, &skipped);
  if (!cells.ok()) {
    return cli::ReportUsageError(env, "lab sweep", args, cells.status());
  }
  for (const std::string& s : skipped) results.add_skipped(s);
  if (cells->empty()) {
    return cli::ReportError(env, "lab sweep", false,
                            absl::InvalidArgumentError(absl::StrCat(
                                "this lab can run none of the grid's cells: ",
                                absl::StrJoin(skipped, "; "))));
  }
  SweepOptions options;
  options.warmup_steps = static_cast<int>(f.warmup);
  options.measured_steps = static_cast<int>(f.steps);
  options.compute_ms = f.compute_ms;
  options.cell_timeout = f.cell_timeout;
  options.cpu_bound_above = f.cpu_limit;
  options.ps_partition_bytes = f.partition_bytes;
  options.profile = f.profile;
  options.profile_scale = f.profile_scale;
  options.bucket_bytes = f.bucket_bytes;
  cli::control::CommonOptions common = f.common;
  if (common.coordinator.empty()) common.coordinator = (*state)->coordinator();
  std::unique_ptr<cli::control::ControlClient> client =
      cli::control::MakeClient(common, env);
  // A rate the lab runs at and verified already needs no new probe; any
  // other is shaped and probed first (and recorded in lab.json).
  const SetRate set_rate = [&](int64_t rate) -> absl::StatusOr<ProbeReport> {
    ASSIGN_OR_RETURN(std::optional<LabState> now, ReadLabState(run_dir));
    if (now.has_value() && now->spec().link().rate_bps() == rate &&
        now->probe().ok() && now->probe().link().rate_bps() == rate) {
      *env.out << "links at " << DescribeLinkRate(rate)
               << ": verified by the lab's probe\n  "
               << FormatProbeSummary(now->probe()) << "\n";
      return now->probe();
    }
    LabConfig shaped = lab;
    shaped.link.rate_bps = rate;
    ASSIGN_OR_RETURN(LabState reshaped,
                     SetLabLink(run_dir, shaped.link, absl::Seconds(10)));
    RETURN_IF_ERROR(TellCoordinatorLinks(*client, shaped.link));
    ASSIGN_OR_RETURN(ProbeReport probe, ProbeLab(shaped, ProbeOptions()));
    *env.out << "links at " << DescribeLinkRate(rate) << ": "
             << FormatProbeSummary(probe) << "\n";
    *reshaped.mutable_probe() = probe;
    RETURN_IF_ERROR(WriteLabState(run_dir, reshaped));
    return probe;
  };
  *env.out << "sweeping " << cells->size() << " cells on the lab in " << run_dir
           << (skipped.empty() ? "" : " (")
           << (skipped.empty() ? ""
                               : absl::StrCat(skipped.size(),
                                              " grid cells skipped: see "
                                              "sweep.json)"))
           << "\n";
  std::vector<ProbeReport> probes;
  int done = 0;
  absl::StatusOr<std::vector<SweepCell>> measured = RunSweep(
      *client, *cells, options, set_rate, &probes, [&](const SweepCell& c) {
        ++done;
        *env.out << absl::StrFormat(
            "[%d/%d] %-12s N=%d K=%d S=%g MiB: %s\n", done, cells->size(),
            c.layout(), c.workers(), c.shards(), c.bytes() / 1048576.0,
            c.error().empty()
                ? absl::StrFormat("%.1f ms (CPUs %.0f%% busy)%s",
                                  1e3 * c.sync_s(), 100 * c.cpu_busy(),
                                  c.link_ok() ? "" : ", links unverified")
                : c.error());
        env.out->flush();
      });
  if (!measured.ok()) {
    return cli::ReportError(env, "lab sweep", false, measured.status());
  }
  for (SweepCell& c : *measured) *results.add_cells() = std::move(c);
  for (ProbeReport& p : probes) *results.add_probes() = std::move(p);
  if (!results.probes().empty()) *results.mutable_probe() = results.probes(0);
  results.set_command(
      absl::StrCat("gradsync lab sweep ", absl::StrJoin(args, " ")));
  results.set_commit(SourceCommit(env));
  results.set_machine(MachineDescription());
  results.set_time(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  const int exit = Finish(results, f, env, "sweep");
  // The fit is what `gradsync explain` uses on this lab, when the sweep
  // ended at the lab's own rate (the last rate it shaped the links to).
  absl::StatusOr<std::optional<LabState>> now = ReadLabState(run_dir);
  if (exit == kExitOk && now.ok() && now->has_value() &&
      results.bandwidth_bps() > 0) {
    double reference = 0;
    for (const SweepCell& c : results.cells()) {
      reference = std::max(reference, static_cast<double>(c.rate_bps()));
    }
    const double rate = static_cast<double>((*now)->spec().link().rate_bps());
    (*now)->set_fitted_alpha_s(results.alpha_s());
    (*now)->set_fitted_bandwidth_bps(results.bandwidth_bps() * rate /
                                     std::max(1.0, reference));
    WriteLabState(run_dir, **now).IgnoreError();
  }
  return exit;
}

int RunLabReport(const std::vector<std::string>& args, const CommandEnv& env) {
  SweepFlags f;
  f.out.clear();
  std::vector<std::string> positional;
  if (std::optional<int> done = cli::control::ParseCommand(
          args, SweepFlagSpecs(&f), "lab report", kSweepUsage, env, &f.common,
          &positional)) {
    return *done;
  }
  if (std::optional<int> bad = cli::ExpectPositional(
          args, positional, 1, "a sweep.json", "lab report", env)) {
    return *bad;
  }
  std::ifstream in(positional[0]);
  std::stringstream text;
  text << in.rdbuf();
  SweepResults results;
  if (absl::Status s = ParseLabJson(text.str(), positional[0], &results);
      !in || !s.ok()) {
    return cli::ReportError(env, "lab report", false,
                            s.ok() ? absl::NotFoundError(absl::StrCat(
                                         "cannot read ", positional[0]))
                                   : s);
  }
  if (f.out.empty()) {
    f.out = std::filesystem::path(positional[0]).parent_path().string();
    if (f.out.empty()) f.out = ".";
  }
  return Finish(results, f, env, "report");
}

}  // namespace lab
}  // namespace gradsync
