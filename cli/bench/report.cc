#include "cli/bench/report.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

// Row prefix (size, count, type, redop, root): 52 characters, and each
// pass (time, algbw, busbw, #wrong): 33, in the header and in the rows.
constexpr int kPrefixWidth = 52;
constexpr int kPassWidth = 33;
// Times and bandwidths in the JSON lines: their digits past the sixth are
// timing noise.
constexpr int kMeasuredDigits = 6;

std::string Center(const std::string& text, int width) {
  const int pad = width - static_cast<int>(text.size());
  if (pad <= 0) return text;
  return absl::StrCat(std::string(pad / 2, ' '), text,
                      std::string(pad - pad / 2, ' '));
}

// The in-place columns of a backend that has no in-place form.
std::string AbsentPassColumns() {
  return absl::StrFormat("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
}

std::string PassColumns(const PassResult& pass) {
  const std::string wrong = pass.wrong < 0 ? "N/A" : absl::StrCat(pass.wrong);
  return absl::StrFormat("  %7s  %6.2f  %6.2f  %6s", FormatTime(pass.time_us),
                         pass.algbw, pass.busbw, wrong);
}

std::string JsonPass(const PassResult& pass) {
  return absl::StrCat(
      "{\"time_us\":", JsonNumber(pass.time_us, kMeasuredDigits),
      ",\"algbw\":", JsonNumber(pass.algbw, kMeasuredDigits),
      ",\"busbw\":", JsonNumber(pass.busbw, kMeasuredDigits), ",\"wrong\":",
      pass.wrong < 0 ? std::string("null") : absl::StrCat(pass.wrong), "}");
}

}  // namespace

Summary Summarize(const std::vector<SizeResult>& results) {
  Summary summary;
  double busbw_total = 0.0;
  int passes = 0;
  for (const SizeResult& result : results) {
    for (const PassResult* pass : {&result.out_of_place, &result.in_place}) {
      if (pass == &result.in_place && !result.has_in_place) continue;
      busbw_total += pass->busbw;
      ++passes;
      if (pass->wrong >= 0) {
        summary.checked = true;
        summary.wrong += pass->wrong;
      }
    }
  }
  summary.avg_busbw = passes > 0 ? busbw_total / passes : 0.0;
  return summary;
}

std::string RedopLabel(const ReportHeader& header) {
  return HasReduceOp(header.collective) ? std::string(ReduceOpName(header.op))
                                        : std::string("none");
}

int RootLabel(const ReportHeader& header) {
  return HasRoot(header.collective) ? header.root : -1;
}

std::string FormatTime(double time_us) {
  if (time_us >= 10000.0) return absl::StrFormat("%7.0f", time_us);
  if (time_us >= 100.0) return absl::StrFormat("%7.1f", time_us);
  return absl::StrFormat("%7.2f", time_us);
}

