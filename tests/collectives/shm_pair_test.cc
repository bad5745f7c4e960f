// Unit tests of the shared-memory pair (collectives/transports/shm/): both ends
// in one process, so the ring's wrap-around, tickets, deadlines and a closed
// peer can be driven exactly.
#include "collectives/transports/shm/shm_pair.h"

#include <sys/mman.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "collectives/transports/shm/shm_segment.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

struct Ends {
  std::unique_ptr<ShmPair> zero;  // rank 0, the creator
  std::unique_ptr<ShmPair> one;   // rank 1
};

Ends MakeEnds(size_t ring_bytes, const std::atomic<bool>* aborted) {
  auto created = ShmSegment::Create(ring_bytes);
  EXPECT_TRUE(created.ok()) << created.status();
  auto opened = ShmSegment::Open((*created)->name(), (*created)->token());
  EXPECT_TRUE(opened.ok()) << opened.status();
  (*created)->Unlink();
  Ends e;
  e.zero = std::make_unique<ShmPair>(*std::move(created), 0, 1, -1, aborted);
  e.one = std::make_unique<ShmPair>(*std::move(opened), 1, 0, -1, aborted);
  return e;
}

TEST(ShmSegmentTest, Open_WrongToken_Refused) {
  auto created = ShmSegment::Create(4096);
  ASSERT_TRUE(created.ok()) << created.status();
  auto opened =
      ShmSegment::Open((*created)->name(), std::string(kShmTokenBytes, 'x'));
  EXPECT_TRUE(absl::IsFailedPrecondition(opened.status())) << opened.status();
}

TEST(ShmSegmentTest, Unlink_NameIsGoneMappingStays) {
  auto created = ShmSegment::Create(4096);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string name = (*created)->name();
  (*created)->Unlink();
  auto opened = ShmSegment::Open(name, (*created)->token());
  EXPECT_FALSE(opened.ok());
  (*created)->data(0)[0] = 7;  // still mapped
}

TEST(ShmPairTest, StreamLargerThanRing_ArrivesIntactBothWays) {
  std::atomic<bool> aborted{false};
  Ends e = MakeEnds(4096, &aborted);
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  // Odd sizes, so every copy wraps somewhere else.
  std::vector<std::string> msgs;
  for (size_t n : {1, 4095, 4096, 4097, 10007, 100003, 0, 3}) {
    std::string m(n, '\0');
    for (size_t i = 0; i < n; ++i) m[i] = static_cast<char>(i * 7 + n);
    msgs.push_back(m);
  }
  std::thread back([&] {
    for (const std::string& m : msgs) {
      std::string got(m.size(), '\0');
      ASSERT_TRUE(e.one->Recv(got.data(), got.size(), deadline, 100).ok());
      ASSERT_EQ(m, got);
      const uint64_t t = e.one->Send(got.data(), got.size(), deadline);
      ASSERT_TRUE(e.one->WaitSent(t, deadline).ok());
    }
  });
  for (const std::string& m : msgs) {
    const uint64_t t = e.zero->Send(m.data(), m.size(), deadline);
    std::string got(m.size(), '\0');
    ASSERT_TRUE(e.zero->Recv(got.data(), got.size(), deadline, 0).ok());
    ASSERT_TRUE(e.zero->WaitSent(t, deadline).ok());
    ASSERT_EQ(m, got);
  }
  back.join();
  EXPECT_EQ(e.zero->LastTicket(), msgs.size());
}

// RecvPieces lends the ring itself; elements that straddle its end (the
// stream is 4 bytes off after the first message) come as a copy.
TEST(ShmPairTest, RecvPieces_WholeElementsInOrderAcrossTheWrap) {
  std::atomic<bool> aborted{false};
  Ends e = MakeEnds(4096, &aborted);
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  const uint32_t pad = 7;
  std::vector<uint64_t> values(10001);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = i * 0x9e3779b97f4a7c15u;
  std::thread sender([&] {
    e.zero->Send(&pad, sizeof(pad), deadline);
    const uint64_t t = e.zero->Send(values.data(), values.size() * 8, deadline);
    ASSERT_TRUE(e.zero->WaitSent(t, deadline).ok());
  });
  uint32_t got_pad = 0;
  ASSERT_TRUE(e.one->Recv(&got_pad, sizeof(got_pad), deadline, 0).ok());
  EXPECT_EQ(pad, got_pad);
  std::vector<uint64_t> got;
  char scratch[1024];
  absl::Status s =
      e.one->RecvPieces(values.size() * 8, 8, scratch, 1000, deadline, 0,
                        [&](const char* p, size_t bytes) {
                          ASSERT_EQ(bytes % 8, 0u);
                          ASSERT_LE(bytes, 1000u);
                          for (size_t i = 0; i < bytes; i += 8) {
                            uint64_t v;
                            std::memcpy(&v, p + i, 8);
                            got.push_back(v);
                          }
                        });
  sender.join();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(values, got);
}

TEST(ShmPairTest, Recv_NothingSent_DeadlineNamesPeer) {
  std::atomic<bool> aborted{false};
  Ends e = MakeEnds(4096, &aborted);
  char byte;
  const absl::Time start = absl::Now();
  absl::Status s =
      e.zero->Recv(&byte, 1, start + absl::Milliseconds(100), 1000000);
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank 1"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(ShmPairTest, WaitSent_ReaderNeverReads_DeadlineNamesPeer) {
  std::atomic<bool> aborted{false};
  Ends e = MakeEnds(4096, &aborted);
  std::string big(100000, 'x');
  const absl::Time deadline = absl::Now() + absl::Milliseconds(200);
  const uint64_t t = e.zero->Send(big.data(), big.size(), deadline);
  absl::Status s = e.zero->WaitSent(t, deadline);
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank 1"));
}

TEST(ShmPairTest, PeerShutsDown_BlockedRecvFailsPromptlyNamingIt) {
  std::atomic<bool> aborted{false};
  Ends e = MakeEnds(4096, &aborted);
  const absl::Time start = absl::Now();
  std::thread killer([&] {
    absl::SleepFor(absl::Milliseconds(50));
    e.one->Shutdown();
  });
  char byte;
  absl::Status s = e.zero->Recv(&byte, 1, start + absl::Seconds(30), 0);
  killer.join();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank 1"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(ShmPairTest, Abort_WakesBlockedRecv) {
  std::atomic<bool> aborted{false};
  Ends e = MakeEnds(4096, &aborted);
  const absl::Time start = absl::Now();
  std::thread aborter([&] {
    absl::SleepFor(absl::Milliseconds(50));
    aborted = true;
    e.zero->Shutdown();
  });
  char byte;
  absl::Status s = e.zero->Recv(&byte, 1, start + absl::Seconds(30), 0);
  aborter.join();
  EXPECT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace gradsync
