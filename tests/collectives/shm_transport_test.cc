// The CPU collectives over the shared-memory transport (TcpOptions::
// transport): exact results through the ring and halving-doubling with
// every pair on shared memory, and with a mix of shared-memory and TCP
// pairs (host identities overridden); and its failures: mismatched calls,
// deadlines, a peer that aborts and a peer process that is killed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "collectives/file_store.h"
#include "common/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectives/kill_one_rank.h"
#include "tests/collectives/rank_group.h"

namespace gradsync::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

// Counts the pairs of each transport that rendezvous chose, on all ranks.
class TransportLog {
 public:
  void Add(absl::string_view transport) {
    absl::MutexLock lock(&mu_);
    (transport == "shm" ? shm_ : tcp_)++;
  }
  int shm() {
    absl::MutexLock lock(&mu_);
    return shm_;
  }
  int tcp() {
    absl::MutexLock lock(&mu_);
    return tcp_;
  }

 private:
  absl::Mutex mu_;
  int shm_ ABSL_GUARDED_BY(mu_) = 0;
  int tcp_ ABSL_GUARDED_BY(mu_) = 0;
};

TcpOptions ShmOptions(TransportLog* log,
                      Transport transport = Transport::kShm) {
  TcpOptions o = SmallPipelineOptions();
  o.transport = transport;
  // A small ring, so that the data wraps and the writer waits often.
  o.shm_ring_bytes = 8192;
  o.on_transport = [log](int, absl::string_view t) { log->Add(t); };
  return o;
}

std::vector<size_t> Counts(int n) {
  // 0, 1, < N, odd, large.
  std::vector<size_t> c = {0, 1, size_t(n) + 1, 20011};
  if (n > 1) c.push_back(static_cast<size_t>(n - 1));
  return c;
}

// fp32 sum of verifiable integers on every rank, in place and out of
// place: exact and bitwise equal on every rank.
void ExpectExactSums(RankGroup& group, ReduceOp op = ReduceOp::kSum) {
  const int n = group.size();
  for (size_t count : Counts(n)) {
    for (bool in_place : {false, true}) {
      std::vector<std::vector<float>> in(n), out(n);
      auto status = group.Run([&](int r) {
        in[r].resize(count);
        out[r].resize(count);
        FillInput(DataType::kFloat32, r, in[r].data(), count);
        float* src = in_place ? out[r].data() : in[r].data();
        if (in_place) out[r] = in[r];
        return group.comm(r).AllReduce(src, out[r].data(), count,
                                       DataType::kFloat32, op);
      });
      SCOPED_TRACE(::testing::Message()
                   << "count " << count << (in_place ? " in-place" : ""));
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
      }
      for (size_t i = 0; i < count; ++i) {
        float want;
        ExpectedReduction(DataType::kFloat32, op, n, i, &want);
        ASSERT_EQ(want, out[0][i]) << "at index " << i;
      }
      for (int r = 1; r < n; ++r) {
        ASSERT_EQ(
            0, std::memcmp(out[0].data(), out[r].data(), count * sizeof(float)))
            << "rank " << r << " differs from rank 0";
      }
    }
  }
}

using ShmParam = std::tuple<int, AllReduceAlgorithm>;
class ShmAllReduceTest : public ::testing::TestWithParam<ShmParam> {};

TEST_P(ShmAllReduceTest, AllPairsShm_ExactAndIdentical) {
  const auto [n, algo] = GetParam();
  TransportLog log;
  TcpOptions o = ShmOptions(&log);
  o.algorithm = algo;
  RankGroup group(n, o);
  EXPECT_EQ(log.shm(), n * (n - 1));
  EXPECT_EQ(log.tcp(), 0);
  ExpectExactSums(group);
  ExpectExactSums(group, ReduceOp::kAvg);
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, ShmAllReduceTest,
    ::testing::Combine(
        ::testing::Values(1, 2, 3, 4, 5, 8),
        ::testing::Values(AllReduceAlgorithm::kRing,
                          AllReduceAlgorithm::kHalvingDoubling)));

// Ranks 0-1 on "host-a", 2-4 on "host-b": pairs within a host use shared
// memory, pairs across hosts TCP, and every step's transport differs.
TEST(ShmMixedTest, TwoPretendHosts_MixedPairsExact) {
  for (auto algo :
       {AllReduceAlgorithm::kRing, AllReduceAlgorithm::kHalvingDoubling}) {
    TransportLog log;
    RankGroup group(5, [&](int r) {
      TcpOptions o = ShmOptions(&log, Transport::kAuto);
      o.algorithm = algo;
      o.host_id = r < 2 ? "host-a" : "host-b";
      return o;
    });
    EXPECT_EQ(log.shm(), 2 * 1 + 3 * 2);  // ordered pairs within hosts
    EXPECT_EQ(log.tcp(), 2 * 2 * 3);      // ordered pairs across
    ExpectExactSums(group);
  }
}

