// Output formatting of the control commands: tables, JSON (int64 as
// numbers, parsable back), CSV, and the job and worker views (the progress
// line and the per-step breakdown are in progress_format_test.cc).
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/control/job_format.h"
#include "cli/control/logs_command.h"
#include "cli/control/progress.h"
#include "cli/framework/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/format_test_util.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using ::gradsync::cli::control::testing::Metric;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(FormatTableTest, PadsColumnsToTheWidestCell) {
  EXPECT_EQ(FormatTable({"ID", "STATE"}, {{"w-1", "IDLE"}, {"w-10", "BUSY"}}),
            "ID    STATE\n"
            "w-1   IDLE\n"
            "w-10  BUSY\n");
}

TEST(FormatTableTest, ShortRowsAndNoTrailingSpaces) {
  EXPECT_EQ(FormatTable({"A", "B", "C"}, {{"x"}}), "A  B  C\nx\n");
}

// Strings from the coordinator cannot drive the terminal or widen every
// row: control characters show as escapes, long cells are cut.
TEST(FormatTableTest, ControlCharactersEscapedAndLongCellsCut) {
  EXPECT_EQ(FormatTable({"NAME"}, {{"a\x1b[2Jb\nc\rd"}}),
            "NAME\na\\x1b[2Jb\\x0ac\\x0dd\n");
  const std::string table =
      FormatTable({"NAME"}, {{std::string(1 << 20, 'x')}});
  EXPECT_EQ(table,
            absl::StrCat("NAME\n", std::string(kMaxTableCellBytes - 3, 'x'),
                         "...\n"));
}

TEST(TerminalSafeTest, KeepsNewlinesWhenAskedAndCutsOnACharacter) {
  EXPECT_EQ(TerminalSafe("line 1\nline\t2\x07", 100, /*keep_newlines=*/true),
            "line 1\nline\t2\\x07");
  // "é" is two bytes: a cut never leaves half of it.
  EXPECT_EQ(TerminalSafe("ab\xc3\xa9"
                         "cdef",
                         6),
            "ab...");
  EXPECT_EQ(TerminalSafe("ab\xc3\xa9", 6), "ab\xc3\xa9");
  EXPECT_EQ(TerminalSafe("a\xc3\xa9"
                         "bcdef",
                         6),
            "a\xc3\xa9...");
}

// Names stored before the coordinator refused them still show escaped:
// C1 controls and bidirectional controls as \uXXXX, stray bytes as \xNN.
TEST(TerminalSafeTest, C1BidiAndInvalidUtf8Escaped) {
  EXPECT_EQ(TerminalSafe("a\xc2\x85"
                         "b\xc2\x9b"
                         "2J",
                         100),
            "a\\u0085b\\u009b2J");
  EXPECT_EQ(TerminalSafe("inv\xe2\x80\xaegpj", 100), "inv\\u202egpj");
  EXPECT_EQ(TerminalSafe("x\xffy", 100), "x\\xffy");
  EXPECT_EQ(TerminalSafe("\xc3\xa9t\xc3\xa9 \xe4\xb8\xad", 100),
            "\xc3\xa9t\xc3\xa9 \xe4\xb8\xad");
}

TEST(JsonTest, QuoteEscapes) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

TEST(JsonTest, NumbersRoundTripAndNonFinite) {
  EXPECT_EQ(JsonNumber(0.1), "0.1");
  EXPECT_EQ(JsonNumber(3), "3");
  EXPECT_EQ(JsonNumber(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(JsonNumber(std::nan("")), "\"NaN\"");
}

TEST(JsonTest, MessageToJson_Int64AsNumbersEnumsByNameAllFields) {
  StepMetrics m = Metric(1, 12345678901, 0.5, 0.25, 1);
  m.set_param_hash(18446744073709551615ull);
  const std::string json = MessageToJson(m);
  EXPECT_THAT(json, HasSubstr("\"step\":12345678901"));
  EXPECT_THAT(json, HasSubstr("\"paramHash\":18446744073709551615"));
  EXPECT_THAT(json, HasSubstr("\"mode\":\"SYNC_MODE_RING\""));
  EXPECT_THAT(json, HasSubstr("\"testAccuracy\":0"));  // defaults printed
  // And it parses back as protobuf JSON.
  StepMetrics back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &back).ok());
  EXPECT_EQ(back.step(), 12345678901);
  EXPECT_EQ(back.param_hash(), 18446744073709551615ull);
}

