#include "cli/bench/report.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

using ::testing::HasSubstr;

ReportHeader AllReduceHeader() {
  ReportHeader header;
  header.collective = Collective::kAllReduce;
  header.backend = "ring";
  header.algorithm = "auto";
  header.ranks = 4;
  header.type = DataType::kFloat32;
  header.op = ReduceOp::kSum;
  header.min_bytes = 1024;
  header.max_bytes = 1 << 20;
  header.factor = 2;
  header.warmup = 5;
  header.iters = 20;
  header.rank_info = {{0, 1234, "node0", "cpu"}, {1, 1235, "node0", "cpu"}};
  return header;
}

SizeResult Result() {
  SizeResult result;
  result.size_bytes = 1048576;
  result.count = 262144;
  result.out_of_place = {1234.5, 0.85, 1.27, 0};
  result.in_place = {12.3456, 84.94, 127.41, 0};
  return result;
}

TEST(FormatTextHeaderTest, NamesTheRingsCongestionControl) {
  ReportHeader header = AllReduceHeader();
  header.tcp_congestion = "auto";
  EXPECT_THAT(FormatTextHeader(header),
              HasSubstr("# gradsync bench allreduce: backend ring, algo auto, "
                        "tcp congestion auto, 4 ranks\n"));
}

TEST(FormatTextHeaderTest, NamesTheTransport) {
  ReportHeader header = AllReduceHeader();
  header.tcp_congestion = "auto";
  header.transport = "shm";
  EXPECT_THAT(FormatTextHeader(header),
              HasSubstr("tcp congestion auto, transport shm, 4 ranks\n"));
}

TEST(FormatTimeTest, DecimalsLikeNcclTests) {
  EXPECT_EQ(FormatTime(12.3456), "  12.35");
  EXPECT_EQ(FormatTime(1234.56), " 1234.6");
  EXPECT_EQ(FormatTime(123456.7), " 123457");
}

TEST(FormatTextRowTest, ColumnsLineUpWithTheHeader) {
  const ReportHeader header = AllReduceHeader();
  const std::string row = FormatTextRow(header, Result());
  EXPECT_EQ(row,
            "     1048576        262144     float     sum      -1   1234.5"
            "    0.85    1.27       0    12.35   84.94  127.41       0\n");
  const std::string text = FormatTextHeader(header);
  EXPECT_THAT(text, HasSubstr("backend ring, algo auto, 4 ranks\n"));
  // The column names end where the row's columns end.
  const size_t names = text.find("#       size");
  ASSERT_NE(names, std::string::npos);
  const std::string names_line =
      text.substr(names, text.find('\n', names) - names);
  EXPECT_EQ(names_line.size() + 1, row.size());
  EXPECT_EQ(names_line.rfind("#wrong") + 6, row.size() - 1);
}

TEST(FormatTextRowTest, NonReducingCollectivesPrintNoneAndRoot) {
  ReportHeader header = AllReduceHeader();
  header.collective = Collective::kBroadcast;
  header.root = 2;
  EXPECT_THAT(FormatTextRow(header, Result()),
              HasSubstr("float    none       2"));
  header.collective = Collective::kAllGather;
  EXPECT_THAT(FormatTextRow(header, Result()),
              HasSubstr("float    none      -1"));
}

TEST(FormatTextRowTest, UncheckedShowsNotAvailable) {
  SizeResult result = Result();
  result.out_of_place.wrong = -1;
  result.in_place.wrong = -1;
  EXPECT_THAT(FormatTextRow(AllReduceHeader(), result),
              HasSubstr("1.27     N/A"));
}

TEST(FormatTextHeaderTest, NcclTestsLines) {
  const std::string text = FormatTextHeader(AllReduceHeader());
  EXPECT_THAT(text, HasSubstr("# nThread 1 nRanks 4 minBytes 1024 maxBytes "
                              "1048576 step: 2(factor) warmup iters: 5 "
                              "iters: 20 validation: 1\n"));
  EXPECT_THAT(text,
              HasSubstr("#  Rank  0 Pid   1234 on      node0 device cpu\n"));
  EXPECT_THAT(text,
              HasSubstr("#  Rank  1 Pid   1235 on      node0 device cpu\n"));
  EXPECT_THAT(text, HasSubstr("out-of-place"));
  EXPECT_THAT(text, HasSubstr("in-place"));
  EXPECT_THAT(text, HasSubstr("(GB/s)"));
}

TEST(SummaryTest, SumsWrongAndAveragesEveryPass) {
  SizeResult bad = Result();
  bad.in_place.wrong = 3;
  const Summary summary = Summarize({Result(), bad});
  EXPECT_EQ(summary.wrong, 3);
  EXPECT_FALSE(summary.ok());
  EXPECT_TRUE(summary.checked);
  EXPECT_DOUBLE_EQ(summary.avg_busbw, (1.27 + 127.41) / 2);
}

TEST(FormatTextFooterTest, OkAndFailed) {
  Summary summary;
  summary.checked = true;
  summary.avg_busbw = 1.5;
  EXPECT_EQ(FormatTextFooter(summary),
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth : 1.5\n#\n");
  summary.wrong = 7;
  EXPECT_THAT(FormatTextFooter(summary),
              HasSubstr("# Out of bounds values : 7 FAILED\n"));
  Summary unchecked;
  EXPECT_THAT(FormatTextFooter(unchecked),
              HasSubstr("Out of bounds values : 0 OK (not checked: -c 0)"));
}

TEST(FormatJsonTest, RowAndSummary) {
  SizeResult result = Result();
  result.in_place.wrong = -1;
  EXPECT_EQ(FormatJsonRow(AllReduceHeader(), result),
            "{\"collective\":\"allreduce\",\"backend\":\"ring\",\"algo\":"
            "\"auto\",\"ranks\":4,\"size\":1048576,\"count\":262144,"
            "\"type\":\"float\",\"redop\":\"sum\",\"root\":-1,"
            "\"out_of_place\":{\"time_us\":1234.5,\"algbw\":0.85,"
            "\"busbw\":1.27,\"wrong\":0},\"in_place\":{\"time_us\":12.3456,"
            "\"algbw\":84.94,\"busbw\":127.41,\"wrong\":null}}\n");
  // The policy the transport ran, for scripts that compare runs.
  ReportHeader ps = AllReduceHeader();
  ps.backend = ps.algorithm = "ps";
  ps.ps_shard_addresses = {"127.0.0.1:1", "127.0.0.1:2"};
  ps.tcp_congestion = "default";
  EXPECT_THAT(FormatJsonRow(ps, result),
              HasSubstr("\"ranks\":4,\"shards\":2,\"tcp_congestion\":"
                        "\"default\",\"size\":1048576,"));
  Summary summary;
  summary.checked = true;
  summary.avg_busbw = 2.25;
  EXPECT_EQ(FormatJsonSummary(AllReduceHeader(), summary),
            "{\"summary\":true,\"collective\":\"allreduce\",\"backend\":"
            "\"ring\",\"ranks\":4,\"wrong\":0,\"ok\":true,\"checked\":true,"
            "\"avg_busbw\":2.25}\n");
}

}  // namespace
}  // namespace bench
}  // namespace cli
}  // namespace gradsync
