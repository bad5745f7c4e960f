// MemoryStore behaviour beyond the Store contract (which
// store_contract_test.cc checks for every implementation).
#include "collectives/memory_store.h"

#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;

constexpr absl::Duration kShortDeadline = absl::Milliseconds(100);

TEST(MemoryStoreTest, EraseWithPrefix_RemovesOnlyKeysUnderPrefix) {
  MemoryStore store;
  ASSERT_THAT(store.Set("job-1/addr/0", "a"), IsOk());
  ASSERT_THAT(store.Set("job-1/addr/1", "b"), IsOk());
  ASSERT_THAT(store.Add("job-1/count", 2), IsOk());
  ASSERT_THAT(store.Set("job-10/addr/0", "c"), IsOk());
  ASSERT_THAT(store.Set("job-2/addr/0", "d"), IsOk());

  EXPECT_EQ(store.EraseWithPrefix("job-1/"), 3);

  EXPECT_THAT(store.Get("job-1/addr/0", absl::Now() + kShortDeadline),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  absl::StatusOr<std::string> value =
      store.Get("job-10/addr/0", absl::Now() + kShortDeadline);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "c");
  value = store.Get("job-2/addr/0", absl::Now() + kShortDeadline);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "d");
}

TEST(MemoryStoreTest, EraseWithPrefix_NoMatch_ReturnsZero) {
  MemoryStore store;
  ASSERT_THAT(store.Set("job-1/addr/0", "a"), IsOk());
  EXPECT_EQ(store.EraseWithPrefix("job-2/"), 0);
  EXPECT_THAT(store.Get("job-1/addr/0", absl::Now() + kShortDeadline), IsOk());
}

TEST(MemoryStoreTest, Add_AfterEraseWithPrefix_CountsFromZeroAgain) {
  MemoryStore store;
  ASSERT_THAT(store.Add("job-1/count", 4), IsOk());
  EXPECT_EQ(store.EraseWithPrefix("job-1/"), 1);
  absl::StatusOr<int64_t> value = store.Add("job-1/count", 1);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, 1);
}

}  // namespace
}  // namespace gradsync