TEST(JsonTest, NestedAndRepeatedMessages) {
  JobStatus job;
  job.set_job_id("j-1");
  job.set_state(JOB_STATE_RUNNING);
  job.mutable_spec()->mutable_model()->add_layer_sizes(784);
  job.mutable_spec()->mutable_model()->add_layer_sizes(10);
  RankPlacement* rank = job.add_ranks();
  rank->set_rank(0);
  rank->mutable_device()->set_kind("cpu");
  const std::string json = MessageToJson(job);
  EXPECT_THAT(json, StartsWith("{\"jobId\":\"j-1\",\"spec\":{"));
  EXPECT_THAT(json, HasSubstr("\"layerSizes\":[784,10]"));
  EXPECT_THAT(json, HasSubstr("\"ranks\":[{\"rank\":0,"));
  EXPECT_THAT(json, HasSubstr("\"device\":{\"kind\":\"cpu\",\"index\":0}"));
  JobStatus back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &back).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equivalent(job, back))
      << json;
}

TEST(JsonTest, StatusToJson) {
  EXPECT_EQ(StatusToJson(absl::NotFoundError("no job \"x\"")),
            "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no job "
            "\\\"x\\\"\"}}");
}

TEST(MetricsFormatTest, CsvHasAHeaderAndOneRowPerMetric) {
  google::protobuf::RepeatedPtrField<StepMetrics> raw;
  *raw.Add() = Metric(1, 0, 0.5, 0.25, 1);
  *raw.Add() = Metric(0, 1, 0.5, 0.25, 1);
  *raw.Add() = Metric(0, 0, 0.5, 0.25, 1);
  const std::string csv = MetricsToCsv(SortedMetrics(raw));
  std::istringstream lines(csv);
  std::string header, first, second, third;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  std::getline(lines, third);
  EXPECT_EQ(header,
            "rank,step,loss,compute_s,comm_s,idle_s,step_s,bytes_sent,"
            "bytes_received,samples,param_hash,mode,test_accuracy,wall_time,"
            "switch_epoch,switch_s,sync_bytes,sync_busy_s,algbw_gbps,"
            "busbw_gbps,checkpoint,ps_transport");
  EXPECT_EQ(first,
            "0,0,1,0.5,0.25,0.25,1,1024,2048,32,0,SYNC_MODE_RING,0,0,0,0,0,0,"
            "0,0,,");
  EXPECT_THAT(second, StartsWith("1,0,"));
  EXPECT_THAT(third, StartsWith("0,1,0.5,"));
}

TEST(MetricsFormatTest, JsonHoldsTheJobAndEveryMetric) {
  google::protobuf::RepeatedPtrField<ps::ShardStats> shards;
  shards.Add()->set_bytes_in(int64_t{1} << 40);
  const std::string json =
      MetricsToJson("j-7", {Metric(0, 0, 0.5, 0.25, 1)}, shards);
  EXPECT_THAT(json, StartsWith("{\"jobId\":\"j-7\",\"metrics\":[{\"rank\":0,"));
  EXPECT_THAT(json, HasSubstr("\"shards\":[{\"jobId\":\"\",\"shard\":0,"));
  EXPECT_THAT(json, HasSubstr("\"bytesIn\":1099511627776,"));
  GetMetricsResponse back;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // jobId
  ASSERT_TRUE(
      google::protobuf::util::JsonStringToMessage(json, &back, options).ok());
  ASSERT_EQ(back.metrics_size(), 1);
  EXPECT_DOUBLE_EQ(back.metrics(0).comm_s(), 0.25);
  ASSERT_EQ(back.shards_size(), 1);
  EXPECT_EQ(back.shards(0).bytes_in(), int64_t{1} << 40);
}

