// The link-probe kind's spec (models/link_probe/link_probe_spec.h): the rounds
// load every host's link once per direction per round and cover exactly the
// pairs asked for; the checks fill the defaults and refuse what a probe
// cannot do, naming the field. The rounds with parameter servers load
// each rank and each server once per round.
#include "models/link_probe/link_probe_spec.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

JobSpec Probe(int ranks) {
  JobSpec spec;
  spec.mutable_model()->set_kind(std::string(kLinkProbeModelKind));
  spec.set_num_workers(ranks);
  return spec;
}

TEST(LinkProbeRoundsTest, Ring_OneRoundOfEachRankToTheNext) {
  const auto rounds = LinkProbeRounds(4, LinkProbePairs::kRing);
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds[0],
            (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
}

TEST(LinkProbeRoundsTest, All_EveryOrderedPairOnce_EachRankOnceARoundEachWay) {
  for (int n = 2; n <= 7; ++n) {
    const auto rounds = LinkProbeRounds(n, LinkProbePairs::kAll);
    ASSERT_EQ(static_cast<int>(rounds.size()), n - 1) << n;
    std::set<std::pair<int, int>> seen;
    for (const auto& round : rounds) {
      std::map<int, int> sends, receives;
      for (const auto& [from, to] : round) {
        EXPECT_NE(from, to);
        EXPECT_TRUE(seen.insert({from, to}).second) << from << "->" << to;
        EXPECT_EQ(++sends[from], 1);
        EXPECT_EQ(++receives[to], 1);
      }
    }
    EXPECT_EQ(static_cast<int>(seen.size()), n * (n - 1));
  }
}

TEST(LinkProbeRoundsTest, TwoRanks_OnePairEachWay_AndNoneForOne) {
  EXPECT_EQ(LinkProbeRounds(2, LinkProbePairs::kRing)[0],
            (std::vector<std::pair<int, int>>{{0, 1}, {1, 0}}));
  EXPECT_TRUE(LinkProbeRounds(1, LinkProbePairs::kAll).empty());
}

// Rank and server each once per round; ring: each server once, by rank
// s % ranks; all: every (rank, server) once.
void ExpectPsRounds(int ranks, int servers, LinkProbePairs pairs) {
  const auto rounds = PsProbeRounds(ranks, servers, pairs);
  std::set<std::pair<int, int>> seen;
  for (const auto& round : rounds) {
    EXPECT_FALSE(round.empty());
    std::map<int, int> by_rank, by_server;
    for (const auto& [rank, server] : round) {
      ASSERT_GE(rank, 0);
      ASSERT_LT(rank, ranks);
      ASSERT_GE(server, 0);
      ASSERT_LT(server, servers);
      EXPECT_EQ(++by_rank[rank], 1) << ranks << "x" << servers;
      EXPECT_EQ(++by_server[server], 1) << ranks << "x" << servers;
      EXPECT_TRUE(seen.insert({rank, server}).second);
    }
  }
  if (pairs == LinkProbePairs::kAll) {
    EXPECT_EQ(static_cast<int>(seen.size()), ranks * servers);
    EXPECT_EQ(static_cast<int>(rounds.size()), std::max(ranks, servers));
  } else {
    EXPECT_EQ(static_cast<int>(seen.size()), servers);
    for (const auto& [rank, server] : seen) EXPECT_EQ(rank, server % ranks);
    EXPECT_EQ(static_cast<int>(rounds.size()), (servers + ranks - 1) / ranks);
  }
}

TEST(PsProbeRoundsTest, EachRankAndServerOnceARound_CoveringThePairs) {
  for (int ranks = 1; ranks <= 5; ++ranks) {
    for (int servers = 1; servers <= 6; ++servers) {
      ExpectPsRounds(ranks, servers, LinkProbePairs::kRing);
      ExpectPsRounds(ranks, servers, LinkProbePairs::kAll);
    }
  }
  EXPECT_TRUE(PsProbeRounds(3, 0, LinkProbePairs::kAll).empty());
  EXPECT_EQ(PsProbeRounds(2, 3, LinkProbePairs::kRing),
            (std::vector<std::vector<std::pair<int, int>>>{{{0, 0}, {1, 1}},
                                                           {{0, 2}}}));
}

TEST(LinkProbeSpecTest, Defaults) {
  JobSpec out = Probe(3);
  ASSERT_TRUE(ValidateLinkProbe(Probe(3), &out).ok());
  EXPECT_EQ(out.model().link_probe().pairs(), "ring");
  EXPECT_EQ(out.model().link_probe().stream_bytes(), kDefaultProbeStreamBytes);
  EXPECT_EQ(out.model().link_probe().round_trips(), kDefaultProbeRoundTrips);
}

TEST(LinkProbeSpecTest, Refusals_NameTheField) {
  struct Case {
    void (*edit)(JobSpec*);
    const char* field;
  };
  const Case cases[] = {
      {[](JobSpec* s) { s->set_num_workers(1); }, "numWorkers"},
      {[](JobSpec* s) { s->mutable_model()->add_layer_sizes(4); },
       "model.kind"},
      {[](JobSpec* s) { s->set_steps(10); }, "model.kind"},
      {[](JobSpec* s) { s->set_mode(SYNC_MODE_PS); }, "mode"},
      {[](JobSpec* s) { s->mutable_auto_mode()->set_enabled(true); }, "mode"},
      {[](JobSpec* s) { s->set_max_restarts(1); }, "maxRestarts"},
      {[](JobSpec* s) { s->set_grad_dtype("bf16"); }, "gradDtype"},
      {[](JobSpec* s) {
         s->mutable_model()->mutable_link_probe()->set_pairs("star");
       },
       "model.linkProbe.pairs"},
      {[](JobSpec* s) {
         s->mutable_model()->mutable_link_probe()->set_stream_bytes(1000);
       },
       "model.linkProbe.streamBytes"},
      {[](JobSpec* s) {
         s->mutable_model()->mutable_link_probe()->set_round_trips(-1);
       },
       "model.linkProbe.roundTrips"},
  };
  for (const Case& c : cases) {
    JobSpec spec = Probe(3);
    c.edit(&spec);
    JobSpec out = spec;
    const absl::Status s = ValidateLinkProbe(spec, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(s.message(), HasSubstr(c.field));
  }
}

}  // namespace
}  // namespace gradsync
