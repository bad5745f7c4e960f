#include "server/ps/transport/tensor_codec.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/stream_copy.h"

namespace gradsync {
namespace {

// Protobuf wire types and the field numbers shared by the tensor messages.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;
constexpr uint32_t kHeaderField = 1;
constexpr uint32_t kTensorField = 2;
constexpr uint32_t kOffsetField = 3;
constexpr uint32_t kDataField = 4;

void PutVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void PutTag(uint32_t field, uint32_t wire_type, std::string* out) {
  PutVarint((field << 3) | wire_type, out);
}

// The slice's destroy callback: drops the keep-alive reference.
void ReleaseKeepAlive(void* user_data) {
  delete static_cast<std::shared_ptr<const void>*>(user_data);
}

// Reads protobuf primitives across a message's slices.
class SliceCursor {
 public:
  explicit SliceCursor(const std::vector<grpc::Slice>& slices)
      : slices_(slices) {
    SkipEmpty();
  }

  bool done() const { return slice_ == slices_.size(); }
  // Bytes not read yet.
  size_t remaining() const {
    size_t n = 0;
    for (size_t s = slice_; s < slices_.size(); ++s) n += slices_[s].size();
    return n - pos_;
  }
  size_t slice() const { return slice_; }
  size_t pos() const { return pos_; }

  bool ReadByte(uint8_t* byte) {
    if (done()) return false;
    *byte = slices_[slice_].begin()[pos_];
    Advance(1);
    return true;
  }

  bool ReadVarint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte = 0;
      if (!ReadByte(&byte)) return false;
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;  // more than 10 bytes
  }

  // Skips `n` bytes, or copies them to `dest` when it is not null.
  bool Take(size_t n, char* dest) {
    while (n > 0) {
      if (done()) return false;
      const size_t here = std::min(n, slices_[slice_].size() - pos_);
      if (dest != nullptr) {
        std::memcpy(dest, slices_[slice_].begin() + pos_, here);
        dest += here;
      }
      Advance(here);
      n -= here;
    }
    return true;
  }

 private:
  void Advance(size_t n) {
    pos_ += n;
    if (pos_ == slices_[slice_].size()) {
      ++slice_;
      pos_ = 0;
      SkipEmpty();
    }
  }
  void SkipEmpty() {
    while (slice_ < slices_.size() && slices_[slice_].size() == 0) ++slice_;
  }

  const std::vector<grpc::Slice>& slices_;
  size_t slice_ = 0;
  size_t pos_ = 0;
};

[[nodiscard]] absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(
      "malformed parameter-server stream message: ", what,
      "; is the peer a gradsync PS client or server of the same version?"));
}

}  // namespace

absl::StatusOr<size_t> ResolveChunkBytes(int64_t requested) {
  if (requested == 0) return kDefaultChunkBytes;
  if (requested < 0 || static_cast<uint64_t>(requested) > kMaxChunkBytes ||
      requested < static_cast<int64_t>(sizeof(float))) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk size ", requested, " bytes is outside [4, ",
                     kMaxChunkBytes, "]; 0 picks ", kDefaultChunkBytes));
  }
  const size_t bytes = static_cast<size_t>(requested);
  return bytes - bytes % sizeof(float);
}

grpc::ByteBuffer EncodeTensorMessage(
    const google::protobuf::MessageLite* header, int32_t tensor, int64_t offset,
    absl::Span<const char> data, std::shared_ptr<const void> keep_alive) {
  std::string prefix;
  if (header != nullptr) {
    const std::string bytes = header->SerializeAsString();
    PutTag(kHeaderField, kLengthDelimited, &prefix);
    PutVarint(bytes.size(), &prefix);
    prefix += bytes;
  }
  if (tensor != 0) {
    PutTag(kTensorField, kVarint, &prefix);
    // int32 travels sign-extended to 64 bits, as protobuf writes it.
    PutVarint(static_cast<uint64_t>(static_cast<int64_t>(tensor)), &prefix);
  }
  if (offset != 0) {
    PutTag(kOffsetField, kVarint, &prefix);
    PutVarint(static_cast<uint64_t>(offset), &prefix);
  }
  if (data.empty()) {
    grpc::Slice only(prefix);
    return grpc::ByteBuffer(&only, 1);
  }
  PutTag(kDataField, kLengthDelimited, &prefix);
  PutVarint(data.size(), &prefix);
  grpc::Slice slices[2] = {grpc::Slice(prefix), grpc::Slice()};
  // gRPC never writes through a slice it sends; the cast only fits its API.
  void* bytes = const_cast<char*>(data.data());
  if (keep_alive == nullptr) {
    slices[1] = grpc::Slice(bytes, data.size(), grpc::Slice::STATIC_SLICE);
  } else {
    slices[1] =
        grpc::Slice(bytes, data.size(), &ReleaseKeepAlive,
                    new std::shared_ptr<const void>(std::move(keep_alive)));
  }
  return grpc::ByteBuffer(slices, 2);
}

