#include "server/ps/transport/tensor_stream.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync {

TensorReceiver::TensorReceiver(std::vector<absl::Span<char>> tensors,
                               size_t element_bytes)
    : tensors_(std::move(tensors)), element_bytes_(element_bytes) {}

void TensorReceiver::SkipFilled() {
  while (current_ < tensors_.size() && filled_ == tensors_[current_].size()) {
    ++current_;
    filled_ = 0;
  }
}

bool TensorReceiver::complete() {
  SkipFilled();
  return current_ == tensors_.size();
}

std::string TensorReceiver::Progress() const {
  if (current_ >= tensors_.size()) {
    return absl::StrCat("all ", tensors_.size(), " tensors, ", received_,
                        " bytes");
  }
  return absl::StrCat("tensor ", current_, " of ", tensors_.size(), ": ",
                      filled_, " of ", tensors_[current_].size(), " bytes");
}

absl::Status TensorReceiver::Take(const DecodedTensorMessage& message) {
  const size_t n = message.data_size();
  if (n == 0) return absl::OkStatus();
  SkipFilled();
  if (current_ == tensors_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a chunk of tensor ", message.tensor(), " arrived after ", Progress(),
        "; the sender's sizes do not match the receiver's"));
  }
  if (message.tensor() != static_cast<int32_t>(current_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a chunk of tensor ", message.tensor(), " arrived while ", Progress(),
        " had arrived; tensors must be sent in order"));
  }
  if (n % element_bytes_ != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a chunk of ", n, " bytes is not whole ",
        element_bytes_ == sizeof(float) ? "fp32" : "16-bit", " values"));
  }
  if (message.offset() < 0 ||
      static_cast<size_t>(message.offset()) * element_bytes_ != filled_) {
    return absl::InvalidArgumentError(
        absl::StrCat("a chunk of tensor ", current_, " starts at element ",
                     message.offset(), ", expected ", filled_ / element_bytes_,
                     "; chunks must be sent in order"));
  }
  if (n > tensors_[current_].size() - filled_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a chunk of ", n, " bytes overruns tensor ", current_, " (", Progress(),
        "); the sender's sizes do not match the receiver's"));
  }
  message.CopyData(tensors_[current_].data() + filled_);
  filled_ += n;
  received_ += n;
  return absl::OkStatus();
}

}  // namespace gradsync
