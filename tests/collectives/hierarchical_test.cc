// Exact tests of the hierarchical all-reduce (collectives/algorithms/
// hierarchical_communicator.h, made over TCP communicators by
// collectives/tcp/host_aware_communicator.h), ranks as threads over a
// MemoryStore that pretend to live on several hosts
// (HierarchicalOptions::host_id): host layouts x element counts, checked
// against a naive reduction, against the flat ring's result, and for
// identical bits on every rank.
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/half.h"
#include "collectives/host_placement.h"
#include "collectives/subgroup_store.h"
#include "collectives/tcp/host_aware_communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectives/rank_group.h"

namespace gradsync::testing {
namespace {

using ::testing::HasSubstr;

// A host layout: host name of each rank.
struct Layout {
  std::string name;
  std::vector<std::string> hosts;
};

std::vector<Layout> Layouts() {
  return {
      {"3plus1", {"a", "a", "a", "b"}},
      {"2plus2interleaved", {"a", "b", "a", "b"}},
      {"2plus1plus1", {"a", "a", "b", "c"}},
      {"1plus2plus1", {"a", "b", "b", "c"}},
      {"1plus1plus1plus1", {"a", "b", "c", "d"}},
      {"4onOneHost", {"a", "a", "a", "a"}},
      {"3plus2", {"a", "b", "a", "b", "a"}},
  };
}

HierarchicalOptions Options(const std::string& host, AllReduceAlgorithm algo) {
  HierarchicalOptions o;
  o.tcp = SmallPipelineOptions();
  o.tcp.algorithm = algo;
  o.host_id = host;
  // kAuto: all-reduces of 16 floats or more run hierarchically, so that
  // the counts below exercise both of its paths.
  o.min_bytes = 64;
  return o;
}

// Ranks as threads, each with the host identity of `hosts`.
class HostGroup {
 public:
  HostGroup(const std::vector<std::string>& hosts, AllReduceAlgorithm algo) {
    const int n = static_cast<int>(hosts.size());
    comms_.resize(n);
    std::vector<absl::Status> status(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        auto c =
            CreateHostAwareCommunicator(&store_, r, n, Options(hosts[r], algo));
        if (c.ok()) {
          comms_[r] = *std::move(c);
        } else {
          status[r] = c.status();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
    }
  }
  int size() const { return static_cast<int>(comms_.size()); }
  Communicator& comm(int rank) { return *comms_[rank]; }
  MemoryStore& store() { return store_; }
  // Destroys rank `rank`'s communicator, closing its connections.
  void Drop(int rank) { comms_[rank].reset(); }
  std::vector<absl::Status> Run(const std::function<absl::Status(int)>& fn) {
    std::vector<absl::Status> status(size());
    std::vector<std::thread> threads;
    for (int r = 0; r < size(); ++r) {
      threads.emplace_back([&, r] { status[r] = fn(r); });
    }
    for (auto& t : threads) t.join();
    return status;
  }

 private:
  MemoryStore store_;
  std::vector<std::unique_ptr<Communicator>> comms_;
};

// Every rank's output of an all-reduce of the verifiable inputs.
template <typename Group>
std::vector<std::string> AllReduceOutputs(Group& group, size_t count,
                                          DataType type, ReduceOp op,
                                          bool in_place) {
  const int n = group.size();
  const size_t es = DataTypeSize(type);
  std::vector<std::string> in(n), out(n);
  auto status = group.Run([&](int r) {
    in[r] = std::string(count * es, '\0');
    out[r] = std::string(count * es, '\0');
    FillInput(type, r, in[r].data(), count);
    if (in_place) {
      out[r] = in[r];
      return group.comm(r).AllReduce(out[r].data(), out[r].data(), count, type,
                                     op);
    }
    return group.comm(r).AllReduce(in[r].data(), out[r].data(), count, type,
                                   op);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
  }
  return out;
}

// Exact against the naive reduction, and the same bits on every rank.
void ExpectExact(DataType type, ReduceOp op,
                 const std::vector<std::string>& out, size_t count) {
  const size_t es = DataTypeSize(type);
  const int n = static_cast<int>(out.size());
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    ExpectedReduction(type, op, n, i, &want);
    float got = 0;
    std::memcpy(&got, out[0].data() + i * es, es);
    ASSERT_EQ(want, got) << "at index " << i << " (count " << count << ")";
  }
  for (int r = 1; r < n; ++r) {
    ASSERT_EQ(out[0], out[r]) << "rank " << r << " differs from rank 0";
  }
}

using LayoutParam = std::tuple<Layout, AllReduceAlgorithm>;
class HierarchicalAllReduceTest : public ::testing::TestWithParam<LayoutParam> {
};

TEST_P(HierarchicalAllReduceTest, ExactIdenticalAndEqualToFlatRing) {
  const auto& [layout, algo] = GetParam();
  const int n = static_cast<int>(layout.hosts.size());
  HostGroup group(layout.hosts, algo);
  TcpOptions ring_options = SmallPipelineOptions();
  ring_options.algorithm = AllReduceAlgorithm::kRing;
  RankGroup ring(n, ring_options);
  for (size_t count : {size_t{0}, size_t{1}, size_t(n - 1), size_t{7},
                       size_t(2 * n + 1), size_t{20011}}) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(::testing::Message() << layout.name << " count " << count
                                        << (in_place ? " in-place" : ""));
      const auto got = AllReduceOutputs(group, count, DataType::kFloat32,
                                        ReduceOp::kSum, in_place);
      ExpectExact(DataType::kFloat32, ReduceOp::kSum, got, count);
      const auto flat = AllReduceOutputs(ring, count, DataType::kFloat32,
                                         ReduceOp::kSum, in_place);
      ASSERT_EQ(flat[0], got[0]) << "differs from the flat ring's result";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, HierarchicalAllReduceTest,
    ::testing::Combine(::testing::ValuesIn(Layouts()),
                       ::testing::Values(AllReduceAlgorithm::kHierarchical,
                                         AllReduceAlgorithm::kAuto)),
    [](const ::testing::TestParamInfo<LayoutParam>& info) {
      return absl::StrCat(
          std::get<0>(info.param).name,
          std::get<1>(info.param) == AllReduceAlgorithm::kHierarchical
              ? "_forced"
              : "_auto");
    });

TEST(HierarchicalAllReduceOps, AvgMaxMinAndOtherTypes_Exact) {
  HostGroup group({"a", "a", "a", "b"}, AllReduceAlgorithm::kHierarchical);
  for (DataType type : {DataType::kFloat32, DataType::kInt32}) {
    for (ReduceOp op : {ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
      for (size_t count : {size_t{1}, size_t{5}, size_t{1001}}) {
        SCOPED_TRACE(::testing::Message()
                     << DataTypeName(type) << " " << ReduceOpName(op)
                     << " count " << count);
        const auto got = AllReduceOutputs(group, count, type, op, false);
        // int32 and float are both 4 bytes: compare bits of the exact value.
        const size_t es = DataTypeSize(type);
        for (size_t i = 0; i < count; ++i) {
          char want[8];
          ExpectedReduction(type, op, 4, i, want);
          ASSERT_EQ(std::string(want, es), got[0].substr(i * es, es))
              << "at index " << i;
        }
        for (int r = 1; r < 4; ++r) ASSERT_EQ(got[0], got[r]) << "rank " << r;
      }
    }
  }
}

// 16-bit gradients (collectives/half.h): the verifiable sums over 4 ranks
// hold in bfloat16 and fp16, so the hierarchical result is exact, the same
// bits on every rank, and the flat ring's.
TEST(HierarchicalAllReduceOps, SixteenBitSums_ExactAndEqualToFlatRing) {
  HostGroup group({"a", "a", "b", "b"}, AllReduceAlgorithm::kHierarchical);
  TcpOptions ring_options = SmallPipelineOptions();
  ring_options.algorithm = AllReduceAlgorithm::kRing;
  RankGroup ring(4, ring_options);
  for (DataType type : {DataType::kBFloat16, DataType::kFloat16}) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{20011}}) {
      SCOPED_TRACE(::testing::Message()
                   << DataTypeName(type) << " count " << count);
      const auto got = AllReduceOutputs(group, count, type, ReduceOp::kSum,
                                        /*in_place=*/true);
      for (size_t i = 0; i < count; ++i) {
        uint16_t bits = 0;
        std::memcpy(&bits, got[0].data() + i * 2, 2);
        const float value = type == DataType::kBFloat16 ? BFloat16ToFloat(bits)
                                                        : Float16ToFloat(bits);
        ASSERT_EQ(value, ReducedValue(ReduceOp::kSum, type, 4, i))
            << "at index " << i;
      }
      for (int r = 1; r < 4; ++r) ASSERT_EQ(got[0], got[r]) << "rank " << r;
      const auto flat =
          AllReduceOutputs(ring, count, type, ReduceOp::kSum, true);
      ASSERT_EQ(flat[0], got[0]) << "differs from the flat ring's result";
    }
  }
}

TEST(HierarchicalCommunicator, OtherCollectivesGoThroughTheFlatOne) {
  HostGroup group({"a", "a", "b", "c"}, AllReduceAlgorithm::kHierarchical);
  const size_t block = 5;
  std::vector<std::string> gathered(4), broadcast(4);
  auto status = group.Run([&](int r) -> absl::Status {
    std::string in(block * 4, '\0');
    FillInput(DataType::kInt32, r, in.data(), block);
    gathered[r] = std::string(block * 4 * 4, '\0');
    absl::Status s = group.comm(r).AllGather(in.data(), gathered[r].data(),
                                             block, DataType::kInt32);
    if (!s.ok()) return s;
    broadcast[r] = std::string(block * 4, '\0');
    s = group.comm(r).Broadcast(in.data(), broadcast[r].data(), block,
                                DataType::kInt32, 2);
    if (!s.ok()) return s;
    return group.comm(r).Barrier();
  });
  std::string want_gather(block * 4 * 4, '\0');
  std::string want_broadcast(block * 4, '\0');
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
    FillInput(DataType::kInt32, r, want_gather.data() + r * block * 4, block);
  }
  FillInput(DataType::kInt32, 2, want_broadcast.data(), block);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(want_gather, gathered[r]) << "rank " << r;
    EXPECT_EQ(want_broadcast, broadcast[r]) << "rank " << r;
  }
}

