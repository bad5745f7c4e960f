#include "cli/bench/bench_options.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "cli/bench/ps_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BenchUsageTest, ListsNcclTestsLettersWithTheirLongNames) {
  BenchParse parse;
  const std::string help = FlagsHelp(BenchFlags(&parse));
  EXPECT_THAT(help, HasSubstr("-b, --minbytes SIZE"));
  EXPECT_THAT(help, HasSubstr("-r, --root RANK"));
  EXPECT_THAT(help, HasSubstr("--ps-shards K"));
  EXPECT_THAT(help, HasSubstr("--rank R"));
  EXPECT_THAT(BenchUsage(),
              HasSubstr("Exit status: 0 every element right, 1 wrong "
                        "elements or an error, 2 a bad\nflag or value."));
}

TEST(SweepSizesTest, FactorSweepIncludesBothEnds) {
  EXPECT_THAT(SweepSizes(1024, 8192, 2, 0),
              ElementsAre(1024, 2048, 4096, 8192));
  EXPECT_THAT(SweepSizes(1024, 5000, 2, 0), ElementsAre(1024, 2048, 4096));
  EXPECT_THAT(SweepSizes(1, 64, 4, 0), ElementsAre(1, 4, 16, 64));
  EXPECT_THAT(SweepSizes(100, 100, 2, 0), ElementsAre(100));
}

TEST(SweepSizesTest, IncrementSweep) {
  EXPECT_THAT(SweepSizes(1024, 3072, 2, 1024), ElementsAre(1024, 2048, 3072));
  EXPECT_THAT(SweepSizes(0, 10, 0, 4), ElementsAre(0, 4, 8));
}

TEST(SweepSizesTest, NeverLoopsForever) {
  EXPECT_TRUE(SweepSizes(0, 10, 2, 0).empty());
  EXPECT_TRUE(SweepSizes(1, 10, 1, 0).empty());
  const size_t max = ~size_t{0};
  EXPECT_EQ(SweepSizes(max / 2 + 1, max, 2, 0).size(), 1u);
}

