#include "cli/lab/lab_calibrate_bench.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/lab/lab_calibrate.h"
#include "cli/lab/lab_config.h"
#include "study/sim/json_reader.h"

namespace gradsync {
namespace lab {
namespace {

// The member `name` of `row` as a string ("" when absent or not one).
std::string Text(const sim::JsonValue& row, const char* name) {
  const sim::JsonValue* v = row.Find(name);
  return v != nullptr && v->is_string() ? v->string() : "";
}

// The member `name` of `row` as a number, or -1.
double Number(const sim::JsonValue& row, const char* name) {
  const sim::JsonValue* v = row.Find(name);
  return v != nullptr && v->is_number() ? v->number() : -1;
}

}  // namespace

absl::StatusOr<BenchCells> ParseBenchJson(const std::string& text,
                                          const std::string& source,
                                          const BenchCluster& cluster) {
  if (cluster.link_bps <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": a bench output needs the hosts' link rate "
                     "(--link RATE)"));
  }
  BenchCells out;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    // The text table's lines start with '#'; JSON rows with '{'.
    if (line.empty() || line.front() == '#') continue;
    const std::string where = absl::StrCat(source, ":", line_number);
    absl::StatusOr<sim::JsonValue> row = sim::ParseJson(line);
    if (!row.ok() || !row->is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where,
          ": not a JSON row of `gradsync bench -o json` (run the bench "
          "with -o json)"));
    }
    const sim::JsonValue* summary = row->Find("summary");
    if (summary != nullptr && summary->boolean()) continue;
    auto skip = [&](const std::string& why) {
      out.skipped.push_back(absl::StrCat(where, ": ", why));
    };
    const std::string collective = Text(*row, "collective");
    const std::string backend = Text(*row, "backend");
    if (collective != "allreduce") {
      skip(absl::StrCat("collective ", collective, ", not allreduce"));
      continue;
    }
    const double ranks = Number(*row, "ranks");
    const double size = Number(*row, "size");
    const sim::JsonValue* pass = row->Find("out_of_place");
    const double time_us =
        pass != nullptr && pass->is_object() ? Number(*pass, "time_us") : -1;
    if (ranks < 1 || size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": a row without its ranks and size"));
    }
    if (ranks < 2) {
      skip("one rank: no link in play");
      continue;
    }
    if (!(time_us > 0) || size == 0) {
      skip("no time measured");
      continue;
    }
    sim::MeasuredCell cell;
    cell.workers = static_cast<int>(ranks);
    cell.gpus_per_node = 1;
    cell.bytes = size;
    cell.nic_Bps = cluster.link_bps / 8.0;
    cell.measured_s = time_us * 1e-6;
    cell.server_cores = cluster.server_cores;
    std::string name;
    if (backend == "ps") {
      const double shards = Number(*row, "shards");
      if (shards < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": a ps row without its shards"));
      }
      cell.layout = cluster.ps_colocated ? sim::SimLayout::kPsColocated
                                         : sim::SimLayout::kPsSeparate;
      cell.servers = static_cast<int>(shards);
      cell.partition_bytes = cluster.ps_partition_bytes;
      cell.transport = cluster.ps_transport;
      name = absl::StrCat(sim::SimLayoutName(cell.layout), " K=", cell.servers);
    } else if (backend == "ring") {
      const std::string algo = Text(*row, "algo");
      if (algo == "ring") {
        cell.layout = sim::SimLayout::kRing;
      } else if (algo == "hd" || algo == "halving-doubling") {
        cell.layout = sim::SimLayout::kHalvingDoubling;
      } else if (algo == "auto" || algo.empty()) {
        cell.layout = size <= kLabHalvingDoublingMaxBytes
                          ? sim::SimLayout::kHalvingDoubling
                          : sim::SimLayout::kRing;
      } else {
        skip(absl::StrCat("ring algorithm ", algo,
                          " (its hosts are not in the row)"));
        continue;
      }
      name = std::string(sim::SimLayoutName(cell.layout));
    } else {
      skip(absl::StrCat("backend ", backend,
                        " (the simulator models the TCP "
                        "ring and the PS)"));
      continue;
    }
    cell.label = absl::StrCat("bench ", name, " N=", cell.workers,
                              absl::StrFormat(" %gM ", size / 1048576.0),
                              DescribeLinkRate(cluster.link_bps));
    out.cells.push_back(std::move(cell));
  }
  return out;
}

}  // namespace lab
}  // namespace gradsync