TEST(HierarchicalCommunicator, Auto_OneHostOrOneRankPerHost_BuildsNoInnerOnes) {
  for (const std::vector<std::string>& hosts :
       {std::vector<std::string>{"a", "a", "a"},
        std::vector<std::string>{"a", "b", "c"}}) {
    HostGroup group(hosts, AllReduceAlgorithm::kAuto);
    EXPECT_FALSE(group.store()
                     .Get("hier/intra/0/tcp/addr/0", absl::InfinitePast())
                     .ok());
    EXPECT_FALSE(group.store()
                     .Get("hier/slice/0/tcp/addr/0", absl::InfinitePast())
                     .ok());
  }
}

TEST(HierarchicalCommunicator, Auto_SeveralHostsOfSeveral_BuildsInnerOnes) {
  HostGroup group({"a", "a", "b", "b"}, AllReduceAlgorithm::kAuto);
  // Rank 2 is local rank 0 of host 1 and owns slice 0 there.
  EXPECT_TRUE(
      group.store().Get("hier/intra/1/tcp/addr/2", absl::InfinitePast()).ok());
  EXPECT_TRUE(
      group.store().Get("hier/slice/1/tcp/addr/3", absl::InfinitePast()).ok());
}

TEST(HierarchicalCommunicator, RankGone_OthersFailPromptlyNotHang) {
  HostGroup group({"a", "a", "a", "b"}, AllReduceAlgorithm::kHierarchical);
  group.Drop(3);
  const absl::Time start = absl::Now();
  std::vector<absl::Status> status(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> buf(999, 1.0f);
      status[r] = group.comm(r).AllReduce(buf.data(), buf.data(), buf.size(),
                                          DataType::kFloat32, ReduceOp::kSum);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(status[r].ok()) << "rank " << r;
  }
  // Well before the 20 s collective timeout: the closed connections end
  // it, and each rank's failure aborts its other inner communicators.
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  // A failed communicator stays failed.
  std::vector<float> one(1, 1.0f);
  EXPECT_TRUE(absl::IsAborted(group.comm(0).AllReduce(
      one.data(), one.data(), 1, DataType::kFloat32, ReduceOp::kSum)));
}

