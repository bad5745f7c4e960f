#include "worker/data/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // ubyte, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // ubyte, 1 dimension
// More than 64 GiB of pixels is a corrupt header, not a dataset.
constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 36;
constexpr float kFashionMnistMean = 0.2860f;
constexpr float kFashionMnistStd = 0.3530f;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

// Sequential reads from a gzip (or plain) file with errors that name it.
class IdxReader {
 public:
  [[nodiscard]] static absl::StatusOr<IdxReader> Open(const std::string& path) {
    errno = 0;
    GzHandle file(gzopen(path.c_str(), "rb"));
    if (file == nullptr) {
      const int err = errno;
      const std::string why =
          err != 0 ? std::strerror(err) : std::string("out of memory");
      if (err == ENOENT) {
        return absl::NotFoundError(
            absl::StrCat("IDX file ", path, " does not exist"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("cannot open IDX file ", path, ": ", why));
    }
    return IdxReader(path, std::move(file));
  }

  const std::string& path() const { return path_; }

  // Reads exactly `n` bytes of `what`; DATA_LOSS if the file ends first.
  [[nodiscard]] absl::Status ReadExact(void* dst, uint64_t n,
                                       absl::string_view what) {
    uint64_t done = 0;
    auto* out = static_cast<unsigned char*>(dst);
    while (done < n) {
      const unsigned ask =
          static_cast<unsigned>(std::min<uint64_t>(n - done, 1u << 30));
      const int got = gzread(file_.get(), out + done, ask);
      if (got < 0) return GzError(what);
      if (got == 0) {
        int code = Z_OK;
        const char* msg = gzerror(file_.get(), &code);
        return absl::DataLossError(absl::StrCat(
            "IDX file ", path_, " is truncated: expected ", n, " bytes of ",
            what, " but the file ends after ", done,
            code != Z_OK ? absl::StrCat(" (zlib: ", msg, ")") : ""));
      }
      done += static_cast<uint64_t>(got);
    }
    return absl::OkStatus();
  }

  // Reads a big-endian uint32 header field.
  [[nodiscard]] absl::StatusOr<uint32_t> ReadU32(absl::string_view what) {
    std::array<unsigned char, 4> b;
    RETURN_IF_ERROR(ReadExact(b.data(), b.size(), what));
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
           (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  }

  // OK if the file has no bytes left.
  [[nodiscard]] absl::Status ExpectEnd() {
    unsigned char extra;
    const int got = gzread(file_.get(), &extra, 1);
    if (got < 0) return GzError("the end of the data");
    int code = Z_OK;
    const char* msg = gzerror(file_.get(), &code);
    if (got == 0 && code != Z_OK) {
      // zlib reports a gzip stream cut short (e.g. inside its CRC trailer)
      // only once the data has been consumed.
      return absl::DataLossError(
          absl::StrCat("IDX file ", path_,
                       " is truncated or corrupt after its data: zlib: ", msg));
    }
    if (got > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("IDX file ", path_,
                       " has bytes after the data its header describes"));
    }
    return absl::OkStatus();
  }

 private:
  IdxReader(std::string path, GzHandle file)
      : path_(std::move(path)), file_(std::move(file)) {}

  [[nodiscard]] absl::Status GzError(absl::string_view what) {
    int code = Z_OK;
    const char* msg = gzerror(file_.get(), &code);
    return absl::DataLossError(absl::StrCat(
        "IDX file ", path_, ": cannot read ", what, ": zlib: ", msg));
  }

  std::string path_;
  GzHandle file_;
};

[[nodiscard]] absl::Status CheckMagic(const IdxReader& reader, uint32_t magic,
                                      uint32_t want, absl::string_view kind) {
  if (magic == want) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "IDX file %s has magic number 0x%08x, expected 0x%08x (%s)",
      reader.path(), magic, want, kind));
}

[[nodiscard]] absl::StatusOr<std::vector<uint8_t>> ReadPayload(
    IdxReader& reader, uint64_t bytes, absl::string_view what) {
  if (bytes > kMaxPayloadBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "IDX file ", reader.path(), " declares ", bytes, " bytes of ", what,
        ", more than the ", kMaxPayloadBytes, " this reader accepts"));
  }
  std::vector<uint8_t> data;
  try {
    data.resize(bytes);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", bytes, " bytes for ", reader.path()));
  }
  RETURN_IF_ERROR(reader.ReadExact(data.data(), bytes, what));
  RETURN_IF_ERROR(reader.ExpectEnd());
  return data;
}

}  // namespace

