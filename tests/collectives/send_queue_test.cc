#include "collectives/send_queue.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

// A transport that takes `inline_bytes` at once, then writes the rest on
// the sender thread once `open` is notified (or fails it with `failure`).
class FakeTransport {
 public:
  explicit FakeTransport(size_t inline_bytes) : inline_bytes_(inline_bytes) {}

  SendQueue::Transport Make() {
    return SendQueue::Transport{
        [this](const char* data, size_t len) -> absl::StatusOr<size_t> {
          const size_t n = std::min(len, inline_bytes_);
          absl::MutexLock lock(&mu_);
          written_.append(data, n);
          return n;
        },
        [this](const char* data, size_t len, absl::Time deadline) {
          if (!open_.WaitForNotificationWithDeadline(deadline)) {
            return absl::DeadlineExceededError("the peer took nothing");
          }
          if (!failure_.ok()) return failure_;
          absl::MutexLock lock(&mu_);
          written_.append(data, len);
          return absl::OkStatus();
        },
        [](const absl::Status& s) {
          return absl::Status(s.code(),
                              absl::StrCat("sending to rank 7: ", s.message()));
        }};
  }
  void Open(absl::Status failure = absl::OkStatus()) {
    failure_ = failure;
    open_.Notify();
  }
  std::string written() {
    absl::MutexLock lock(&mu_);
    return written_;
  }

 private:
  const size_t inline_bytes_;
  absl::Notification open_;
  absl::Status failure_;
  absl::Mutex mu_;
  std::string written_ ABSL_GUARDED_BY(mu_);
};

constexpr char kTimeout[] = "timed out sending to rank 7";

TEST(SendQueueTest, InlineThenQueuedInOrder) {
  FakeTransport transport(4);
  SendQueue queue(transport.Make(), kTimeout);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  const std::string a = "abc", b = "defghij", c = "kl";
  EXPECT_EQ(queue.Send(a.data(), a.size(), deadline), 1u);  // all inline
  EXPECT_THAT(queue.WaitSent(1, deadline), IsOk());
  const uint64_t tb = queue.Send(b.data(), b.size(), deadline);  // 4 + 3
  const uint64_t tc = queue.Send(c.data(), c.size(), deadline);  // queued
  EXPECT_EQ(queue.LastTicket(), tc);
  EXPECT_THAT(queue.WaitSent(tb, absl::Now() + absl::Milliseconds(50)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, kTimeout));
  transport.Open();
  EXPECT_THAT(queue.WaitSent(tc, deadline), IsOk());
  EXPECT_EQ(transport.written(), "abcdefghijkl");
}

TEST(SendQueueTest, AFailedWriteFailsEveryLaterSendNamed) {
  FakeTransport transport(0);
  SendQueue queue(transport.Make(), kTimeout);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  const std::string a = "abc";
  const uint64_t t1 = queue.Send(a.data(), a.size(), deadline);
  transport.Open(absl::UnavailableError("connection reset"));
  EXPECT_THAT(queue.WaitSent(t1, deadline),
              StatusIs(absl::StatusCode::kUnavailable,
                       "sending to rank 7: connection reset"));
  const uint64_t t2 = queue.Send(a.data(), a.size(), deadline);
  EXPECT_THAT(
      queue.WaitSent(t2, deadline),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("connection reset")));
  EXPECT_EQ(transport.written(), "");
}

TEST(SendQueueTest, FailDropsTheQueueAndStopEndsABlockedWrite) {
  FakeTransport transport(0);
  SendQueue queue(transport.Make(), kTimeout);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  const std::string a = "abc";
  const uint64_t t1 = queue.Send(a.data(), a.size(), deadline);  // writing
  const uint64_t t2 = queue.Send(a.data(), a.size(), deadline);  // queued
  queue.Fail(absl::AbortedError("shut down"));
  EXPECT_THAT(queue.WaitSent(t2, deadline),
              StatusIs(absl::StatusCode::kAborted, "shut down"));
  EXPECT_THAT(queue.WaitSent(t1, deadline),
              StatusIs(absl::StatusCode::kAborted, "shut down"));
  const absl::Time start = absl::Now();
  queue.Stop([&transport] { transport.Open(); });
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace gradsync
