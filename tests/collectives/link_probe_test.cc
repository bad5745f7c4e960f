// The link probe's measurement (collectives/transports/tcp/link_probe.h)
// between ranks on real TCP connections the ring's rendezvous authenticated:
// every link asked for is measured once, with a goodput and round trips; the
// two directions of a pair do not mix (two ranks); a rank whose spec
// differs is refused with both sides named; a rank that stops fails its
// peers at once, not at their deadlines.
#include "collectives/transports/tcp/link_probe.h"

#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collectives/memory_store.h"
#include "collectives/prefix_store.h"
#include "collectives/tcp/tcp_communicator.h"
#include "collectives/transports/tcp/rendezvous.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/link_probe/link_probe_spec.h"

namespace gradsync::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

struct Rank {
  std::vector<Socket> initiate, respond;
};

// Connects `n` ranks twice through `store`, as the runner does.
std::vector<Rank> Connect(MemoryStore* store, int n) {
  std::vector<std::vector<Socket>> sets[2];
  for (int set = 0; set < 2; ++set) {
    sets[set].resize(n);
    std::vector<std::thread> threads;
    std::vector<absl::Status> status(n);
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        TcpOptions o;
        o.job_id = absl::StrCat("job-1/1/link-probe-", set);
        o.job_secret = "secret";
        o.connect_timeout = absl::Seconds(10);
        PrefixStore prefixed(store, absl::StrCat("set", set, "/"));
        absl::StatusOr<std::vector<Socket>> s =
            ConnectAllPeers(&prefixed, r, n, o);
        status[r] = s.status();
        if (s.ok()) sets[set][r] = *std::move(s);
      });
    }
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < n; ++r) EXPECT_TRUE(status[r].ok()) << status[r];
  }
  std::vector<Rank> ranks(n);
  for (int r = 0; r < n; ++r) {
    ranks[r].initiate.resize(n);
    ranks[r].respond.resize(n);
    for (int p = 0; p < n; ++p) {
      if (p == r || sets[0][r].empty()) continue;
      ranks[r].initiate[p] = std::move(sets[p > r ? 0 : 1][r][p]);
      ranks[r].respond[p] = std::move(sets[p > r ? 1 : 0][r][p]);
    }
  }
  return ranks;
}

struct Outcome {
  std::vector<absl::StatusOr<std::vector<MeasuredLink>>> links;
  absl::Duration took;
};

Outcome Measure(
    int n, LinkProbePairs pairs,
    const std::function<void(int, LinkProbeConfig*)>& edit = nullptr) {
  MemoryStore store;
  std::vector<Rank> ranks = Connect(&store, n);
  std::vector<std::unique_ptr<std::atomic<bool>>> aborts;
  for (int r = 0; r < n; ++r) {
    aborts.push_back(std::make_unique<std::atomic<bool>>(false));
  }
  Outcome out;
  out.links.resize(n, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      LinkProbeConfig c;
      c.rank = r;
      c.size = n;
      c.rounds = LinkProbeRounds(n, pairs);
      c.stream_bytes = 2 << 20;
      c.round_trips = 5;
      c.timeout = absl::Seconds(20);
      if (edit) edit(r, &c);
      out.links[r] = MeasureLinks(
          c, ranks[r].initiate, ranks[r].respond,
          [&](absl::string_view name, absl::Time deadline) {
            return StoreBarrier(&store, name, r, n, deadline);
          },
          aborts[r].get());
      ranks[r] = Rank{};  // closed, as a rank's runner does when it ends
    });
  }
  for (std::thread& t : threads) t.join();
  out.took = absl::Now() - start;
  return out;
}

TEST(LinkProbeTest, Ring_EachRankMeasuresTheNext) {
  Outcome out = Measure(3, LinkProbePairs::kRing);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(out.links[r].ok()) << r << ": " << out.links[r].status();
    ASSERT_EQ(out.links[r]->size(), 1u);
    const MeasuredLink& link = (*out.links[r])[0];
    EXPECT_EQ(link.from, r);
    EXPECT_EQ(link.to, (r + 1) % 3);
    EXPECT_GT(link.goodput_Bps, 0);
    EXPECT_EQ(link.stream_bytes, 2 << 20);
    EXPECT_EQ(link.round_trips, 5);
    EXPECT_GT(link.rtt_median_us, 0);
    EXPECT_LE(link.rtt_min_us, link.rtt_median_us);
  }
}

TEST(LinkProbeTest, All_EveryOrderedPairOnce) {
  Outcome out = Measure(4, LinkProbePairs::kAll);
  std::set<std::pair<int, int>> seen;
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(out.links[r].ok()) << r << ": " << out.links[r].status();
    ASSERT_EQ(out.links[r]->size(), 3u);
    for (const MeasuredLink& link : *out.links[r]) {
      EXPECT_EQ(link.from, r);
      EXPECT_TRUE(seen.insert({link.from, link.to}).second);
      EXPECT_GT(link.goodput_Bps, 0);
    }
  }
  EXPECT_EQ(seen.size(), 12u);
}

TEST(LinkProbeTest, TwoRanks_BothDirectionsAtOnceOnTheirOwnConnections) {
  Outcome out = Measure(2, LinkProbePairs::kRing);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(out.links[r].ok()) << r << ": " << out.links[r].status();
    ASSERT_EQ(out.links[r]->size(), 1u);
    EXPECT_EQ((*out.links[r])[0].to, 1 - r);
  }
}

TEST(LinkProbeTest, ASpecThatDiffers_IsRefusedNamingTheCaller) {
  Outcome out =
      Measure(3, LinkProbePairs::kRing, [](int r, LinkProbeConfig* c) {
        if (r == 1) c->stream_bytes = 4 << 20;
      });
  // Rank 2 answers rank 1's head and refuses it.
  ASSERT_FALSE(out.links[2].ok());
  EXPECT_EQ(out.links[2].status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(out.links[2].status().message(), HasSubstr("rank 1"));
  EXPECT_FALSE(out.links[1].ok());
  EXPECT_LT(out.took, absl::Seconds(15));  // not the 20 s deadline
}

TEST(LinkProbeTest, ARankThatStops_FailsItsPeersAtOnce) {
  Outcome out =
      Measure(3, LinkProbePairs::kRing, [](int r, LinkProbeConfig* c) {
        if (r == 0) c->rounds.clear();  // runs nothing and closes its sockets
      });
  EXPECT_TRUE(out.links[0].ok());
  // Rank 1 answers rank 0 and names it; rank 2 fails as rank 1 aborts
  // (or on rank 0 itself).
  ASSERT_FALSE(out.links[1].ok());
  EXPECT_THAT(std::string(out.links[1].status().message()),
              HasSubstr("with rank 0"));
  ASSERT_FALSE(out.links[2].ok());
  EXPECT_THAT(std::string(out.links[2].status().message()),
              AnyOf(HasSubstr("rank 0"), HasSubstr("rank 1")));
  EXPECT_LT(out.took, absl::Seconds(15));
}

}  // namespace
}  // namespace gradsync::testing
