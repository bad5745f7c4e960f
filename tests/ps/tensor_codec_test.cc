// The tensor-stream wire codec: round trips, messages split across many
// slices, interoperability with protobuf's own encoding in both
// directions, zero-copy sends, malformed input, and TensorReceiver's
// ordering checks.
#include "server/ps/transport/tensor_codec.h"

#include <grpc/grpc.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/ps.pb.h"
#include "server/ps/transport/tensor_plane_wire.h"
#include "server/ps/transport/tensor_stream.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

class TensorCodecTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { grpc_init(); }
  static void TearDownTestSuite() { grpc_shutdown(); }
};

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes;
}

// `bytes` as a ByteBuffer of slices of `piece` bytes each.
grpc::ByteBuffer Split(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t i = 0; i < bytes.size(); i += piece) {
    slices.emplace_back(bytes.data() + i, std::min(piece, bytes.size() - i));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::vector<float> Floats(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.5f * i - 3.0f;
  return v;
}

TEST_F(TensorCodecTest, EncodeDecode_AllFields_RoundTripThroughAnySplit) {
  const std::vector<float> data = Floats(1000);
  ps::PushHeader header;
  header.set_job_id("job-7");
  header.set_rank(3);
  header.set_step(41);
  const grpc::ByteBuffer encoded =
      EncodeTensorMessage(&header, 2, 123456789012, AsBytes(data), nullptr);
  const std::string bytes = Flatten(encoded);
  for (size_t piece :
       {size_t{1}, size_t{3}, size_t{7}, size_t{4096}, bytes.size()}) {
    DecodedTensorMessage message;
    ASSERT_THAT(message.Parse(Split(bytes, piece)), IsOk()) << piece;
    ASSERT_TRUE(message.has_header());
    ps::PushHeader got;
    ASSERT_THAT(message.ParseHeader(&got), IsOk());
    EXPECT_EQ(got.job_id(), "job-7");
    EXPECT_EQ(got.rank(), 3);
    EXPECT_EQ(got.step(), 41);
    EXPECT_EQ(message.tensor(), 2);
    EXPECT_EQ(message.offset(), 123456789012);
    ASSERT_EQ(message.data_size(), data.size() * sizeof(float));
    std::vector<float> out(data.size());
    message.CopyData(reinterpret_cast<char*>(out.data()));
    EXPECT_EQ(out, data) << "pieces of " << piece;
  }
}

TEST_F(TensorCodecTest, Encode_ProtobufParsesItAsTheDeclaredMessage) {
  const std::vector<float> data = Floats(17);
  ps::PullHeader header;
  header.set_version(9);
  header.set_end(17);
  const std::string bytes =
      Flatten(EncodeTensorMessage(&header, -1, 5, AsBytes(data), nullptr));
  ps::PushPullResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.header().version(), 9);
  EXPECT_EQ(parsed.header().end(), 17);
  EXPECT_EQ(parsed.tensor(), -1);
  EXPECT_EQ(parsed.offset(), 5);
  EXPECT_EQ(parsed.data(),
            std::string(AsBytes(data).begin(), AsBytes(data).end()));
}

TEST_F(TensorCodecTest, Decode_ProtobufEncodingWithUnknownFields) {
  const std::vector<float> data = Floats(33);
  ps::SeedShardMessage message;
  message.mutable_header()->set_job_id("j");
  message.set_tensor(1);
  message.set_offset(64);
  message.set_data(std::string(AsBytes(data).begin(), AsBytes(data).end()));
  std::string bytes = message.SerializeAsString();
  // Unknown fields of every wire type, as a newer peer might add.
  bytes += std::string("\x48\x96\x01", 3);                // 9: varint 150
  bytes += std::string("\x55\x01\x02\x03\x04", 5);        // 10: fixed32
  bytes += std::string("\x59", 1) + std::string(8, 'x');  // 11: fixed64
  bytes += std::string("\x62\x02hi", 4);                  // 12: bytes "hi"
  DecodedTensorMessage decoded;
  ASSERT_THAT(decoded.Parse(Split(bytes, 5)), IsOk());
  ps::SeedShardHeader header;
  ASSERT_THAT(decoded.ParseHeader(&header), IsOk());
  EXPECT_EQ(header.job_id(), "j");
  EXPECT_EQ(decoded.tensor(), 1);
  EXPECT_EQ(decoded.offset(), 64);
  std::vector<float> out(data.size());
  ASSERT_EQ(decoded.data_size(), out.size() * sizeof(float));
  decoded.CopyData(reinterpret_cast<char*>(out.data()));
  EXPECT_EQ(out, data);
}

