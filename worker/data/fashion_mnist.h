// Readers for the IDX format of (Fashion-)MNIST, gzip-compressed or not,
// and the Fashion-MNIST loader of the worker ranks.
//
// IDX: a big-endian header (magic 0x00000803 for unsigned-byte images
// [count][rows][cols], 0x00000801 for unsigned-byte labels [count]) followed
// by exactly count*rows*cols (or count) bytes. Every header field and the
// file length are checked; an error names the file and what is wrong.
//
// Pixels become fp32 in one of two documented ways:
//   kUnit         x / 255, in [0, 1] (the default; what torchvision's
//                 ToTensor() gives);
//   kStandardize  (x / 255 - 0.2860) / 0.3530, Fashion-MNIST's training-set
//                 mean and standard deviation (ToTensor + Normalize).
//
// Errors: NOT_FOUND when a file is missing; INVALID_ARGUMENT for a wrong
// magic number, a zero or implausible dimension, a label count different
// from the image count, a label >= num_classes or bytes after the data;
// DATA_LOSS when a file is shorter than its header says or its gzip stream
// is corrupt. Threading: the functions are independent and may run on any
// thread.
//
// Example:
//   ASSIGN_OR_RETURN(Dataset train,
//                    LoadFashionMnist(kFashionMnistDir, DataSplit::kTrain));
#ifndef GRADSYNC_WORKER_DATA_FASHION_MNIST_H_
#define GRADSYNC_WORKER_DATA_FASHION_MNIST_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "worker/data/dataset.h"

namespace gradsync {

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr absl::string_view kFashionMnistDir =
    "/usr/share/datasets/fashion-mnist";

enum class PixelScaling {
  kUnit,
  kStandardize,
};

enum class DataSplit {
  kTrain,  // train-{images-idx3,labels-idx1}-ubyte.gz, 60000 examples
  kTest,   // t10k-{images-idx3,labels-idx1}-ubyte.gz, 10000 examples
};

struct IdxImages {
  size_t count = 0;
  size_t rows = 0;
  size_t cols = 0;
  std::vector<uint8_t> pixels;  // [count][rows][cols]
};

// Reads an IDX3 unsigned-byte image file (gzip or plain).
[[nodiscard]] absl::StatusOr<IdxImages> ReadIdxImages(const std::string& path);
// Reads an IDX1 unsigned-byte label file (gzip or plain).
[[nodiscard]] absl::StatusOr<std::vector<uint8_t>> ReadIdxLabels(
    const std::string& path);

// Images and labels from a pair of IDX files, checked against each other
// (same count) and against num_classes.
[[nodiscard]] absl::StatusOr<Dataset> LoadIdxDataset(
    const std::string& images_path, const std::string& labels_path,
    size_t num_classes, PixelScaling scaling);

// The Fashion-MNIST split in directory `dir` (10 classes).
[[nodiscard]] absl::StatusOr<Dataset> LoadFashionMnist(
    absl::string_view dir, DataSplit split,
    PixelScaling scaling = PixelScaling::kUnit);

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DATA_FASHION_MNIST_H_