ps::ShardStats ShardCounters(int shard) {
  ps::ShardStats s;
  s.set_job_id("j-1");
  s.set_shard(shard);
  s.set_begin(shard * 100);
  s.set_end(shard * 100 + 100);
  s.set_mode(ps::UPDATE_MODE_SYNC);
  s.set_pushes(8);
  s.set_pulls(8);
  s.set_updates(4);
  s.set_bytes_in(4096);
  s.set_bytes_out(2048);
  s.set_wait_last_worker_s(0.0125);
  s.set_apply_s(0.002);
  s.set_queue_depth(1);
  s.set_max_queue_depth(2);
  s.add_rank_steps(4);  // repeated: left out of CSV and the table
  return s;
}

TEST(MetricsFormatTest, ShardCountersAsCsvAndTable) {
  google::protobuf::RepeatedPtrField<ps::ShardStats> shards;
  *shards.Add() = ShardCounters(0);
  *shards.Add() = ShardCounters(1);
  std::istringstream csv(ShardsToCsv(shards));
  std::string header, first, second;
  std::getline(csv, header);
  std::getline(csv, first);
  std::getline(csv, second);
  EXPECT_THAT(header, StartsWith("job_id,shard,begin,end,mode,version,"
                                 "bytes_in,bytes_out,pushes,pulls,updates,"
                                 "wait_last_worker_s"));
  EXPECT_THAT(header, Not(HasSubstr("rank_steps")));
  EXPECT_THAT(first, StartsWith("j-1,0,0,100,UPDATE_MODE_SYNC,0,4096,2048,8,"
                                "8,4,0.0125,"));
  EXPECT_THAT(second, StartsWith("j-1,1,100,200,"));
  const std::string table = FormatShardTable(shards);
  EXPECT_THAT(table, StartsWith("SHARD  ELEMENTS  PUSHES  PULLS  UPDATES  "
                                "BYTES_IN  BYTES_OUT  WAIT_LAST_MS"));
  EXPECT_THAT(table, HasSubstr("\n1      100       8       8      4        "
                               "4.00 KiB  2.00 KiB   12.50"));
  EXPECT_THAT(table, HasSubstr("1/2\n"));
}

TEST(JobFormatTest, JobsTable) {
  ListJobsResponse jobs;
  JobStatus* job = jobs.add_jobs();
  job->set_job_id("j-1");
  job->mutable_spec()->set_name("fmnist");
  job->mutable_spec()->set_num_workers(2);
  job->mutable_spec()->set_steps(100);
  job->set_state(JOB_STATE_RUNNING);
  job->set_step(37);
  job->set_start_time(1000);
  const std::string table = FormatJobsTable(jobs, 1012);
  EXPECT_THAT(table, StartsWith("JOB  NAME    STATE    MODE  WORKERS  STEP"));
  EXPECT_THAT(table, HasSubstr("j-1  fmnist  RUNNING  ring  2        38/100"));
  EXPECT_THAT(table, HasSubstr("12 s"));
  EXPECT_EQ(FormatJobsTable(ListJobsResponse(), 0), "no jobs\n");
}

TEST(JobFormatTest, JobDetailHasThePlacement) {
  JobStatus job;
  job.set_job_id("j-2");
  job.set_state(JOB_STATE_FAILED);
  job.set_message("worker w-2 lost");
  for (int r = 0; r < 2; ++r) {
    RankPlacement* rank = job.add_ranks();
    rank->set_rank(r);
    rank->set_worker_id(absl::StrCat("w-", r + 1));
    rank->set_host("node");
    rank->mutable_device()->set_kind("cpu");
    rank->mutable_device()->set_index(r);
  }
  const std::string detail = FormatJobDetail(job, 0);
  EXPECT_THAT(detail, HasSubstr("state:     FAILED\n"));
  EXPECT_THAT(detail, HasSubstr("message:   worker w-2 lost\n"));
  EXPECT_THAT(detail, HasSubstr("RANK  WORKER  HOST  DEVICE\n"
                                "0     w-1     node  cpu:0\n"
                                "1     w-2     node  cpu:1\n"));
}

