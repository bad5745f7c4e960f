#include "cli/plan/plan_command.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/framework/format.h"
#include "cli/framework/output_format.h"
#include "cli/plan/sim_flags.h"
#include "common/flags.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "study/sim/plan_sweep.h"

namespace gradsync {
namespace cli {
namespace plan {
namespace {

constexpr char kUsage[] =
    "usage: gradsync plan --model-profile NAME --link RATE\n"
    "                     [--workers 8..1024] [--gpus-per-node G]\n"
    "                     [--servers 1..N] [--layouts L,...]\n"
    "                     [--grad-dtype bf16] [--calibration FILE] [flags]\n\n"
    "Which layout, and how many parameter servers, for this network on\n"
    "this cluster: the step simulator (gradsync simulate) swept over the\n"
    "worker counts (A..B: the powers of two between), the layouts, and\n"
    "for the PS every server count of --servers (powers of two and the\n"
    "top; N is the worker count, colocated servers at most one per\n"
    "node). Per worker count: the best layout and its step, the ring's\n"
    "and the hierarchical all-reduce's step, the speedup over the ring,\n"
    "K* (the fewest separate servers as fast as the ring, found exactly)\n"
    "and what bounds the best layout; \"?\" marks figures in regimes the\n"
    "calibration never saw or the lab validation missed (a footnote says\n"
    "why). Without --calibration the latency\n"
    "and CPU costs are documented defaults, not fitted\n"
    "(docs/simulator.md): compare layouts, do not quote absolute times.\n";

struct PlanOptions {
  SimFlags sim;
  std::string workers = "8..1024";
  std::string servers = "1..N";
  std::string layouts = "ring,hd,hierarchical,ps,ps-colocated";
  std::string output;
  bool help = false;
};

// --servers: "A..B", "A..N" (B = 0: up to N), or "K".
[[nodiscard]] absl::Status ParseServerRange(absl::string_view text,
                                            sim::PlanRequest* request) {
  absl::string_view rest = text;
  if (absl::ConsumeSuffix(&rest, "..N") || absl::ConsumeSuffix(&rest, "..n")) {
    int lo = 0;
    if (!absl::SimpleAtoi(rest, &lo) || lo < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--servers '", text, "': give A..B, A..N or one count"));
    }
    request->min_servers = std::max(1, lo);
    request->max_servers = 0;
    return absl::OkStatus();
  }
  const std::vector<absl::string_view> range = absl::StrSplit(text, "..");
  int lo = 0, hi = 0;
  bool ok = false;
  if (range.size() == 2) {
    ok = absl::SimpleAtoi(range[0], &lo) && absl::SimpleAtoi(range[1], &hi);
  } else if (absl::SimpleAtoi(text, &lo)) {
    hi = lo;
    ok = true;
  }
  if (!ok || lo < 0 || hi < std::max(1, lo)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--servers '", text, "': give A..B, A..N or one count (>= 1)"));
  }
  request->min_servers = std::max(1, lo);
  request->max_servers = hi;
  return absl::OkStatus();
}

// "ps K=8" or "hierarchical".
std::string CellName(const sim::PlanCell& c) {
  return sim::IsPsLayout(c.layout)
             ? absl::StrCat(sim::SimLayoutName(c.layout), " K=", c.servers)
             : std::string(sim::SimLayoutName(c.layout));
}

std::string MillisOrDash(double seconds) {
  return seconds >= 0 ? absl::StrFormat("%.1f", seconds * 1e3) : "-";
}

// The "?" column's footnote: each marker of a best cell once, with the
// reason of its first row, then the calibration's own caveat.
std::string UncertaintyFootnote(const sim::SimConfig& base,
                                const std::vector<sim::PlanRow>& rows) {
  std::string out;
  std::string seen;
  for (const sim::PlanRow& row : rows) {
    for (const sim::Uncertainty& u : row.cells[row.best].uncertain) {
      if (seen.find(u.marker) != std::string::npos) continue;
      seen.push_back(u.marker);
      absl::StrAppend(&out, "  ", std::string(1, u.marker), ": ", u.reason,
                      " (first at N = ", row.workers, ")\n");
    }
  }
  if (!out.empty()) {
    out = absl::StrCat(
        "?: uncertain regimes (docs/simulator.md, \"Uncertain regimes\"):\n",
        out);
  }
  const std::string caveat = sim::CalibrationCaveat(base.calibration);
  if (!caveat.empty()) absl::StrAppend(&out, "Note: ", caveat, ".\n");
  return out;
}

void PrintTable(const PlanOptions& o, const sim::SimConfig& base,
                const std::vector<sim::PlanRow>& rows, const CommandEnv& env) {
  *env.out << DescribeSetup(o.sim, base) << "\n\n";
  std::vector<std::vector<std::string>> table;
  for (const sim::PlanRow& row : rows) {
    const sim::PlanCell& best = row.cells[row.best];
    table.push_back(
        {absl::StrCat(row.workers), CellName(best), MillisOrDash(best.step_s),
         o.sim.compute_ms >= 0
             ? "-"
             : absl::StrFormat("%.0f", row.workers * o.sim.batch / best.step_s),
         MillisOrDash(row.ring_s), MillisOrDash(row.hierarchical_s),
         row.ring_s > 0 ? absl::StrFormat("x%.2f", row.ring_s / best.step_s)
                        : "-",
         row.k_star > 0 ? absl::StrCat(row.k_star) : "-",
         FormatPercent(best.exposed_comm_s / best.step_s), best.bottleneck,
         best.uncertain.empty() ? "" : sim::Markers(best.uncertain)});
  }
  *env.out << FormatTable(
                  {"N", "BEST", "STEP ms", "SAMPLES/s", "RING ms", "HIER ms",
                   "VS RING", "K*", "EXPOSED", "BOTTLENECK", "?"},
                  table)
           << "\nK*: the fewest servers on hosts of their own whose step is "
              "no slower than the ring's (- : none in --servers).\n"
              "EXPOSED: the share of the best step that backward does not "
              "hide. -o json lists every cell.\n"
           << UncertaintyFootnote(base, rows);
}

void PrintJson(const PlanOptions& o, const std::vector<sim::PlanRow>& rows,
               const CommandEnv& env) {
  *env.out << "{\"model\":" << JsonQuote(o.sim.model_profile) << ",\"rows\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const sim::PlanRow& row = rows[i];
    *env.out << (i ? "," : "") << "{\"workers\":" << row.workers
             << ",\"best\":" << JsonQuote(CellName(row.cells[row.best]))
             << ",\"ringS\":"
             << (row.ring_s >= 0 ? JsonNumber(row.ring_s) : "null")
             << ",\"hierarchicalS\":"
             << (row.hierarchical_s >= 0 ? JsonNumber(row.hierarchical_s)
                                         : "null")
             << ",\"kStar\":" << row.k_star << ",\"cells\":[";
    for (size_t j = 0; j < row.cells.size(); ++j) {
      const sim::PlanCell& c = row.cells[j];
      *env.out << (j ? "," : "")
               << "{\"layout\":" << JsonQuote(sim::SimLayoutName(c.layout))
               << ",\"servers\":" << c.servers
               << ",\"stepS\":" << JsonNumber(c.step_s)
               << ",\"exposedCommS\":" << JsonNumber(c.exposed_comm_s)
               << ",\"bottleneck\":" << JsonQuote(c.bottleneck)
               << ",\"uncertain\":[";
      for (size_t u = 0; u < c.uncertain.size(); ++u) {
        *env.out << (u ? "," : "") << "{\"marker\":"
                 << JsonQuote(std::string(1, c.uncertain[u].marker))
                 << ",\"reason\":" << JsonQuote(c.uncertain[u].reason) << "}";
      }
      *env.out << "]}";
    }
    *env.out << "]}";
  }
  *env.out << "]}\n";
}

void PrintCsv(const std::vector<sim::PlanRow>& rows, const CommandEnv& env) {
  *env.out << "workers,layout,servers,step_s,exposed_comm_s,bottleneck,best,"
              "uncertain\n";
  for (const sim::PlanRow& row : rows) {
    for (size_t j = 0; j < row.cells.size(); ++j) {
      const sim::PlanCell& c = row.cells[j];
      *env.out << row.workers << "," << sim::SimLayoutName(c.layout) << ","
               << c.servers << "," << JsonNumber(c.step_s) << ","
               << JsonNumber(c.exposed_comm_s) << ",\"" << c.bottleneck << "\","
               << (j == row.best ? 1 : 0) << "," << sim::Markers(c.uncertain)
               << "\n";
    }
  }
}

// The request the flags describe; INVALID_ARGUMENT naming the flag.
[[nodiscard]] absl::StatusOr<sim::PlanRequest> BuildRequest(
    const PlanOptions& o) {
  sim::PlanRequest request;
  ASSIGN_OR_RETURN(request.workers, ParseCounts("--workers", o.workers, 1));
  request.layouts.clear();
  for (absl::string_view name : absl::StrSplit(o.layouts, ',')) {
    ASSIGN_OR_RETURN(const sim::SimLayout layout, sim::ParseSimLayout(name));
    request.layouts.push_back(layout);
  }
  RETURN_IF_ERROR(ParseServerRange(o.servers, &request));
  ASSIGN_OR_RETURN(request.workload, BuildWorkload(o.sim));
  ASSIGN_OR_RETURN(request.base, BuildConfig(o.sim));
  return request;
}

}  // namespace

int RunPlan(const std::vector<std::string>& args, const CommandEnv& env) {
  PlanOptions o;
  std::vector<FlagSpec> flags = {
      StringFlag("workers", "RANGE",
                 "worker counts: A..B (powers of two), A,B,C or N (8..1024)",
                 &o.workers)
          .Short('w'),
      StringFlag("servers", "RANGE", "PS server counts: A..B, A..N or K (1..N)",
                 &o.servers),
      StringFlag("layouts", "L,...",
                 "ring, hd, hierarchical, ps, ps-colocated (all)", &o.layouts),
  };
  AddSimFlags(&o.sim, &flags);
  AddOutputFlags({"table", "json", "csv"}, &o.output, &flags);
  flags.push_back(HelpFlag(&o.help));
  if (env.flag_table != nullptr) {
    *env.flag_table = std::move(flags);
    return kExitOk;
  }
  absl::StatusOr<std::vector<std::string>> positional =
      ParseFlags(args, flags, /*env=*/nullptr);
  if (positional.ok() && !positional->empty()) {
    positional = absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", positional->front(), "'"));
  }
  if (!positional.ok()) {
    return ReportUsageError(env, "plan", args, positional.status());
  }
  if (o.help) {
    *env.out << kUsage << "\nflags:\n" << FlagsHelp(flags, env.terminal_width);
    return kExitOk;
  }
  const bool json = o.output == "json";
  absl::StatusOr<sim::PlanRequest> request = BuildRequest(o);
  if (!request.ok()) {
    return ReportError(env, "plan", json, request.status());
  }
  absl::StatusOr<std::vector<sim::PlanRow>> rows = sim::RunPlan(*request);
  if (!rows.ok()) {
    return ReportError(env, "plan", json, rows.status());
  }
  if (json) {
    PrintJson(o, *rows, env);
  } else if (o.output == "csv") {
    PrintCsv(*rows, env);
  } else {
    PrintTable(o, request->base, *rows, env);
  }
  return kExitOk;
}

}  // namespace plan
}  // namespace cli
}  // namespace gradsync
