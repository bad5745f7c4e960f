// Byte counts (common/units.h): one parsing rule for every size a flag or
// a job spec takes (K = 1024), and the two ways they are printed.
#include "common/units.h"

#include <cstdint>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

TEST(ParseSizeTest, PlainBytes) {
  EXPECT_EQ(*ParseSize("0"), 0u);
  EXPECT_EQ(*ParseSize("512"), 512u);
  EXPECT_EQ(*ParseSize("1000000"), 1000000u);
}

TEST(ParseSizeTest, SuffixesArePowersOf1024InEitherCase) {
  EXPECT_EQ(*ParseSize("1K"), 1024u);
  EXPECT_EQ(*ParseSize("1k"), 1024u);
  EXPECT_EQ(*ParseSize("64M"), size_t{64} << 20);
  EXPECT_EQ(*ParseSize("256m"), size_t{256} << 20);
  EXPECT_EQ(*ParseSize("2G"), size_t{2} << 30);
  EXPECT_EQ(*ParseSize("1T"), size_t{1} << 40);
}

TEST(ParseSizeTest, AcceptsByteUnitSpellings) {
  EXPECT_EQ(*ParseSize("1KB"), 1024u);
  EXPECT_EQ(*ParseSize("1KiB"), 1024u);
  EXPECT_EQ(*ParseSize("8MiB"), size_t{8} << 20);
  EXPECT_EQ(*ParseSize("100B"), 100u);
}

TEST(ParseSizeTest, BadInput_ReturnsInvalidArgument) {
  for (const char* bad : {"", "-1", "1.5M", "1X", "K", "M1", "1 K", "1KK",
                          "1iB", "0x10", "12Q"}) {
    absl::StatusOr<uint64_t> size = ParseSize(bad);
    ASSERT_FALSE(size.ok()) << "'" << bad << "' parsed as " << *size;
    EXPECT_EQ(size.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ParseSizeTest, Overflow_ReturnsInvalidArgument) {
  EXPECT_FALSE(ParseSize("99999999999999999999").ok());
  EXPECT_FALSE(ParseSize("16777216T").ok());  // 2^24 * 2^40
  EXPECT_THAT(std::string(ParseSize("17179869184G").status().message()),
              HasSubstr("too large"));
}

TEST(FormatSizeTest, BinaryUnits) {
  EXPECT_EQ(FormatSize(100), "100 B");
  EXPECT_EQ(FormatSize(1024), "1 KiB");
  EXPECT_EQ(FormatSize(size_t{64} << 20), "64 MiB");
  EXPECT_EQ(FormatSize(size_t{3} << 29), "1.5 GiB");
}

}  // namespace
}  // namespace gradsync