TEST(HierarchicalCommunicator, OnPlacement_SaysWhatWasChosen) {
  const struct {
    std::vector<std::string> hosts;
    AllReduceAlgorithm algo;
    std::string want;
  } cases[] = {
      {{"a", "a", "a", "b"},
       AllReduceAlgorithm::kAuto,
       "2 hosts of 3+1 ranks: hierarchical all-reduce from 64 bytes"},
      {{"a", "b", "c"},
       AllReduceAlgorithm::kAuto,
       "3 hosts of 1+1+1 ranks: flat all-reduce"},
      {{"a", "a"},
       AllReduceAlgorithm::kHierarchical,
       "1 host of 2 ranks: hierarchical all-reduce (forced)"},
  };
  for (const auto& c : cases) {
    MemoryStore store;
    const int n = static_cast<int>(c.hosts.size());
    std::vector<std::string> lines(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        HierarchicalOptions o = Options(c.hosts[r], c.algo);
        o.on_placement = [&lines, r](absl::string_view l) {
          lines[r] = std::string(l);
        };
        EXPECT_TRUE(CreateHostAwareCommunicator(&store, r, n, o).ok());
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) {
      EXPECT_THAT(lines[r], HasSubstr(c.want)) << "rank " << r;
    }
  }
}

TEST(HierarchicalCommunicator, MissingRank_DeadlineExceededNamesIt) {
  MemoryStore store;
  std::vector<absl::Status> status(4);
  std::vector<std::thread> threads;
  for (int r : {0, 1, 3}) {
    threads.emplace_back([&, r] {
      HierarchicalOptions o =
          Options(r < 2 ? "a" : "b", AllReduceAlgorithm::kHierarchical);
      o.tcp.connect_timeout = absl::Seconds(1);
      status[r] = CreateHostAwareCommunicator(&store, r, 4, o).status();
    });
  }
  for (auto& t : threads) t.join();
  for (int r : {0, 1, 3}) {
    EXPECT_TRUE(absl::IsDeadlineExceeded(status[r])) << status[r];
    EXPECT_THAT(std::string(status[r].message()),
                HasSubstr("rank(s) 2 never published a host identity"));
  }
}