TEST(JobFormatTest, JobDetailHasModeShardsAndSwitches) {
  JobStatus job;
  job.set_job_id("j-3");
  job.set_state(JOB_STATE_RUNNING);
  job.mutable_spec()->set_mode(SYNC_MODE_PS);
  job.mutable_spec()->mutable_ps()->set_shards(2);
  job.mutable_spec()->mutable_ps()->set_sync("ssp");
  job.mutable_spec()->mutable_ps()->set_staleness(3);
  SwitchSpec* scripted = job.mutable_spec()->add_switches();
  scripted->set_step(50);
  scripted->set_mode(SYNC_MODE_RING);
  job.set_mode(SYNC_MODE_RING);
  job.add_ps_addresses("127.0.0.1:7001");
  job.add_ps_addresses("127.0.0.1:7002");
  job.set_switch_requests(1);
  SwitchRecord* first = job.add_switches();
  first->set_step(20);
  first->set_from_mode(SYNC_MODE_PS);
  first->set_to_mode(SYNC_MODE_RING);
  first->set_epoch(1);
  first->set_move_s(0.0123);
  SwitchRecord* second = job.add_switches();
  second->set_step(50);
  second->set_from_mode(SYNC_MODE_PS);
  second->set_to_mode(SYNC_MODE_RING);
  job.add_ranks()->set_worker_id("w-1");
  job.mutable_spec()->mutable_checkpoint()->set_directory("/ckpt");
  job.mutable_spec()->mutable_checkpoint()->set_every_steps(30);
  job.mutable_spec()->mutable_checkpoint()->set_resume_from(
      "/ckpt/step-30.ckpt");
  job.set_last_checkpoint("/ckpt/step-60.ckpt");
  job.set_last_checkpoint_steps(60);
  job.set_first_step(30);
  job.set_step(61);
  job.mutable_spec()->set_steps(100);
  job.set_restart_of("j-2");
  job.set_restarted_as("j-4");
  job.mutable_spec()->set_max_restarts(1);
  const std::string detail = FormatJobDetail(job, 0);
  EXPECT_THAT(detail, HasSubstr("mode:      ring\n"));
  EXPECT_THAT(detail, HasSubstr("steps:     62 of 100 done (from step 30)\n"));
  EXPECT_THAT(detail,
              HasSubstr("ckpt:      /ckpt, every 30 steps and at the end\n"
                        "saved:     /ckpt/step-60.ckpt (60 steps done)\n"
                        "resumed:   from /ckpt/step-30.ckpt\n"
                        "restarts:  j-2 (1 more allowed)\n"
                        "restarted: as j-4\n"));
  EXPECT_THAT(detail, HasSubstr("ps:        2 shards, ssp (staleness 3)\n"));
  EXPECT_THAT(detail,
              HasSubstr("ps shards: 0=127.0.0.1:7001 1=127.0.0.1:7002\n"));
  EXPECT_THAT(detail, HasSubstr("scripted:  ring from step 50\n"));
  EXPECT_THAT(detail, HasSubstr("requests:  1 runtime switch request "));
  EXPECT_THAT(detail, HasSubstr("switches:\n"
                                "STEP  FROM  TO    BY         MOVE_MS\n"
                                "20    ps    ring  request 1  12.30\n"
                                "50    ps    ring  scripted   0.00\n"));
  // A ring job shows none of it but its mode.
  JobStatus ring;
  ring.set_mode(SYNC_MODE_RING);
  const std::string plain = FormatJobDetail(ring, 0);
  EXPECT_THAT(plain, HasSubstr("mode:      ring\n"));
  EXPECT_THAT(plain, Not(HasSubstr("\nps")));
  EXPECT_THAT(plain, Not(HasSubstr("switches")));
  EXPECT_THAT(plain, Not(HasSubstr("ckpt")));
  EXPECT_THAT(plain, Not(HasSubstr("resumed")));
  EXPECT_THAT(plain, Not(HasSubstr("from step")));
}