TEST(ShmMixedTest, OtherCollectives_ExactOverMixedPairs) {
  TransportLog log;
  RankGroup group(4, [&](int r) {
    TcpOptions o = ShmOptions(&log, Transport::kAuto);
    o.host_id = r % 2 == 0 ? "even" : "odd";
    return o;
  });
  const size_t block = 1001;
  std::vector<std::vector<float>> rs(4), ag(4), bc(4);
  auto status = group.Run([&](int r) -> absl::Status {
    std::vector<float> in(block * 4);
    FillInput(DataType::kFloat32, r, in.data(), in.size());
    rs[r].resize(block);
    RETURN_IF_ERROR(group.comm(r).ReduceScatter(
        in.data(), rs[r].data(), block, DataType::kFloat32, ReduceOp::kSum));
    ag[r].resize(block * 4);
    RETURN_IF_ERROR(group.comm(r).AllGather(rs[r].data(), ag[r].data(), block,
                                            DataType::kFloat32));
    bc[r] = in;
    return group.comm(r).Broadcast(bc[r].data(), bc[r].data(), bc[r].size(),
                                   DataType::kFloat32, 3);
  });
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
    for (size_t i = 0; i < block * 4; ++i) {
      float want;
      ExpectedReduction(DataType::kFloat32, ReduceOp::kSum, 4, i, &want);
      ASSERT_EQ(want, ag[r][i]) << "rank " << r << " at index " << i;
      ASSERT_EQ(InputValue(3, i), bc[r][i]) << "rank " << r << " at " << i;
    }
  }
}

TEST(ShmRendezvousTest, TransportTcp_NoSharedMemory) {
  TransportLog log;
  RankGroup group(3, ShmOptions(&log, Transport::kTcp));
  EXPECT_EQ(log.shm(), 0);
  EXPECT_EQ(log.tcp(), 6);
  ExpectExactSums(group);
}

TEST(ShmRendezvousTest, ShmAskedAcrossHosts_FailsNamingThePeer) {
  MemoryStore store;
  TransportLog log;
  absl::Status s[2];
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      TcpOptions o = ShmOptions(&log);
      o.host_id = absl::StrCat("host-", r);
      s[r] = CreateTcpCommunicator(&store, r, 2, o).status();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(absl::IsFailedPrecondition(s[r])) << s[r];
    EXPECT_THAT(std::string(s[r].message()),
                HasSubstr(absl::StrCat("rank ", 1 - r, " is on another host")));
  }
}

TcpOptions ShortShmOptions(TransportLog* log) {
  TcpOptions o = ShmOptions(log);
  o.connect_timeout = absl::Seconds(5);
  o.timeout = absl::Seconds(2);
  return o;
}

TEST(ShmCollectiveTest, MismatchedCounts_FailNamingBothRanks) {
  TransportLog log;
  RankGroup group(2, ShortShmOptions(&log));
  auto status = group.Run([&](int r) {
    std::vector<float> buf(100 + r, 1.0f);
    return group.comm(r).AllReduce(buf.data(), buf.data(), buf.size(),
                                   DataType::kFloat32, ReduceOp::kSum);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(absl::IsFailedPrecondition(status[r])) << status[r];
    EXPECT_THAT(std::string(status[r].message()),
                HasSubstr("element count differs"));
    EXPECT_THAT(std::string(status[r].message()),
                ContainsRegex("rank [01] called allreduce #1 \\(10[01] x"));
  }
}

TEST(ShmCollectiveTest, PeerNeverCalls_DeadlineNamesRankAndSequence) {
  TransportLog log;
  RankGroup group(2, ShortShmOptions(&log));
  float v = 1;
  const absl::Time start = absl::Now();
  absl::Status s =
      group.comm(0).AllReduce(&v, &v, 1, DataType::kFloat32, ReduceOp::kSum);
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank 1"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("allreduce #1"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

// A rank that aborts (its thread stops taking part) ends the others' wait
// at once, not at their deadline.
TEST(ShmCollectiveTest, PeerAborts_OthersFailPromptlyNamingIt) {
  TransportLog log;
  TcpOptions o = ShmOptions(&log);
  o.timeout = absl::Seconds(60);
  RankGroup group(3, o);
  const absl::Time start = absl::Now();
  auto status = group.Run([&](int r) {
    if (r == 2) {
      absl::SleepFor(absl::Milliseconds(200));
      group.comm(r).Abort(absl::CancelledError("test stops rank 2"));
      return absl::OkStatus();
    }
    std::vector<float> buf(1 << 16, 1.0f);
    return group.comm(r).AllReduce(buf.data(), buf.data(), buf.size(),
                                   DataType::kFloat32, ReduceOp::kSum);
  });
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  int named = 0;
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(status[r].ok()) << "rank " << r;
    if (absl::StrContains(status[r].message(), "rank 2")) ++named;
  }
  EXPECT_GE(named, 1) << status[0] << " / " << status[1];
}

// Ranks as processes (fork) over a FileStore, all pairs on shared memory;
// rank 2 is SIGKILLed in the middle of a stream of all-reduces. Every
// survivor must fail well inside the collective timeout, naming rank 2.
TEST(ShmProcessTest, RankKilledMidCollective_SurvivorsNameIt) {
  constexpr int kRanks = 4;
  constexpr int kVictim = 2;
  const absl::Duration timeout = absl::Seconds(30);
  TcpOptions o;
  o.job_id = "shm-kill-test";
  o.transport = Transport::kShm;
  o.timeout = timeout;
  const KillOneRankRun run = KillOneRankMidStream(o, kRanks, kVictim);
  ASSERT_EQ(run.hung_rank, -1)
      << "rank " << run.hung_rank << " hung after the peer died";
  for (int r = 0; r < kRanks; ++r) {
    if (r == kVictim) continue;
    const int status = run.status[r];
    const std::string& error = run.error[r];
    ASSERT_TRUE(WIFEXITED(status)) << "rank " << r;
    ASSERT_EQ(0, WEXITSTATUS(status)) << "rank " << r << ": " << error;
    EXPECT_THAT(error, ContainsRegex("rank(\\(s\\))? ([0-9]+, )*2[^0-9]"))
        << "rank " << r;
    EXPECT_THAT(error, ContainsRegex("allreduce #[0-9]+")) << "rank " << r;
  }
  EXPECT_LT(run.elapsed, timeout / 2);
}

}  // namespace
}  // namespace gradsync::testing