TEST(HierarchicalCommunicator, RingOrHd_IsThePlainTcpCommunicator) {
  MemoryStore store;
  HierarchicalOptions o = Options("a", AllReduceAlgorithm::kRing);
  auto comm = CreateHostAwareCommunicator(&store, 0, 1, o);
  ASSERT_TRUE(comm.ok()) << comm.status();
  // No host identity exchanged: nothing but the TCP rendezvous ran.
  EXPECT_FALSE(store.Get("hier/host/0", absl::InfinitePast()).ok());
}

TEST(HostPlacementTest, UnevenHosts_EverySliceHasOneOwnerPerHost) {
  HostPlacement p = HostPlacement::FromHostIds({"x", "y", "x", "x", "z"});
  ASSERT_EQ(3, p.hosts());
  EXPECT_EQ((std::vector<int>{0, 2, 3}), p.members(0));
  EXPECT_EQ((std::vector<int>{1}), p.members(1));
  EXPECT_EQ(3, p.slices());
  EXPECT_EQ(1, p.OwnedSlices(2).first);
  EXPECT_EQ(2, p.OwnedSlices(2).last);
  EXPECT_EQ(0, p.OwnedSlices(1).first);
  EXPECT_EQ(3, p.OwnedSlices(1).last);
  EXPECT_EQ((std::vector<int>{3, 1, 4}), p.SliceGroup(2));
  // Two ranks for three slices: 3*0/2 = 0, 3*1/2 = 1, 3*2/2 = 3.
  HostPlacement q = HostPlacement::FromHostIds({"x", "x", "x", "y", "y"});
  EXPECT_EQ(0, q.OwnedSlices(3).first);
  EXPECT_EQ(1, q.OwnedSlices(3).last);
  EXPECT_EQ(1, q.OwnedSlices(4).first);
  EXPECT_EQ(3, q.OwnedSlices(4).last);
  EXPECT_EQ((std::vector<int>{1, 4}), q.SliceGroup(1));
  EXPECT_EQ((std::vector<int>{2, 4}), q.SliceGroup(2));
}

TEST(SubgroupStoreTest, RankKeysEndInTheGlobalRank) {
  MemoryStore base;
  SubgroupStore s(&base, "hier/intra/0", {2, 5});
  EXPECT_EQ("hier/intra/0/tcp/addr/5", s.Key("tcp/addr/1"));
  EXPECT_EQ("hier/intra/0/tcp/addr/7", s.Key("tcp/addr/7"));  // not a rank
  EXPECT_EQ("hier/intra/0/barrier", s.Key("barrier"));
  ASSERT_TRUE(s.Set("tcp/addr/0", "v").ok());
  EXPECT_EQ("v", *base.Get("hier/intra/0/tcp/addr/2", absl::InfinitePast()));
}

}  // namespace
}  // namespace gradsync::testing
