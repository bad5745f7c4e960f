// Output of `gradsync bench`: the nccl-tests table (header lines, one row
// per size with out-of-place then in-place time/algbw/busbw/#wrong, and the
// "Out of bounds values" / "Avg bus bandwidth" footer), or the same rows as
// JSON lines for scripts. Pure formatting functions: the runner measures,
// rank 0 prints what these return.
//
//   std::cout << FormatTextHeader(header);
//   for (...) std::cout << FormatTextRow(header, result) << std::flush;
//   std::cout << FormatTextFooter(Summarize(results));
#ifndef GRADSYNC_CLI_BENCH_REPORT_H_
#define GRADSYNC_CLI_BENCH_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/bench/collective.h"
#include "collectives/types.h"

namespace gradsync {
namespace cli {
namespace bench {

// One timed pass (out-of-place or in-place) at one size.
struct PassResult {
  double time_us = 0.0;  // max over ranks of the per-iteration average
  double algbw = 0.0;    // GB/s
  double busbw = 0.0;    // GB/s
  int64_t wrong = -1;    // wrong elements summed over ranks; -1 unchecked
};

struct SizeResult {
  size_t size_bytes = 0;  // the size column (CollectiveCounts::size_bytes)
  size_t count = 0;       // the count column (param_count)
  PassResult out_of_place;
  PassResult in_place;
  // False where the backend has no in-place form (ps: the pulled
  // parameters never overwrite the pushed gradient); its columns print N/A
  // and it counts in no summary.
  bool has_in_place = true;
};

// Who ran where, for the "#  Rank  r Pid ... on host ..." lines.
struct RankInfo {
  int rank = 0;
  int64_t pid = 0;
  std::string host;
  std::string device;
};

// What the run measured, for the header lines and every row's labels.
struct ReportHeader {
  Collective collective = Collective::kAllReduce;
  std::string backend;
  std::string algorithm;
  // Backends "ring" and "ps": the TCP congestion control policy ("auto",
  // "default", a name; common/tcp_congestion.h); empty for nccl.
  std::string tcp_congestion;
  // Backends "ring" and "ps": TcpOptions::transport ("auto", "tcp", "shm").
  std::string transport;
  int ranks = 1;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  size_t min_bytes = 0;
  size_t max_bytes = 0;
  int factor = 2;
  size_t increment = 0;
  int warmup = 0;
  int iters = 0;
  bool check = true;
  std::vector<RankInfo> rank_info;
  // Backend "ps": the address of each shard k (K = its size), and what
  // busbw is (PsBusFactor, study/alpha_beta/sync_bandwidth.h).
  std::vector<std::string> ps_shard_addresses;
};

struct Summary {
  int64_t wrong = 0;       // over every checked pass
  double avg_busbw = 0.0;  // mean busbw over every pass, as nccl-tests
  bool checked = false;    // any pass was checked
  bool ok() const { return wrong == 0; }
};
Summary Summarize(const std::vector<SizeResult>& results);

// The redop and root columns: "none"/-1 where the collective has none.
std::string RedopLabel(const ReportHeader& header);
int RootLabel(const ReportHeader& header);

// The time column as nccl-tests prints it: 2 decimals below 100 us, 1
// below 10 ms, none above.
std::string FormatTime(double time_us);

std::string FormatTextHeader(const ReportHeader& header);
std::string FormatTextRow(const ReportHeader& header, const SizeResult& result);
std::string FormatTextFooter(const Summary& summary);

// One JSON object per line. A row:
//   {"collective":"allreduce","backend":"ring","algo":"auto","ranks":4,
//    "size":1048576,"count":262144,"type":"float","redop":"sum","root":-1,
//    "out_of_place":{"time_us":..,"algbw":..,"busbw":..,"wrong":0},
//    "in_place":{...}}
// (bandwidths in GB/s; "wrong" is null when unchecked; backend ps adds
// "shards":K after "ranks" and has "in_place":null). The summary:
//   {"summary":true,"collective":..,"ranks":4,"wrong":0,"ok":true,
//    "checked":true,"avg_busbw":..}
std::string FormatJsonRow(const ReportHeader& header, const SizeResult& result);
std::string FormatJsonSummary(const ReportHeader& header,
                              const Summary& summary);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_REPORT_H_