TEST(ParseBenchArgsTest, Defaults) {
  absl::StatusOr<BenchOptions> o = ParseBenchArgs({"allreduce"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->collective, Collective::kAllReduce);
  EXPECT_EQ(o->min_bytes, size_t{1} << 20);
  EXPECT_EQ(o->max_bytes, size_t{64} << 20);
  EXPECT_EQ(o->factor, 2);
  EXPECT_EQ(o->increment, 0u);
  EXPECT_EQ(o->iters, 20);
  EXPECT_EQ(o->warmup, 5);
  EXPECT_TRUE(o->check);
  EXPECT_EQ(o->op, ReduceOp::kSum);
  EXPECT_EQ(o->type, DataType::kFloat32);
  EXPECT_EQ(o->backend, Backend::kRing);
  EXPECT_EQ(o->algorithm, "auto");
  EXPECT_EQ(o->ranks, 2);
  EXPECT_FALSE(o->member());
  EXPECT_FALSE(o->json);
}

TEST(ParseBenchArgsTest, NcclTestsFlags) {
  absl::StatusOr<BenchOptions> o = ParseBenchArgs(
      {"reducescatter", "-b", "1K", "-e", "256K", "-f", "4", "-n", "3", "-w",
       "0", "-c", "0", "-o", "max", "-d", "double"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->collective, Collective::kReduceScatter);
  EXPECT_EQ(o->min_bytes, 1024u);
  EXPECT_EQ(o->max_bytes, 256u * 1024);
  EXPECT_EQ(o->factor, 4);
  EXPECT_EQ(o->iters, 3);
  EXPECT_EQ(o->warmup, 0);
  EXPECT_FALSE(o->check);
  EXPECT_EQ(o->op, ReduceOp::kMax);
  EXPECT_EQ(o->type, DataType::kFloat64);
}

TEST(ParseBenchArgsTest, GluedAndEqualsValuesAndLongNames) {
  absl::StatusOr<BenchOptions> o = ParseBenchArgs(
      {"-n5", "--warmup_iters=2", "broadcast", "--root", "1", "--ranks=4",
       "-dint32", "--json", "-i", "1M", "--minbytes", "1M", "--maxbytes=4M"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->collective, Collective::kBroadcast);
  EXPECT_EQ(o->iters, 5);
  EXPECT_EQ(o->warmup, 2);
  EXPECT_EQ(o->root, 1);
  EXPECT_EQ(o->ranks, 4);
  EXPECT_EQ(o->type, DataType::kInt32);
  EXPECT_TRUE(o->json);
  EXPECT_EQ(o->increment, size_t{1} << 20);
}

TEST(ParseBenchArgsTest, RingKnobs) {
  absl::StatusOr<BenchOptions> o = ParseBenchArgs(
      {"allreduce", "--algo", "hd", "--segment-bytes", "512K", "--hd-threshold",
       "64K", "--sub-block-bytes", "128K", "--socket-buffer", "4M",
       "--spin-polls", "0", "--tcp-congestion", "reno", "--timeout", "5",
       "--deadline", "2m"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->algorithm, "hd");
  EXPECT_EQ(*o->segment_bytes, 512u * 1024);
  EXPECT_EQ(*o->hd_threshold_bytes, 64u * 1024);
  EXPECT_EQ(*o->sub_block_bytes, 128u * 1024);
  EXPECT_EQ(*o->socket_buffer_bytes, 4u << 20);
  ASSERT_TRUE(o->spin_polls.has_value());
  EXPECT_EQ(*o->spin_polls, 0);
  EXPECT_EQ(o->congestion_control, "reno");
  EXPECT_EQ(o->timeout, absl::Seconds(5));
  EXPECT_EQ(o->deadline, absl::Minutes(2));
}

TEST(ParseBenchArgsTest, MemberMode) {
  absl::StatusOr<BenchOptions> o = ParseBenchArgs(
      {"allgather", "--world", "4", "--rank", "3", "--store", "host:29500",
       "--listen-host", "10.0.0.2", "--job", "j1"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->member());
  EXPECT_EQ(o->world, 4);
  EXPECT_EQ(o->rank, 3);
  EXPECT_EQ(o->store, "host:29500");
  EXPECT_EQ(o->listen_host, "10.0.0.2");
  EXPECT_EQ(o->job, "j1");
}

TEST(ParseBenchArgsTest, HelpNeedsNoCollective) {
  absl::StatusOr<BenchOptions> o = ParseBenchArgs({"--help"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->help);
  EXPECT_THAT(BenchUsage(), HasSubstr("usage: gradsync bench allreduce|"));
}

struct BadArgs {
  std::vector<std::string> args;
  const char* message;
};

// Each command line fails with INVALID_ARGUMENT saying its message.
void ExpectRefused(absl::Span<const BadArgs> cases) {
  for (const BadArgs& c : cases) {
    absl::StatusOr<BenchOptions> o = ParseBenchArgs(c.args);
    ASSERT_FALSE(o.ok()) << "accepted: " << ::testing::PrintToString(c.args);
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(o.status().message()), HasSubstr(c.message))
        << ::testing::PrintToString(c.args);
  }
}

TEST(ParseBenchArgsTest, BadCommandLines_ReturnInvalidArgumentNamingTheFlag) {
  const BadArgs cases[] = {
      {{}, "name a collective"},
      {{"allreduce", "extra"}, "unexpected argument 'extra'"},
      {{"alltoall"}, "unknown collective"},
      {{"allreduce", "--bogus"}, "unknown flag '--bogus'"},
      {{"allreduce", "-b"}, "-b needs a value"},
      {{"allreduce", "-b", "1X"}, "--minbytes: "},
      {{"allreduce", "-b", "2M", "-e", "1M"}, "larger than -e"},
      {{"allreduce", "-f", "3", "-i", "1M"}, "use one"},
      {{"allreduce", "-f", "1"}, "--stepfactor wants an integer >= 2"},
      {{"allreduce", "-i", "0"}, "--stepbytes wants a size >= 1"},
      {{"allreduce", "-b", "0"}, "-b 0 never grows"},
      {{"allreduce", "-n", "0"}, "--iters wants an integer >= 1"},
      {{"allreduce", "-c", "2"}, "--check wants 0 or 1"},
      {{"allreduce", "-o", "prod"}, "unknown reduction"},
      {{"allreduce", "-d", "fp8"}, "unknown data type"},
      {{"allreduce", "--json=1"}, "takes no value"},
      {{"allreduce", "--backend", "mpi"}, "unknown backend"},
      {{"allreduce", "--backend", "nccl", "--algo", "hd"}, "NCCL picks"},
      {{"allreduce", "--rank", "0"}, "needs --world"},
      {{"allreduce", "--rank", "2", "--world", "2", "--store", "h:1"},
       "needs --world N with N > rank"},
      {{"allreduce", "--rank", "0", "--world", "2"}, "needs --store"},
      {{"allreduce", "--world", "2"}, "--world needs --rank"},
      {{"allreduce", "--ranks", "2", "--rank", "0", "--world", "2", "--store",
        "h:1"},
       "use one"},
      {{"broadcast", "--ranks", "2", "-r", "2"}, "not a rank of 2"},
      {{"allreduce", "--ranks", "2000"}, "run with -c 0"},
      {{"allreduce", "--timeout", "-1"}, "--timeout wants a positive"},
      {{"allreduce", "--ranks", "0"}, "--ranks wants an integer >= 1"},
      {{"allreduce", "--ranks", "4", "--host-layout", "3+2"},
       "places 5 ranks, but the run has 4"},
      {{"allreduce", "--ranks", "2", "--host-layout", "2+0"},
       "--host-layout wants an integer >= 1"},
      {{"allreduce", "--backend", "ps", "--host-layout", "2"},
       "use --backend ring"},
  };
  ExpectRefused(cases);
}

// A fixed environment for ParseBenchArgs.
EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](
             absl::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ParseBenchArgsTest, RankAndWorldFromTheLauncher) {
  const std::vector<std::string> args = {"allreduce", "--store", "h:1"};
  struct Case {
    std::map<std::string, std::string> env;
    int rank, world;
  };
  const std::vector<Case> cases = {
      {{{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}}, 2, 4},
      {{{"RANK", "1"}, {"WORLD_SIZE", "3"}}, 1, 3},
      {{{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}}, 3, 8},
      // The explicit RANK/WORLD_SIZE first (torchrun started by srun: its
      // children still carry the node's SLURM_PROCID), then mpirun's (it
      // inherits the batch step's), then srun's.
      {{{"OMPI_COMM_WORLD_RANK", "3"},
        {"OMPI_COMM_WORLD_SIZE", "8"},
        {"SLURM_PROCID", "0"},
        {"SLURM_NTASKS", "2"},
        {"RANK", "1"},
        {"WORLD_SIZE", "2"}},
       1,
       2},
      {{{"SLURM_PROCID", "1"},
        {"SLURM_NTASKS", "2"},
        {"RANK", "7"},
        {"WORLD_SIZE", "16"}},
       7,
       16},
      {{{"OMPI_COMM_WORLD_RANK", "3"},
        {"OMPI_COMM_WORLD_SIZE", "8"},
        {"SLURM_PROCID", "0"},
        {"SLURM_NTASKS", "1"}},
       3,
       8},
      // A launcher with half its pair is skipped.
      {{{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"RANK", "0"}}, 5, 6},
      {{{"SLURM_PROCID", "1"}, {"RANK", "0"}, {"WORLD_SIZE", "2"}}, 0, 2},
      {{{"OMPI_COMM_WORLD_SIZE", "4"},
        {"SLURM_PROCID", "1"},
        {"SLURM_NTASKS", "2"}},
       1,
       2},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    absl::StatusOr<BenchOptions> o = ParseBenchArgs(args, Env(c.env));
    ASSERT_TRUE(o.ok()) << o.status() << " in case " << i;
    EXPECT_TRUE(o->member()) << "in case " << i;
    EXPECT_EQ(o->rank, c.rank) << "in case " << i;
    EXPECT_EQ(o->world, c.world) << "in case " << i;
  }
}

// Flags > the explicit RANK/WORLD_SIZE > the schedulers' variables, for
// --rank and --world each: a flag given alone takes its other half from
// the environment's first complete pair.
TEST(ParseBenchArgsTest, Precedence_FlagsThenExplicitEnvThenScheduler) {
  const EnvLookup all = Env({{"RANK", "1"},
                             {"WORLD_SIZE", "4"},
                             {"OMPI_COMM_WORLD_RANK", "2"},
                             {"OMPI_COMM_WORLD_SIZE", "5"},
                             {"SLURM_PROCID", "3"},
                             {"SLURM_NTASKS", "6"}});
  struct Case {
    std::vector<std::string> flags;
    int rank, world;
  };
  const std::vector<Case> cases = {
      {{}, 1, 4},
      {{"--rank", "0"}, 0, 4},
      {{"--world", "9"}, 1, 9},
      {{"--rank", "8", "--world", "9"}, 8, 9},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"allreduce", "--store", "h:1"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    absl::StatusOr<BenchOptions> o = ParseBenchArgs(args, all);
    ASSERT_TRUE(o.ok()) << o.status() << " with "
                        << absl::StrJoin(c.flags, " ");
    EXPECT_EQ(o->rank, c.rank) << "with " << absl::StrJoin(c.flags, " ");
    EXPECT_EQ(o->world, c.world) << "with " << absl::StrJoin(c.flags, " ");
  }
}

TEST(ParseBenchArgsTest, FlagsWinOverTheLauncherAndNoStoreStaysLocal) {
  const EnvLookup slurm = Env({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}});
  absl::StatusOr<BenchOptions> o = ParseBenchArgs(
      {"allreduce", "--rank", "1", "--world", "3", "--store", "h:1"}, slurm);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->rank, 1);
  EXPECT_EQ(o->world, 3);
  o = ParseBenchArgs({"allreduce", "--world", "8", "--store", "h:1"}, slurm);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->rank, 2);
  EXPECT_EQ(o->world, 8);
  // A local launch inside an allocation stays local.
  o = ParseBenchArgs({"allreduce", "--ranks", "3"}, slurm);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->member());
  EXPECT_EQ(o->ranks, 3);
}

