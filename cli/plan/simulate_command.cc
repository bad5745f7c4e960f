#include "cli/plan/simulate_command.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/framework/format.h"
#include "cli/framework/output_format.h"
#include "cli/plan/sim_flags.h"
#include "common/flags.h"
#include "common/json.h"
#include "common/units.h"
#include "study/sim/step_simulator.h"
#include "study/sim/trace.h"

namespace gradsync {
namespace cli {
namespace plan {
namespace {

constexpr char kUsage[] =
    "usage: gradsync simulate --model-profile NAME --workers N --link RATE\n"
    "                         [--gpus-per-node G] [--layout L] [--servers K]\n"
    "                         [--grad-dtype bf16] [--trace FILE] [flags]\n\n"
    "One data-parallel training step of a published network, simulated\n"
    "event by event: backward layer by layer, the gradients synchronised\n"
    "as they become final (all-reduce buckets, or PS partitions pushed\n"
    "and pulled), flows sharing each NIC fairly. Prints the step time,\n"
    "the communication backward did not hide, what bounds the step and\n"
    "the busiest links; --trace writes the step's timeline for\n"
    "chrome://tracing or Perfetto.\n"
    "Layouts: ring, hd (halving-doubling), hierarchical, ps (servers on\n"
    "hosts of their own), ps-colocated (one per worker node). Without\n"
    "--calibration the latency and CPU costs are documented defaults,\n"
    "not fitted (docs/simulator.md): compare layouts, do not quote\n"
    "absolute times.\n";

struct SimulateOptions {
  SimFlags sim;
  int workers = 0;
  std::string layout = "ring";
  int servers = 0;  // 0: one per node
  std::string trace;
  std::string output;
  bool help = false;
};

// "ps, 8 servers (plane, contiguous, partitions of 3.91 MiB, pipelined)".
std::string DescribeLayout(const sim::SimConfig& c) {
  if (!sim::IsPsLayout(c.layout)) {
    return absl::StrCat(
        sim::SimLayoutName(c.layout), " all-reduce, buckets of ",
        FormatBytes(c.bucket_bytes),
        c.first_bucket_bytes > 0
            ? absl::StrCat(" (the first ", FormatBytes(c.first_bucket_bytes),
                           ")")
            : "");
  }
  return absl::StrCat(
      sim::SimLayoutName(c.layout), ", ", c.servers,
      c.servers == 1 ? " server (" : " servers (",
      sim::PsTransportName(c.transport), ", ",
      sim::PsPlacementName(c.ps_placement), ", ",
      c.partition_bytes > 0
          ? absl::StrCat("partitions of ", FormatBytes(c.partition_bytes))
          : (c.ps_placement == sim::PsPlacement::kSpread
                 ? "one partition per layer"
                 : "one partition per server"),
      c.ps_pipelined ? ", pipelined)" : ", unpipelined)");
}

std::string Millis(double seconds) {
  return absl::StrFormat("%.2f ms", seconds * 1e3);
}

void PrintTable(const SimulateOptions& o, const sim::SimConfig& c,
                const sim::SimResult& r, const std::string& bottleneck,
                const CommandEnv& env) {
  *env.out << DescribeSetup(o.sim, c) << "\n"
           << c.topology.workers << " workers on " << c.topology.nodes()
           << (c.topology.nodes() == 1 ? " node, " : " nodes, ")
           << DescribeLayout(c) << "; gradient "
           << FormatBytes(r.gradient_bytes) << "\n\n";
  const double samples = c.topology.workers * o.sim.batch / r.step_s;
  const std::vector<std::pair<std::string, std::string>> lines = {
      {"step", Millis(r.step_s)},
      {"throughput", o.sim.compute_ms >= 0
                         ? "- (no batch with --compute-ms)"
                         : absl::StrFormat("%.0f samples/s", samples)},
      {"forward", Millis(r.forward_s)},
      {"backward", Millis(r.backward_s)},
      {"exposed comm", absl::StrCat(Millis(r.exposed_comm_s), " (",
                                    FormatPercent(r.exposed_comm_s / r.step_s),
                                    " of the step)")},
      {"bottleneck", bottleneck}};
  for (const auto& [key, value] : lines) {
    *env.out << absl::StrFormat("%-14s%s\n", key, value);
  }
  *env.out << "\n";
  std::vector<const sim::ResourceUsage*> used;
  for (const sim::ResourceUsage& u : r.links) {
    if (u.bytes_per_copy > 0) used.push_back(&u);
  }
  std::stable_sort(
      used.begin(), used.end(),
      [](const sim::ResourceUsage* a, const sim::ResourceUsage* b) {
        return a->busy_s() > b->busy_s();
      });
  std::vector<std::vector<std::string>> rows;
  for (const sim::ResourceUsage* u : used) {
    if (rows.size() == 8) break;
    rows.push_back({u->name, absl::StrCat(u->copies),
                    FormatBytes(u->bytes_per_copy),
                    absl::StrFormat("%.2f", u->busy_s() * 1e3),
                    FormatPercent(u->busy_s() / r.step_s)});
  }
  *env.out << FormatTable(
      {"BUSIEST RESOURCES", "COPIES", "ON ONE COPY", "BUSY ms", "OF STEP"},
      rows);
  if (used.size() > rows.size()) {
    *env.out << "(" << used.size() - rows.size()
             << " more; -o json lists all)\n";
  }
}

void PrintJson(const SimulateOptions& o, const sim::SimConfig& c,
               const sim::SimResult& r, const std::string& bottleneck,
               const CommandEnv& env) {
  *env.out << "{\"model\":" << JsonQuote(o.sim.model_profile)
           << ",\"workers\":" << c.topology.workers
           << ",\"gpusPerNode\":" << c.topology.gpus_per_node
           << ",\"layout\":" << JsonQuote(sim::SimLayoutName(c.layout))
           << ",\"servers\":" << (sim::IsPsLayout(c.layout) ? c.servers : 0)
           << ",\"gradientBytes\":" << JsonNumber(r.gradient_bytes)
           << ",\"stepS\":" << JsonNumber(r.step_s)
           << ",\"forwardS\":" << JsonNumber(r.forward_s)
           << ",\"backwardS\":" << JsonNumber(r.backward_s)
           << ",\"exposedCommS\":" << JsonNumber(r.exposed_comm_s)
           << ",\"bottleneck\":" << JsonQuote(bottleneck)
           << ",\"events\":" << r.events << ",\"links\":[";
  for (size_t i = 0; i < r.links.size(); ++i) {
    const sim::ResourceUsage& u = r.links[i];
    *env.out << (i ? "," : "") << "{\"name\":" << JsonQuote(u.name)
             << ",\"copies\":" << u.copies
             << ",\"capacityBps\":" << JsonNumber(u.capacity_Bps)
             << ",\"bytesPerCopy\":" << JsonNumber(u.bytes_per_copy)
             << ",\"busyS\":" << JsonNumber(u.busy_s()) << "}";
  }
  *env.out << "]}\n";
}

}  // namespace

int RunSimulate(const std::vector<std::string>& args, const CommandEnv& env) {
  SimulateOptions o;
  std::vector<FlagSpec> flags = {
      IntFlag("workers", "GPUs in the job, one worker each (required)", 1,
              &o.workers)
          .Short('w'),
      StringFlag("layout", "ring|hd|hierarchical|ps|ps-colocated",
                 "how the gradients are synchronised (ring)", &o.layout),
      IntFlag("servers", "PS servers (one per node)", 1, &o.servers),
      StringFlag("trace", "FILE", "write the step's Chrome trace to FILE",
                 &o.trace),
  };
  AddSimFlags(&o.sim, &flags);
  AddOutputFlags(TableOrJson(), &o.output, &flags);
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
    return ReportUsageError(env, "simulate", args, positional.status());
  }
  if (o.help) {
    *env.out << kUsage << "\nflags:\n" << FlagsHelp(flags, env.terminal_width);
    return kExitOk;
  }
  const bool json = o.output == "json";
  if (o.workers == 0) {
    return ReportUsageError(
        env, "simulate", args,
        absl::InvalidArgumentError("give the worker count with --workers N"));
  }
  absl::StatusOr<sim::SimLayout> layout = sim::ParseSimLayout(o.layout);
  if (!layout.ok()) {
    return ReportUsageError(env, "simulate", args, layout.status());
  }
  absl::StatusOr<sim::SimWorkload> workload = BuildWorkload(o.sim);
  if (!workload.ok()) {
    return ReportError(env, "simulate", json, workload.status());
  }
  absl::StatusOr<sim::SimConfig> config = BuildConfig(o.sim);
  if (!config.ok()) {
    return ReportError(env, "simulate", json, config.status());
  }
  config->layout = *layout;
  config->topology.workers = o.workers;
  config->servers =
      o.servers > 0 ? o.servers
                    : std::max(1, o.workers / std::max(1, o.sim.gpus_per_node));
  config->record_timeline = !o.trace.empty();
  absl::StatusOr<sim::SimResult> result = sim::SimulateStep(*config, *workload);
  if (!result.ok()) {
    return ReportError(env, "simulate", json, result.status());
  }
  absl::StatusOr<std::string> bottleneck =
      sim::FindBottleneck(*config, *workload, *result);
  if (!bottleneck.ok()) {
    return ReportError(env, "simulate", json, bottleneck.status());
  }
  if (!o.trace.empty()) {
    std::ofstream out(o.trace, std::ios::trunc);
    out << sim::ChromeTraceJson(result->timeline);
    out.close();
    if (!out) {
      return ReportError(
          env, "simulate", json,
          absl::FailedPreconditionError(absl::StrCat(
              "cannot write the trace to ", o.trace, ": ", std::strerror(errno),
              "; check the directory and its space")));
    }
  }
  if (json) {
    PrintJson(o, *config, *result, *bottleneck, env);
  } else {
    PrintTable(o, *config, *result, *bottleneck, env);
    if (!o.trace.empty()) {
      *env.out << "trace: " << o.trace
               << " (open it in chrome://tracing or ui.perfetto.dev)\n";
    }
  }
  return kExitOk;
}

}  // namespace plan
}  // namespace cli
}  // namespace gradsync
