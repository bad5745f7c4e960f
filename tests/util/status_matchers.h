// GoogleTest matchers for absl::Status and absl::StatusOr, which the
// GoogleTest of Debian 12 lacks:
//
//   EXPECT_THAT(store.Get("k", deadline),
//               StatusIs(absl::StatusCode::kDeadlineExceeded,
//                        HasSubstr("'k'")));
//   ASSERT_THAT(store.Set("k", "v"), IsOk());
#ifndef GRADSYNC_TESTS_UTIL_STATUS_MATCHERS_H_
#define GRADSYNC_TESTS_UTIL_STATUS_MATCHERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace gradsync {
namespace testing {

inline const absl::Status& GetStatus(const absl::Status& status) {
  return status;
}

template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status;
  return status.ok();
}

MATCHER_P(StatusIs, code, "has code " + absl::StatusCodeToString(code)) {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status;
  return status.code() == code;
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + absl::StatusCodeToString(code) +
               " and a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher)) {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status;
  return status.code() == code &&
         ::testing::Matches(message_matcher)(std::string(status.message()));
}

// A StatusOr that is OK and whose value equals `value`.
MATCHER_P(IsOkAndHolds, value,
          "is OK and holds " + ::testing::PrintToString(value)) {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  *result_listener << "holds " << ::testing::PrintToString(*arg);
  return *arg == value;
}

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_UTIL_STATUS_MATCHERS_H_