absl::Status DecodedTensorMessage::Parse(const grpc::ByteBuffer& buffer) {
  slices_.clear();
  has_header_ = false;
  header_.clear();
  tensor_ = 0;
  offset_ = 0;
  data_slice_ = 0;
  data_pos_ = 0;
  data_size_ = 0;
  if (!buffer.Valid()) return absl::OkStatus();  // an empty message
  const grpc::Status dumped = buffer.Dump(&slices_);
  if (!dumped.ok()) return Malformed(dumped.error_message());

  SliceCursor cursor(slices_);
  while (!cursor.done()) {
    uint64_t tag = 0;
    if (!cursor.ReadVarint(&tag)) return Malformed("truncated field tag");
    const uint64_t field = tag >> 3;
    const uint32_t wire_type = static_cast<uint32_t>(tag & 7);
    if (field == 0) return Malformed("field number 0");
    uint64_t value = 0;
    switch (wire_type) {
      case kVarint:
        if (!cursor.ReadVarint(&value)) return Malformed("truncated varint");
        if (field == kTensorField) {
          tensor_ = static_cast<int32_t>(value);
        } else if (field == kOffsetField) {
          offset_ = static_cast<int64_t>(value);
        } else if (field == kHeaderField || field == kDataField) {
          return Malformed(absl::StrCat("field ", field, " is not a varint"));
        }
        break;
      case kLengthDelimited: {
        if (!cursor.ReadVarint(&value)) return Malformed("truncated length");
        // A length from the wire is checked before anything is sized by
        // it: 2^62 must not become an allocation (found by fuzzing).
        if (value > cursor.remaining()) {
          return Malformed(absl::StrCat("field ", field, " claims ", value,
                                        " bytes; ", cursor.remaining(),
                                        " remain"));
        }
        const size_t length = static_cast<size_t>(value);
        if (field == kHeaderField) {
          // Repeated embedded messages merge, as their concatenation does.
          const size_t at = header_.size();
          header_.resize(at + length);
          if (!cursor.Take(length, &header_[at])) {
            return Malformed("truncated header");
          }
          has_header_ = true;
        } else if (field == kDataField) {
          data_slice_ = cursor.slice();
          data_pos_ = cursor.pos();
          data_size_ = length;
          if (!cursor.Take(length, nullptr)) return Malformed("truncated data");
        } else if (field == kTensorField || field == kOffsetField) {
          return Malformed(absl::StrCat("field ", field, " is not a varint"));
        } else if (!cursor.Take(length, nullptr)) {
          return Malformed("truncated unknown field");
        }
        break;
      }
      case kFixed64:
      case kFixed32:
        if (field <= kDataField) {
          return Malformed(absl::StrCat("field ", field, " has a fixed type"));
        }
        if (!cursor.Take(wire_type == kFixed64 ? 8 : 4, nullptr)) {
          return Malformed("truncated fixed field");
        }
        break;
      default:
        return Malformed(absl::StrCat("wire type ", wire_type));
    }
  }
  return absl::OkStatus();
}

absl::Status DecodedTensorMessage::ParseHeader(
    google::protobuf::MessageLite* header) const {
  if (!has_header_)
    return Malformed("the stream's first message has no header");
  if (!header->ParseFromString(header_)) return Malformed("bad header");
  return absl::OkStatus();
}

std::shared_ptr<const void> DecodedTensorMessage::DetachData(
    std::vector<absl::Span<const char>>* segments) {
  segments->clear();
  // Moving the vector keeps its elements where they are, so pointers into
  // slices that store their bytes inline stay valid.
  auto holder = std::make_shared<std::vector<grpc::Slice>>(std::move(slices_));
  size_t slice = data_slice_;
  size_t pos = data_pos_;
  size_t left = data_size_;
  while (left > 0) {
    const grpc::Slice& s = (*holder)[slice];
    const size_t here = std::min(left, s.size() - pos);
    if (here > 0) {
      segments->emplace_back(reinterpret_cast<const char*>(s.begin()) + pos,
                             here);
    }
    left -= here;
    ++slice;
    pos = 0;
  }
  slices_.clear();
  has_header_ = false;
  header_.clear();
  data_size_ = 0;
  return holder;
}

void DecodedTensorMessage::CopyData(char* dest) const {
  // One run over all slices, so that no slice seam costs a partial line.
  StreamingCopier copier(dest);
  size_t slice = data_slice_;
  size_t pos = data_pos_;
  size_t left = data_size_;
  while (left > 0) {
    const size_t here = std::min(left, slices_[slice].size() - pos);
    copier.Append(reinterpret_cast<const char*>(slices_[slice].begin()) + pos,
                  here);
    left -= here;
    ++slice;
    pos = 0;
  }
  copier.Finish();
}

}  // namespace gradsync