std::string FormatTextHeader(const ReportHeader& header) {
  const bool ps = !header.ps_shard_addresses.empty();
  std::string out = absl::StrCat(
      "# gradsync bench ", CollectiveName(header.collective), ": backend ",
      header.backend, ", ",
      ps ? absl::StrCat(header.ps_shard_addresses.size(), " shards")
         : absl::StrCat("algo ", header.algorithm),
      header.tcp_congestion.empty()
          ? ""
          : absl::StrCat(", tcp congestion ", header.tcp_congestion),
      header.transport.empty() ? ""
                               : absl::StrCat(", transport ", header.transport),
      ", ", header.ranks, " ranks\n");
  if (ps) {
    absl::StrAppend(&out, "# PS shards:");
    for (size_t k = 0; k < header.ps_shard_addresses.size(); ++k) {
      absl::StrAppend(&out, k == 0 ? " " : ", ", k, " at ",
                      header.ps_shard_addresses[k]);
    }
    absl::StrAppend(
        &out,
        "; sync, SGD lr 1\n# time: one PushPull per rank (push S bytes, "
        "pull S bytes); busbw = algbw * 2 max(1, N/K); no in-place form\n");
  }
  const std::string step = header.increment > 0
                               ? absl::StrCat(header.increment, "(bytes)")
                               : absl::StrCat(header.factor, "(factor)");
  absl::StrAppend(&out, "# nThread 1 nRanks ", header.ranks, " minBytes ",
                  header.min_bytes, " maxBytes ", header.max_bytes,
                  " step: ", step, " warmup iters: ", header.warmup,
                  " iters: ", header.iters,
                  " validation: ", header.check ? 1 : 0, "\n");
  absl::StrAppend(&out, "#\n# Using devices\n");
  for (const RankInfo& info : header.rank_info) {
    absl::StrAppendFormat(&out, "#  Rank %2d Pid %6d on %10s device %s\n",
                          info.rank, info.pid, info.host, info.device);
  }
  absl::StrAppend(&out, "#\n");
  absl::StrAppend(&out, "#", std::string(kPrefixWidth - 1, ' '),
                  Center("out-of-place", kPassWidth),
                  Center("in-place", kPassWidth), "\n");
  const std::string pass_names = absl::StrFormat("  %7s  %6s  %6s  %6s", "time",
                                                 "algbw", "busbw", "#wrong");
  const std::string pass_units =
      absl::StrFormat("  %7s  %6s  %6s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
  absl::StrAppendFormat(&out, "# %10s  %12s  %8s  %6s  %6s%s%s\n", "size",
                        "count", "type", "redop", "root", pass_names,
                        pass_names);
  absl::StrAppendFormat(&out, "# %10s  %12s  %8s  %6s  %6s%s%s\n", "(B)",
                        "(elements)", "", "", "", pass_units, pass_units);
  return out;
}

std::string FormatTextRow(const ReportHeader& header,
                          const SizeResult& result) {
  return absl::StrCat(
      absl::StrFormat("%12d  %12d  %8s  %6s  %6d", result.size_bytes,
                      result.count, DataTypeName(header.type),
                      RedopLabel(header), RootLabel(header)),
      PassColumns(result.out_of_place),
      result.has_in_place ? PassColumns(result.in_place) : AbsentPassColumns(),
      "\n");
}

std::string FormatTextFooter(const Summary& summary) {
  std::string out = absl::StrCat("# Out of bounds values : ", summary.wrong,
                                 summary.ok() ? " OK" : " FAILED");
  if (!summary.checked) absl::StrAppend(&out, " (not checked: -c 0)");
  absl::StrAppend(&out, "\n# Avg bus bandwidth : ",
                  absl::StrFormat("%g", summary.avg_busbw), "\n#\n");
  return out;
}

std::string FormatJsonRow(const ReportHeader& header,
                          const SizeResult& result) {
  return absl::StrCat(
      "{\"collective\":",
      JsonQuote(std::string(CollectiveName(header.collective))),
      ",\"backend\":", JsonQuote(header.backend),
      ",\"algo\":", JsonQuote(header.algorithm), ",\"ranks\":", header.ranks,
      header.ps_shard_addresses.empty()
          ? std::string()
          : absl::StrCat(",\"shards\":", header.ps_shard_addresses.size()),
      header.tcp_congestion.empty()
          ? std::string()
          : absl::StrCat(",\"tcp_congestion\":",
                         JsonQuote(header.tcp_congestion)),
      header.transport.empty()
          ? std::string()
          : absl::StrCat(",\"transport\":", JsonQuote(header.transport)),
      ",\"size\":", result.size_bytes, ",\"count\":", result.count,
      ",\"type\":", JsonQuote(std::string(DataTypeName(header.type))),
      ",\"redop\":", JsonQuote(RedopLabel(header)),
      ",\"root\":", RootLabel(header),
      ",\"out_of_place\":", JsonPass(result.out_of_place), ",\"in_place\":",
      result.has_in_place ? JsonPass(result.in_place) : std::string("null"),
      "}\n");
}

std::string FormatJsonSummary(const ReportHeader& header,
                              const Summary& summary) {
  return absl::StrCat(
      "{\"summary\":true,\"collective\":",
      JsonQuote(std::string(CollectiveName(header.collective))),
      ",\"backend\":", JsonQuote(header.backend), ",\"ranks\":", header.ranks,
      ",\"wrong\":", summary.wrong, ",\"ok\":", summary.ok() ? "true" : "false",
      ",\"checked\":", summary.checked ? "true" : "false",
      ",\"avg_busbw\":", JsonNumber(summary.avg_busbw, kMeasuredDigits), "}\n");
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