TEST_F(TensorCodecTest, Encode_DataIsReferencedNotCopied_KeepAliveHeld) {
  const std::vector<float> data = Floats(256);
  auto keep_alive = std::make_shared<int>(0);
  {
    const grpc::ByteBuffer encoded =
        EncodeTensorMessage(nullptr, 0, 0, AsBytes(data), keep_alive);
    EXPECT_EQ(keep_alive.use_count(), 2);
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(encoded.Dump(&slices).ok());
    ASSERT_EQ(slices.size(), 2u);
    EXPECT_EQ(reinterpret_cast<const void*>(slices[1].begin()),
              reinterpret_cast<const void*>(data.data()));
  }
  EXPECT_EQ(keep_alive.use_count(), 1);
}

TEST_F(TensorCodecTest, Decode_Malformed_InvalidArgument) {
  const std::vector<std::string> bad = {
      std::string("\x08", 1),  // tag without its varint
      std::string("\x22\x10"
                  "abc",
                  5),  // data shorter than its length
      std::string("\x0a\x05"
                  "ab",
                  4),              // truncated header
      std::string("\x0b", 1),      // wire type 3 (group)
      std::string("\x00\x01", 2),  // field number 0
      std::string("\x12\x01"
                  "a",
                  3),  // tensor as bytes
      std::string("\x22"
                  "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                  12),
      // A header that claims 2^62 bytes: refused before anything is sized
      // by it (the fuzzer's first finding: it used to be allocated).
      std::string("\x0a\xe5\xe5\xe5\xe5\xe5\xe5\xe5\xe5\x2f"
                  "abc",
                  13),
  };
  for (const std::string& bytes : bad) {
    DecodedTensorMessage message;
    EXPECT_THAT(
        message.Parse(Split(bytes, 2)),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("malformed")))
        << "bytes of length " << bytes.size();
  }
  DecodedTensorMessage no_header;
  ASSERT_THAT(no_header.Parse(Split(std::string("\x10\x01", 2), 1)), IsOk());
  ps::PushHeader header;
  EXPECT_THAT(
      no_header.ParseHeader(&header),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no header")));
}

TEST_F(TensorCodecTest, ResolveChunkBytes_DefaultsRoundsAndBounds) {
  EXPECT_EQ(*ResolveChunkBytes(0), kDefaultChunkBytes);
  EXPECT_EQ(*ResolveChunkBytes(6), 4u);
  EXPECT_EQ(*ResolveChunkBytes(int64_t{64} << 20), kMaxChunkBytes);
  for (int64_t bad : {int64_t{-1}, int64_t{3}, (int64_t{64} << 20) + 4}) {
    EXPECT_THAT(ResolveChunkBytes(bad),
                StatusIs(absl::StatusCode::kInvalidArgument))
        << bad;
  }
}

// Feeds `receiver` one chunk (tensor, offset in elements, n floats).
[[nodiscard]] absl::Status Feed(TensorReceiver& receiver, int tensor,
                                int64_t offset,
                                const std::vector<float>& floats) {
  DecodedTensorMessage message;
  absl::Status parsed = message.Parse(
      EncodeTensorMessage(nullptr, tensor, offset, AsBytes(floats), nullptr));
  return parsed.ok() ? receiver.Take(message) : parsed;
}

TEST_F(TensorCodecTest, TensorReceiver_InOrderChunks_FillsEveryTensor) {
  std::vector<float> a(5), b(3);
  TensorReceiver receiver(
      {AsWritableBytes(absl::MakeSpan(a)), AsWritableBytes(absl::MakeSpan(b))});
  ASSERT_THAT(Feed(receiver, 0, 0, {1, 2}), IsOk());
  ASSERT_THAT(Feed(receiver, 0, 2, {3, 4, 5}), IsOk());
  EXPECT_FALSE(receiver.complete());
  ASSERT_THAT(Feed(receiver, 1, 0, {6, 7, 8}), IsOk());
  EXPECT_TRUE(receiver.complete());
  EXPECT_EQ(a, (std::vector<float>{1, 2, 3, 4, 5}));
  EXPECT_EQ(b, (std::vector<float>{6, 7, 8}));
  EXPECT_EQ(receiver.received_bytes(), 32u);
  EXPECT_THAT(Feed(receiver, 1, 3, {9}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("arrived after all 2 tensors")));
}

TEST_F(TensorCodecTest, TensorReceiver_OutOfOrderOrOversized_InvalidArgument) {
  std::vector<float> a(4), b(4);
  TensorReceiver receiver(
      {AsWritableBytes(absl::MakeSpan(a)), AsWritableBytes(absl::MakeSpan(b))});
  EXPECT_THAT(Feed(receiver, 0, 1, {1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("starts at element 1, expected 0")));
  EXPECT_THAT(Feed(receiver, 1, 0, {1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must be sent in order")));
  EXPECT_THAT(Feed(receiver, 0, 0, {1, 2, 3, 4, 5}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("overruns tensor 0")));
  DecodedTensorMessage odd;
  ASSERT_THAT(odd.Parse(Split(std::string("\x22\x03"
                                          "abc",
                                          5),
                              8)),
              IsOk());
  EXPECT_THAT(receiver.Take(odd), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("not whole fp32")));
  EXPECT_EQ(receiver.received_bytes(), 0u);
  EXPECT_EQ(receiver.Progress(), "tensor 0 of 2: 0 of 16 bytes");
}

// 16-bit elements (a bf16/fp16 job's PushPull): TensorMessages cuts whole
// 2-byte elements with offsets in elements, TensorReceiver takes them and
// refuses an odd byte count or an fp32-sized offset.
TEST_F(TensorCodecTest, SixteenBitElements_ChunkedAndReceivedInElements) {
  const std::vector<uint16_t> sent = {1, 2, 3, 4, 5, 6, 7};  // 14 bytes
  const absl::Span<const char> bytes(reinterpret_cast<const char*>(sent.data()),
                                     sent.size() * 2);
  // 5 bytes a chunk: 2 whole elements (4 bytes).
  TensorMessages messages(nullptr, {bytes}, 2, 5, nullptr);
  std::vector<uint16_t> got(sent.size());
  TensorReceiver receiver(
      {absl::Span<char>(reinterpret_cast<char*>(got.data()), got.size() * 2)},
      2);
  std::vector<int64_t> offsets;
  while (!messages.done()) {
    DecodedTensorMessage message;
    ASSERT_THAT(message.Parse(messages.Next()), IsOk());
    offsets.push_back(message.offset());
    ASSERT_THAT(receiver.Take(message), IsOk());
  }
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_TRUE(receiver.complete());
  EXPECT_EQ(got, sent);

  std::vector<uint16_t> into(4);
  TensorReceiver strict(
      {absl::Span<char>(reinterpret_cast<char*>(into.data()), 8)}, 2);
  DecodedTensorMessage odd;
  ASSERT_THAT(odd.Parse(EncodeTensorMessage(nullptr, 0, 0, bytes.subspan(0, 3),
                                            nullptr)),
              IsOk());
  EXPECT_THAT(strict.Take(odd), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("not whole 16-bit")));
  DecodedTensorMessage late;
  ASSERT_THAT(late.Parse(EncodeTensorMessage(nullptr, 0, 1, bytes.subspan(0, 2),
                                             nullptr)),
              IsOk());
  EXPECT_THAT(strict.Take(late),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("starts at element 1, expected 0")));
  EXPECT_EQ(strict.received_bytes(), 0u);
}

// The tensor plane's chunk check in 2-byte elements.
TEST_F(TensorCodecTest, PlaneValidateChunk_SixteenBitElements) {
  using tensor_plane::ChunkHead;
  using tensor_plane::ValidateChunk;
  // A push of 10 elements: 20 bytes.
  EXPECT_THAT(ValidateChunk(ChunkHead{0, 4}, 20, 0, false, 2), IsOk());
  EXPECT_THAT(ValidateChunk(ChunkHead{2, 4}, 20, 4, false, 2), IsOk());
  EXPECT_THAT(ValidateChunk(ChunkHead{8, 4}, 20, 0, true, 2), IsOk());
  EXPECT_THAT(ValidateChunk(ChunkHead{0, 3}, 20, 0, false, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("whole 16-bit values")));
  EXPECT_THAT(ValidateChunk(ChunkHead{8, 8}, 20, 0, false, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("outside the shard's 10 elements")));
  EXPECT_THAT(
      ValidateChunk(ChunkHead{1, 4}, 20, 0, false, 2),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 0")));
  // fp32 as before: 2 bytes is no whole fp32 value.
  EXPECT_THAT(ValidateChunk(ChunkHead{0, 2}, 40, 0, false),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("whole fp32 values")));
}

}  // namespace
}  // namespace gradsync
