#include "worker/data/fashion_mnist.h"

#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/fashion_mnist.h"

namespace gradsync {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

MATCHER_P(StatusIs, code, "") { return arg.code() == code; }

std::vector<uint8_t> BigEndian(std::initializer_list<uint32_t> words) {
  std::vector<uint8_t> out;
  for (uint32_t w : words) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(w >> shift);
  }
  return out;
}

class FashionMnistTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "/idx_test_XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `bytes` to dir/name, gzip-compressed when name ends in ".gz".
  std::string Write(const std::string& name,
                    const std::vector<uint8_t>& bytes) {
    std::string path = dir_ + "/" + name;
    if (name.size() > 3 && name.substr(name.size() - 3) == ".gz") {
      gzFile f = gzopen(path.c_str(), "wb");
      EXPECT_NE(f, nullptr);
      EXPECT_EQ(gzwrite(f, bytes.data(), bytes.size()),
                static_cast<int>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream out(path, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    return path;
  }

  // Two 3x2 images and their labels.
  std::vector<uint8_t> Images() {
    std::vector<uint8_t> b = BigEndian({0x803, 2, 3, 2});
    for (uint8_t p : {0, 51, 102, 153, 204, 255, 255, 0, 0, 0, 0, 1}) {
      b.push_back(p);
    }
    return b;
  }
  std::vector<uint8_t> Labels(std::vector<uint8_t> values) {
    std::vector<uint8_t> b =
        BigEndian({0x801, static_cast<uint32_t>(values.size())});
    b.insert(b.end(), values.begin(), values.end());
    return b;
  }

  std::string dir_;
};

TEST_F(FashionMnistTest, ReadsGzipAndPlainFiles) {
  for (const char* suffix : {".gz", ""}) {
    const std::string images = Write(std::string("img") + suffix, Images());
    const std::string labels =
        Write(std::string("lbl") + suffix, Labels({9, 0}));
    absl::StatusOr<Dataset> d =
        LoadIdxDataset(images, labels, 10, PixelScaling::kUnit);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->num_examples, 2u);
    EXPECT_EQ(d->rows, 3u);
    EXPECT_EQ(d->cols, 2u);
    EXPECT_EQ(d->feature_size, 6u);
    EXPECT_EQ(d->labels, (std::vector<int32_t>{9, 0}));
    EXPECT_EQ(d->features[0], 0.0f);
    EXPECT_EQ(d->features[1], 51.0f / 255.0f);
    EXPECT_EQ(d->features[5], 1.0f);
    EXPECT_EQ(d->example(1)[0], 1.0f);
  }
}

TEST_F(FashionMnistTest, Standardize_UsesFashionMnistStatistics) {
  const std::string images = Write("img.gz", Images());
  const std::string labels = Write("lbl.gz", Labels({1, 2}));
  absl::StatusOr<Dataset> d =
      LoadIdxDataset(images, labels, 10, PixelScaling::kStandardize);
  ASSERT_TRUE(d.ok());
  EXPECT_FLOAT_EQ(d->features[0], -0.2860f / 0.3530f);
  EXPECT_FLOAT_EQ(d->features[5], (1.0f - 0.2860f) / 0.3530f);
}

TEST_F(FashionMnistTest, TruncatedFile_ReturnsDataLossNamingFile) {
  std::vector<uint8_t> cut = Images();
  cut.resize(cut.size() - 3);
  const std::string path = Write("cut.gz", cut);
  absl::StatusOr<IdxImages> r = ReadIdxImages(path);
  EXPECT_THAT(r.status(), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr(path), HasSubstr("truncated")));
  // A gzip stream cut inside its trailer, and inside its compressed data.
  for (int cut_bytes : {6, 12}) {
    const std::string whole = Write("whole.gz", Images());
    std::filesystem::resize_file(whole,
                                 std::filesystem::file_size(whole) - cut_bytes);
    absl::StatusOr<IdxImages> cut_gz = ReadIdxImages(whole);
    EXPECT_THAT(cut_gz.status(), StatusIs(absl::StatusCode::kDataLoss))
        << "cut " << cut_bytes;
    EXPECT_THAT(cut_gz.status().message(), HasSubstr(whole));
  }
  // A file that ends inside the header.
  const std::string header = Write("header", {0, 0, 8});
  absl::StatusOr<IdxImages> h = ReadIdxImages(header);
  EXPECT_THAT(h.status(), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(h.status().message(), HasSubstr("magic number"));
}

TEST_F(FashionMnistTest, WrongMagic_ReturnsInvalidArgument) {
  // A label file given as images, and vice versa.
  const std::string labels = Write("lbl.gz", Labels({1, 2}));
  absl::StatusOr<IdxImages> r = ReadIdxImages(labels);
  EXPECT_THAT(r.status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr(labels), HasSubstr("0x00000801"),
                    HasSubstr("0x00000803")));
  const std::string images = Write("img.gz", Images());
  EXPECT_THAT(ReadIdxLabels(images).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(FashionMnistTest, LabelCountMismatch_NamesBothFiles) {
  const std::string images = Write("img.gz", Images());
  const std::string labels = Write("lbl.gz", Labels({1, 2, 3}));
  absl::StatusOr<Dataset> d =
      LoadIdxDataset(images, labels, 10, PixelScaling::kUnit);
  EXPECT_THAT(d.status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(d.status().message(),
              AllOf(HasSubstr(images), HasSubstr(labels), HasSubstr("3 labels"),
                    HasSubstr("2 images")));
}

TEST_F(FashionMnistTest, OtherBadFiles_ReturnClearErrors) {
  const std::string images = Write("img.gz", Images());
  absl::StatusOr<Dataset> bad_label = LoadIdxDataset(
      images, Write("lbl.gz", Labels({1, 10})), 10, PixelScaling::kUnit);
  EXPECT_THAT(bad_label.status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(bad_label.status().message(), HasSubstr("label 1 is 10"));

  std::vector<uint8_t> extra = Images();
  extra.push_back(7);
  absl::StatusOr<IdxImages> trailing = ReadIdxImages(Write("extra.gz", extra));
  EXPECT_THAT(trailing.status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(trailing.status().message(), HasSubstr("after the data"));

  EXPECT_THAT(
      ReadIdxImages(Write("zero.gz", BigEndian({0x803, 1, 0, 5}))).status(),
      StatusIs(absl::StatusCode::kInvalidArgument));
  absl::StatusOr<IdxImages> huge = ReadIdxImages(
      Write("huge.gz", BigEndian({0x803, 0xffffffff, 0xffff, 0xffff})));
  EXPECT_THAT(huge.status(), StatusIs(absl::StatusCode::kInvalidArgument));

  absl::StatusOr<IdxImages> missing = ReadIdxImages(dir_ + "/nope.gz");
  EXPECT_THAT(missing.status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(missing.status().message(), HasSubstr("nope.gz"));
}

TEST(FashionMnistRealTest, LoadsBothSplits) {
  GRADSYNC_SKIP_WITHOUT_FASHION_MNIST();
  absl::StatusOr<Dataset> train =
      LoadFashionMnist(kFashionMnistDir, DataSplit::kTrain);
  absl::StatusOr<Dataset> test =
      LoadFashionMnist(kFashionMnistDir, DataSplit::kTest);
  ASSERT_TRUE(train.ok()) << train.status();
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(train->num_examples, 60000u);
  EXPECT_EQ(test->num_examples, 10000u);
  EXPECT_EQ(train->feature_size, 784u);
  std::vector<int> per_class(10, 0);
  for (int32_t y : train->labels) ++per_class[y];
  for (int c : per_class) EXPECT_EQ(c, 6000);  // Fashion-MNIST is balanced
  double sum = 0;
  for (float x : train->features) sum += x;
  EXPECT_NEAR(sum / train->features.size(), 0.2860, 0.001);
}

}  // namespace
}  // namespace gradsync