// The ring line: the transport, and the all-reduce algorithm when the
// spec forces one (JobSpec.ring_algorithm other than "auto").
TEST(JobFormatTest, JobDetailRingLine_ShowsAForcedAlgorithm) {
  JobStatus job;
  job.set_mode(SYNC_MODE_RING);
  EXPECT_THAT(FormatJobDetail(job, 0), HasSubstr("ring:      tcp (auto)\n"));
  job.mutable_spec()->set_ring_algorithm("auto");
  EXPECT_THAT(FormatJobDetail(job, 0), HasSubstr("ring:      tcp (auto)\n"));
  job.mutable_spec()->set_ring_algorithm("hierarchical");
  EXPECT_THAT(FormatJobDetail(job, 0),
              HasSubstr("ring:      tcp (auto), algorithm hierarchical\n"));
  job.mutable_spec()->set_ring_backend("tcp");
  job.mutable_spec()->set_ring_algorithm("ring");
  EXPECT_THAT(FormatJobDetail(job, 0),
              HasSubstr("ring:      tcp, algorithm ring\n"));
  JobStatus nccl;
  nccl.mutable_spec()->set_device("cuda");
  nccl.mutable_spec()->mutable_model()->set_kind("mlp");
  nccl.mutable_spec()->set_ring_algorithm("auto");
  EXPECT_THAT(FormatJobDetail(nccl, 0), HasSubstr("ring:      nccl (auto)\n"));
}

TEST(JobFormatTest, WorkersTableListsParameterServers) {
  ListWorkersResponse workers;
  ParameterServerInfo* ps = workers.add_parameter_servers();
  ps->set_ps_id("ps-1");
  ps->set_host("node");
  ps->set_address("127.0.0.1:7001");
  ps->set_shards(3);
  ps->add_job_ids("j-1");
  ps->add_job_ids("j-2");
  ps->set_last_heartbeat(99);
  ParameterServerInfo* lost = workers.add_parameter_servers();
  lost->set_ps_id("ps-2");
  lost->set_lost(true);
  const std::string table = FormatWorkersTable(workers, 100);
  EXPECT_THAT(table, StartsWith("no workers registered"));
  EXPECT_THAT(table, HasSubstr("\nparameter servers:\n"
                               "ID    HOST  ADDRESS         STATE  SHARDS  "
                               "JOBS     HEARTBEAT\n"
                               "ps-1  node  127.0.0.1:7001  LIVE   3       "
                               "j-1,j-2  1.0 s ago\n"
                               "ps-2                        LOST   0       "
                               "-        -\n"));
}

TEST(JobFormatTest, WorkersTable) {
  ListWorkersResponse workers;
  WorkerInfo* w = workers.add_workers();
  w->set_worker_id("w-1");
  w->set_host("node");
  w->set_address("127.0.0.1");
  for (int i = 0; i < 3; ++i) {
    Device* d = w->add_devices();
    d->set_kind("cpu");
    d->set_index(i);
  }
  w->set_state(WORKER_STATE_BUSY);
  w->set_free_devices(1);
  w->add_job_ids("j-1");
  w->set_last_heartbeat(99.5);
  const std::string table = FormatWorkersTable(workers, 100);
  EXPECT_THAT(table,
              StartsWith("ID   HOST  ADDRESS    DEVICES    STATE  FREE"));
  EXPECT_THAT(table,
              HasSubstr("w-1  node  127.0.0.1  cpu:0,1,2  BUSY   1     j-1   "
                        "0.5 s ago"));
  EXPECT_THAT(FormatWorkersTable(ListWorkersResponse(), 0),
              HasSubstr("no workers registered"));
}

TEST(UnitsTest, Human) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(64.0 * 1024 * 1024), "64.0 MiB");
  EXPECT_EQ(FormatElapsed(3.25), "3.2 s");
  EXPECT_EQ(FormatElapsed(185), "3 min 5 s");
  EXPECT_EQ(FormatElapsed(7800), "2 h 10 min");
  EXPECT_EQ(FormatPercent(0.2345), "23.4%");
}

TEST(FormatLogLineTest, TimeHostRankText_TerminalSafe) {
  JobLogLine line;
  line.set_time_unix_ms(1795766531041);  // 2026-11-27 08:02:11.041 UTC
  line.set_host("node-a");
  line.set_rank(2);
  line.set_text("rank 2: failed \x1b[31mred\x1b[0m");
  EXPECT_EQ(FormatLogLine(line),
            "2026-11-27 08:02:11.041  node-a  rank 2  rank 2: failed "
            "\\x1b[31mred\\x1b[0m");
  line.set_rank(-1);
  line.set_text("starting ranks [0, 1]");
  EXPECT_EQ(FormatLogLine(line),
            "2026-11-27 08:02:11.041  node-a  rank -  starting ranks [0, 1]");
}

}  // namespace
}  // namespace control
}  // namespace cli
}  // namespace gradsync