TEST(ParseBenchArgsTest, BadLauncherValues_InvalidArgumentNamingTheVariable) {
  const std::vector<std::string> args = {"allreduce", "--store", "h:1"};
  absl::StatusOr<BenchOptions> o =
      ParseBenchArgs(args, Env({{"RANK", "x"}, {"WORLD_SIZE", "2"}}));
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(o.status().message(), HasSubstr("$RANK"));
  o = ParseBenchArgs(args, Env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "0"}}));
  EXPECT_THAT(o.status().message(), HasSubstr("$SLURM_NTASKS"));
  o = ParseBenchArgs(args, Env({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}));
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(o.status().message(),
            "rank 4 ($SLURM_PROCID) must be below the world size, 4 "
            "($SLURM_NTASKS)");
  // The flag's value against the environment's.
  o = ParseBenchArgs({"allreduce", "--store", "h:1", "--rank", "5"},
                     Env({{"RANK", "0"}, {"WORLD_SIZE", "2"}}));
  EXPECT_EQ(o.status().message(),
            "rank 5 (--rank) must be below the world size, 2 ($WORLD_SIZE)");
  struct Case {
    std::map<std::string, std::string> env;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{{"OMPI_COMM_WORLD_RANK", "-1"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
       "$OMPI_COMM_WORLD_RANK wants an integer >= 0, got '-1'"},
      {{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2x"}},
       "$SLURM_NTASKS wants an integer >= 1, got '2x'"},
      {{{"RANK", ""}, {"WORLD_SIZE", "2"}},
       "$RANK wants an integer >= 0, got ''"},
      // A malformed explicit pair is an error, not a reason to fall back to
      // the scheduler's.
      {{{"RANK", "one"},
        {"WORLD_SIZE", "2"},
        {"SLURM_PROCID", "0"},
        {"SLURM_NTASKS", "2"}},
       "$RANK wants an integer >= 0, got 'one'"},
  };
  for (const Case& c : cases) {
    o = ParseBenchArgs(args, Env(c.env));
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument)
        << c.message;
    EXPECT_EQ(o.status().message(), c.message);
  }
  // No launcher at all: --store alone asks for --rank and --world.
  o = ParseBenchArgs(args, Env({}));
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(o.status().message(), HasSubstr("srun, mpirun or torchrun"));
}

