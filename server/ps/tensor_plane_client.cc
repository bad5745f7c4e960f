#include "server/ps/tensor_plane_client.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "server/ps/tensor_plane_wire.h"

namespace gradsync {
namespace {

constexpr absl::Duration kIoSlice = absl::Milliseconds(100);

}  // namespace

absl::StatusOr<std::unique_ptr<TensorPlaneChannel>> TensorPlaneChannel::Connect(
    const std::string& address, const std::string& policy, absl::Time deadline,
    const std::atomic<bool>* cancelled) {
  std::string host;
  int port = 0;
  RETURN_IF_ERROR(SplitHostPort(address, &host, &port));
  absl::StatusOr<Socket> socket =
      Socket::Connect(host, port, deadline, cancelled);
  if (!socket.ok()) {
    return Annotate(socket.status(),
                    absl::StrCat("the PS tensor plane at ", address));
  }
  RETURN_IF_ERROR(socket->Configure(0, 0, kIoSlice));
  const std::string algorithm =
      CongestionControlFor(policy, socket->PeerIsLocal());
  if (!algorithm.empty()) {
    // Best effort, as the ring's policy: the default stays if refused.
    (void)socket->SetCongestionControl(algorithm);
  }
  return std::unique_ptr<TensorPlaneChannel>(
      new TensorPlaneChannel(*std::move(socket), address));
}

absl::Status TensorPlaneChannel::Named(const absl::Status& status) const {
  if (shut_down_.load()) {
    return absl::AbortedError(absl::StrCat("the PS tensor plane connection to ",
                                           address_, " was shut down"));
  }
  return Annotate(status, absl::StrCat("the PS tensor plane at ", address_));
}

absl::Status TensorPlaneChannel::SendHeader(const ps::PushHeader& header,
                                            absl::Time deadline) {
  const std::string bytes = header.SerializeAsString();
  tensor_plane::RequestHead head;
  head.header_bytes = static_cast<uint32_t>(bytes.size());
  std::string out(tensor_plane::kRequestHeadBytes, '\0');
  tensor_plane::EncodeRequestHead(head, out.data());
  out += bytes;
  const absl::Status s =
      socket_.SendAll(out.data(), out.size(), deadline, &shut_down_);
  return s.ok() ? s : Named(s);
}

absl::Status TensorPlaneChannel::SendChunk(int64_t offset,
                                           absl::Span<const float> data,
                                           absl::Time deadline) {
  char head[tensor_plane::kChunkHeadBytes];
  tensor_plane::EncodeChunkHead({offset, data.size() * sizeof(float)}, head);
  absl::Status s = socket_.SendAll(head, sizeof(head), deadline, &shut_down_);
  if (s.ok()) {
    s = socket_.SendAll(data.data(), data.size() * sizeof(float), deadline,
                        &shut_down_);
  }
  return s.ok() ? s : Named(s);
}

absl::Status TensorPlaneChannel::SendTrailer(absl::Span<const double> scalars,
                                             absl::Time deadline) {
  const absl::Status s = socket_.SendAll(
      scalars.data(), scalars.size() * sizeof(double), deadline, &shut_down_);
  return s.ok() ? s : Named(s);
}

absl::Status TensorPlaneChannel::ReadReply(ps::PullHeader* header,
                                           absl::Span<float> params,
                                           absl::Time deadline) {
  char raw[tensor_plane::kReplyHeadBytes];
  absl::Status s = socket_.RecvAll(raw, sizeof(raw), deadline, &shut_down_);
  if (!s.ok()) return Named(s);
  absl::StatusOr<tensor_plane::ReplyHead> head =
      tensor_plane::DecodeReplyHead(raw);
  if (!head.ok()) return Named(head.status());
  std::string bytes(head->header_bytes, '\0');
  s = socket_.RecvAll(bytes.data(), bytes.size(), deadline, &shut_down_);
  if (!s.ok()) return Named(s);
  if (head->code != 0) {
    // The server's own error, which names the rank, step and shard.
    return absl::Status(static_cast<absl::StatusCode>(head->code), bytes);
  }
  if (!header->ParseFromString(bytes)) {
    return Named(
        absl::InvalidArgumentError("a reply whose PullHeader does not parse"));
  }
  if (head->param_bytes != params.size() * sizeof(float)) {
    return Named(absl::InvalidArgumentError(absl::StrCat(
        "a reply of ", head->param_bytes, " parameter bytes for a shard of ",
        params.size() * sizeof(float),
        "; the server's shard does not match the job's layout")));
  }
  s = socket_.RecvAll(params.data(), head->param_bytes, deadline, &shut_down_);
  return s.ok() ? s : Named(s);
}

bool TensorPlaneChannel::PeerClosed() const {
  return TcpPeerClosed(socket_.fd());
}

void TensorPlaneChannel::Shutdown() {
  shut_down_.store(true);
  socket_.Shutdown();
}

}  // namespace gradsync
