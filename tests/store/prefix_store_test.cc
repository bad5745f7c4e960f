// PrefixStore: every key of a decorated store lives under "<prefix>/" of its
// base, so two jobs (or two rendezvous generations) never meet.
#include "collectives/prefix_store.h"

#include <string>

#include "absl/time/time.h"
#include "collectives/memory_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

constexpr absl::Duration kShortDeadline = absl::Milliseconds(100);

TEST(PrefixStoreTest, Set_WritesUnderPrefixInBase) {
  MemoryStore base;
  PrefixStore store(&base, "job-7/gen-2");
  ASSERT_THAT(store.Set("addr/0", "10.0.0.1:4000"), IsOk());
  absl::StatusOr<std::string> value =
      base.Get("job-7/gen-2/addr/0", absl::Now() + kShortDeadline);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "10.0.0.1:4000");
}

TEST(PrefixStoreTest, TwoPrefixes_SameKeys_AreIsolated) {
  MemoryStore base;
  PrefixStore gen0(&base, "job-7/gen-0");
  PrefixStore gen1(&base, "job-7/gen-1");

  ASSERT_THAT(gen0.Set("addr/0", "old"), IsOk());
  ASSERT_THAT(gen0.Add("arrivals", 3), IsOk());

  // The new generation sees none of the old one's keys...
  EXPECT_THAT(gen1.Get("addr/0", absl::Now() + kShortDeadline),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  absl::StatusOr<int64_t> arrivals = gen1.Add("arrivals", 1);
  ASSERT_THAT(arrivals, IsOk());
  EXPECT_EQ(*arrivals, 1);

  // ...and writing them does not touch the old one's.
  ASSERT_THAT(gen1.Set("addr/0", "new"), IsOk());
  absl::StatusOr<std::string> value =
      gen0.Get("addr/0", absl::Now() + kShortDeadline);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "old");
  value = gen1.Get("addr/0", absl::Now() + kShortDeadline);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "new");
}

TEST(PrefixStoreTest, Wait_OtherPrefixHasKeys_StillTimesOutNamingPrefixedKey) {
  MemoryStore base;
  PrefixStore job1(&base, "job-1");
  PrefixStore job2(&base, "job-2");
  ASSERT_THAT(job1.Set("ready/0", "1"), IsOk());
  EXPECT_THAT(job2.Wait({"ready/0"}, absl::Now() + kShortDeadline),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("job-2/ready/0")));
  EXPECT_THAT(job1.Wait({"ready/0"}, absl::Now() + kShortDeadline), IsOk());
}

}  // namespace
}  // namespace gradsync