// The local launcher marks its ranks (they then exit
// kExitLaunchedRankWrongResults for wrong elements); nobody else is.
TEST(ParseBenchArgsTest, LaunchedOnlyWithTheLaunchersMarkAndAStore) {
  const std::vector<std::string> rank = {
      "allreduce", "--rank", "0", "--world", "2", "--store", "h:1"};
  absl::StatusOr<BenchOptions> o =
      ParseBenchArgs(rank, Env({{"GRADSYNC_BENCH_LAUNCHED", "1"}}));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->launched);
  o = ParseBenchArgs(rank, Env({}));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->launched);
  o = ParseBenchArgs(rank);  // no environment at all
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->launched);
  o = ParseBenchArgs({"allreduce"}, Env({{"GRADSYNC_BENCH_LAUNCHED", "1"}}));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->launched);  // a launcher itself
}

TEST(ParseBenchArgsTest, HostLayout) {
  auto o = ParseBenchArgs({"allreduce", "--ranks", "4", "--algo",
                           "hierarchical", "--host-layout", "2+1+1"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->algorithm, "hierarchical");
  EXPECT_EQ(o->host_layout, (std::vector<int>{2, 1, 1}));
}

TEST(StripFlagTest, RemovesBothSpellingsAndTheirValues) {
  EXPECT_THAT(StripFlag({"allreduce", "--ranks", "3", "-n", "2", "--ranks=4",
                         "--ranksx"},
                        "--ranks"),
              ElementsAre("allreduce", "-n", "2", "--ranksx"));
  EXPECT_THAT(StripFlag({"--ranks"}, "--ranks"), ElementsAre());
}

TEST(BackendTest, Names) {
  EXPECT_EQ(*ParseBackend("ring"), Backend::kRing);
  EXPECT_EQ(*ParseBackend("TCP"), Backend::kRing);
  EXPECT_EQ(*ParseBackend("nccl"), Backend::kNccl);
  EXPECT_EQ(BackendName(Backend::kNccl), "nccl");
  EXPECT_EQ(*ParseBackend("PS"), Backend::kPs);
  EXPECT_EQ(BackendName(Backend::kPs), "ps");
}

TEST(PsOptionsTest, ShardsAddressesAndChunk) {
  absl::StatusOr<BenchOptions> o = ParseBenchArgs(
      {"allreduce", "--backend", "ps", "--ps-shards", "3", "--ps-addresses",
       "10.0.0.5:29600,ps-b:29601", "--ps-chunk", "64K", "-b", "12"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->backend, Backend::kPs);
  EXPECT_EQ(PsShardCount(*o), 3);
  EXPECT_THAT(PsShardAddresses(*o),
              ElementsAre("10.0.0.5:29600", "ps-b:29601", "10.0.0.5:29600"));
  EXPECT_EQ(o->ps_chunk_bytes, size_t{64} << 10);
}

TEST(PsOptionsTest, ShardCountDefaultsToOneOrOnePerAddress) {
  absl::StatusOr<BenchOptions> local =
      ParseBenchArgs({"allreduce", "--backend", "ps"});
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(PsShardCount(*local), 1);
  EXPECT_TRUE(PsShardAddresses(*local).empty());  // the launcher starts one
  absl::StatusOr<BenchOptions> remote = ParseBenchArgs(
      {"allreduce", "--backend", "ps", "--ps-addresses", "a:1,b:2", "--rank",
       "0", "--world", "2", "--store", "h:1"});
  ASSERT_TRUE(remote.ok()) << remote.status();
  EXPECT_EQ(PsShardCount(*remote), 2);
  EXPECT_THAT(PsShardAddresses(*remote), ElementsAre("a:1", "b:2"));
}

TEST(PsOptionsTest, BadCommandLines_ReturnInvalidArgumentNamingTheFlag) {
  const BadArgs cases[] = {
      {{"allreduce", "--backend", "ps", "--ps-shards", "0"},
       "--ps-shards wants an integer >= 1"},
      {{"allreduce", "--backend", "ps", "--ps-shards", "two"},
       "--ps-shards wants an integer >= 1"},
      {{"allreduce", "--ps-shards", "2"}, "need --backend ps"},
      {{"allreduce", "--backend", "ring", "--ps-addresses", "h:1"},
       "need --backend ps"},
      {{"allreduce", "--backend", "ps", "--ps-addresses", "h"},
       "entry 'h' is not host:port"},
      {{"allreduce", "--backend", "ps", "--ps-addresses", "h:0"},
       "entry 'h:0' is not host:port"},
      {{"allreduce", "--backend", "ps", "--ps-addresses", "h:1,,g:2"},
       "entry '' is not host:port"},
      {{"reducescatter", "--backend", "ps"}, "allreduce only"},
      {{"allreduce", "--backend", "ps", "-d", "double"}, "sums fp32"},
      {{"allreduce", "--backend", "ps", "-o", "max"}, "sums fp32"},
      {{"allreduce", "--backend", "ps", "--algo", "ring"}, "has none"},
      {{"allreduce", "--backend", "ps", "--rank", "0", "--world", "1",
        "--store", "h:1"},
       "needs --ps-addresses"},
      {{"allreduce", "--backend", "ps", "--ps-shards", "4", "-b", "12"},
       "-b 12 holds 3 floats, fewer than the 4 PS shards"},
      {{"allreduce", "--backend", "ps", "--ps-chunk", "2"}, "--ps-chunk"},
      {{"allreduce", "--backend", "ps", "--ps-chunk", "128M"}, "--ps-chunk"},
  };
  ExpectRefused(cases);
}

}  // namespace
}  // namespace bench
}  // namespace cli
}  // namespace gradsync
