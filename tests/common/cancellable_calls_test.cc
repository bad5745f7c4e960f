// CancellableCalls: CancelAll cancels the registered calls once each, and
// every later scope fails with the first reason.
#include "common/cancellable_calls.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

TEST(CancellableCallsTest, CancelAll_CancelsTheLiveCallsOnly) {
  CancellableCalls calls;
  int first = 0, second = 0, ended = 0;
  {
    CancellableCalls::Scope done(&calls, [&] { ++ended; });
    EXPECT_TRUE(done.ok());
  }
  CancellableCalls::Scope a(&calls, [&] { ++first; });
  CancellableCalls::Scope b(&calls, [&] { ++second; });
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_THAT(calls.status(), IsOk());
  calls.CancelAll(absl::CancelledError("worker stopping"));
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
  EXPECT_EQ(ended, 0);
}

TEST(CancellableCallsTest, AfterCancelAll_NewScopesFailWithTheFirstReason) {
  CancellableCalls calls;
  calls.CancelAll(absl::AbortedError("job cancelled"));
  calls.CancelAll(absl::CancelledError("second reason"));
  bool cancelled = false;
  CancellableCalls::Scope late(&calls, [&] { cancelled = true; });
  EXPECT_FALSE(late.ok());
  EXPECT_THAT(late.status(),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("job cancelled")));
  EXPECT_THAT(calls.status(), StatusIs(absl::StatusCode::kAborted));
  calls.CancelAll(absl::CancelledError("again"));
  EXPECT_FALSE(cancelled) << "a refused scope must not be registered";
}

TEST(CancellableCallsTest, OkReason_CountsAsCancelled) {
  CancellableCalls calls;
  calls.CancelAll(absl::OkStatus());
  EXPECT_THAT(calls.status(), StatusIs(absl::StatusCode::kCancelled));
}

TEST(CancellableCallsTest, NullSet_ScopeIsOkAndCancelsNothing) {
  CancellableCalls::Scope scope(nullptr, [] { FAIL() << "cancelled"; });
  EXPECT_TRUE(scope.ok());
}

}  // namespace
}  // namespace gradsync