absl::StatusOr<IdxImages> ReadIdxImages(const std::string& path) {
  ASSIGN_OR_RETURN(IdxReader reader, IdxReader::Open(path));
  ASSIGN_OR_RETURN(uint32_t magic, reader.ReadU32("the magic number"));
  RETURN_IF_ERROR(
      CheckMagic(reader, magic, kImagesMagic, "unsigned-byte images"));
  ASSIGN_OR_RETURN(uint32_t count, reader.ReadU32("the image count"));
  ASSIGN_OR_RETURN(uint32_t rows, reader.ReadU32("the row count"));
  ASSIGN_OR_RETURN(uint32_t cols, reader.ReadU32("the column count"));
  if (rows == 0 || cols == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("IDX file ", path, " declares images of ", rows, "x", cols,
                     " pixels; both must be >= 1"));
  }
  IdxImages images;
  images.count = count;
  images.rows = rows;
  images.cols = cols;
  // rows * cols fits 64 bits; the product with count may not: check first.
  if (uint64_t{rows} * cols > kMaxPayloadBytes / std::max<uint64_t>(count, 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("IDX file ", path, " declares ", count, " images of ",
                     rows, "x", cols, " pixels, more than the ",
                     kMaxPayloadBytes, " bytes this reader accepts"));
  }
  const uint64_t bytes = uint64_t{count} * rows * cols;
  ASSIGN_OR_RETURN(
      images.pixels,
      ReadPayload(reader, bytes, absl::StrCat("pixels of ", count, " images")));
  return images;
}

absl::StatusOr<std::vector<uint8_t>> ReadIdxLabels(const std::string& path) {
  ASSIGN_OR_RETURN(IdxReader reader, IdxReader::Open(path));
  ASSIGN_OR_RETURN(uint32_t magic, reader.ReadU32("the magic number"));
  RETURN_IF_ERROR(
      CheckMagic(reader, magic, kLabelsMagic, "unsigned-byte labels"));
  ASSIGN_OR_RETURN(uint32_t count, reader.ReadU32("the label count"));
  return ReadPayload(reader, count, absl::StrCat(count, " labels"));
}

absl::StatusOr<Dataset> LoadIdxDataset(const std::string& images_path,
                                       const std::string& labels_path,
                                       size_t num_classes,
                                       PixelScaling scaling) {
  ASSIGN_OR_RETURN(IdxImages images, ReadIdxImages(images_path));
  ASSIGN_OR_RETURN(std::vector<uint8_t> labels, ReadIdxLabels(labels_path));
  if (labels.size() != images.count) {
    return absl::InvalidArgumentError(
        absl::StrCat("label file ", labels_path, " holds ", labels.size(),
                     " labels but image file ", images_path, " holds ",
                     images.count, " images"));
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= num_classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("label file ", labels_path, ": label ", i, " is ",
                       labels[i], ", not in [0, ", num_classes, ")"));
    }
  }
  // One conversion table keeps every pixel's float identical everywhere.
  std::array<float, 256> table;
  for (int v = 0; v < 256; ++v) {
    const float unit = static_cast<float>(v) / 255.0f;
    table[v] = scaling == PixelScaling::kUnit
                   ? unit
                   : (unit - kFashionMnistMean) / kFashionMnistStd;
  }
  Dataset data;
  data.num_examples = images.count;
  data.rows = images.rows;
  data.cols = images.cols;
  data.feature_size = images.rows * images.cols;
  data.num_classes = num_classes;
  try {
    data.features.resize(images.pixels.size());
    data.labels.assign(labels.begin(), labels.end());
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate ", images.pixels.size(), " floats for ", images_path));
  }
  std::transform(images.pixels.begin(), images.pixels.end(),
                 data.features.begin(), [&](uint8_t p) { return table[p]; });
  return data;
}

absl::StatusOr<Dataset> LoadFashionMnist(absl::string_view dir, DataSplit split,
                                         PixelScaling scaling) {
  const absl::string_view prefix =
      split == DataSplit::kTrain ? "train" : "t10k";
  const std::string images =
      absl::StrCat(dir, "/", prefix, "-images-idx3-ubyte.gz");
  const std::string labels =
      absl::StrCat(dir, "/", prefix, "-labels-idx1-ubyte.gz");
  return LoadIdxDataset(images, labels, /*num_classes=*/10, scaling);
}

}  // namespace gradsync
