#include "server/ps/transport/tensor_plane_client.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "server/ps/transport/tensor_codec.h"
#include "server/ps/transport/tensor_plane_handshake.h"
#include "server/ps/transport/tensor_plane_wire.h"

namespace gradsync {
namespace {

constexpr absl::Duration kIoSlice = absl::Milliseconds(100);

}  // namespace

absl::StatusOr<std::unique_ptr<TensorPlaneChannel>> TensorPlaneChannel::Connect(
    const std::string& address, const std::string& policy,
    const PlaneIdentity& identity, absl::Time deadline,
    const std::atomic<bool>* cancelled) {
  if (identity.job_id.empty() ||
      identity.job_id.size() > tensor_plane::kMaxJobIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a tensor plane connection for a job id of ", identity.job_id.size(),
        " bytes; 1 to ", tensor_plane::kMaxJobIdBytes));
  }
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
  std::unique_ptr<TensorPlaneChannel> channel(
      new TensorPlaneChannel(*std::move(socket), address));
  RETURN_IF_ERROR(channel->Handshake(identity, deadline));
  return channel;
}

absl::Status TensorPlaneChannel::ReadHead(absl::Time deadline,
                                          tensor_plane::ReplyHead* head,
                                          std::string* header) {
  char raw[tensor_plane::kReplyHeadBytes];
  absl::Status s = socket_.RecvAll(raw, sizeof(raw), deadline, &shut_down_);
  if (!s.ok()) return Named(s);
  absl::StatusOr<tensor_plane::ReplyHead> decoded =
      tensor_plane::DecodeReplyHead(raw);
  if (!decoded.ok()) return Named(decoded.status());
  *head = *decoded;
  header->assign(head->header_bytes, '\0');
  s = socket_.RecvAll(header->data(), header->size(), deadline, &shut_down_);
  return s.ok() ? s : Named(s);
}

absl::StatusOr<std::string> TensorPlaneChannel::ReadOkHeader(
    absl::Time deadline) {
  tensor_plane::ReplyHead head;
  std::string bytes;
  RETURN_IF_ERROR(ReadHead(deadline, &head, &bytes));
  if (head.code != 0) {
    return Named(absl::Status(static_cast<absl::StatusCode>(head.code), bytes));
  }
  return bytes;
}

absl::Status TensorPlaneChannel::Handshake(const PlaneIdentity& identity,
                                           absl::Time deadline) {
  const tensor_plane::Hello hello =
      tensor_plane::MakeHello(identity.job_id, identity.rank);
  std::string out(tensor_plane::kHelloBytes, '\0');
  tensor_plane::EncodeHello(hello, out.data());
  out += identity.job_id;
  absl::Status s =
      socket_.SendAll(out.data(), out.size(), deadline, &shut_down_);
  if (!s.ok()) return Named(s);
  ASSIGN_OR_RETURN(const std::string challenge, ReadOkHeader(deadline));
  if (challenge.size() != tensor_plane::kChallengeBytes) {
    return Named(absl::InvalidArgumentError(absl::StrCat(
        "a handshake challenge of ", challenge.size(), " bytes, not ",
        tensor_plane::kChallengeBytes, "; is it a gradsync of this version?")));
  }
  const absl::string_view nonce =
      absl::string_view(challenge).substr(0, tensor_plane::kNonceBytes);
  const absl::string_view proof =
      absl::string_view(challenge).substr(tensor_plane::kNonceBytes);
  if (!tensor_plane::CheckPlaneProof(identity.token,
                                     tensor_plane::PlaneRole::kServer, hello,
                                     identity.job_id, nonce, proof)) {
    return Named(absl::PermissionDeniedError(absl::StrCat(
        "the server did not prove job ", identity.job_id,
        "'s PS token, so it is not that job's parameter server (a stale "
        "address, or a server of another coordinator); no tensor was "
        "sent to it")));
  }
  const std::string mine =
      tensor_plane::PlaneProof(identity.token, tensor_plane::PlaneRole::kClient,
                               hello, identity.job_id, nonce);
  s = socket_.SendAll(mine.data(), mine.size(), deadline, &shut_down_);
  if (!s.ok()) return Named(s);
  return ReadOkHeader(deadline).status();
}

absl::StatusOr<uint64_t> TensorPlaneChannel::StartProbe(
    const tensor_plane::ProbeHead& probe, absl::Time deadline,
    const std::atomic<bool>* abort) {
  char head[tensor_plane::kProbeHeadBytes];
  tensor_plane::EncodeProbeHead(probe, head);
  absl::Status s = socket_.SendAll(head, sizeof(head), deadline, abort);
  if (!s.ok()) return Named(s);
  tensor_plane::ReplyHead reply;
  std::string message;
  RETURN_IF_ERROR(ReadHead(deadline, &reply, &message));
  if (reply.code != 0) {
    return Named(
        absl::Status(static_cast<absl::StatusCode>(reply.code), message));
  }
  return reply.param_bytes;
}

absl::StatusOr<RoundTripTimes> TensorPlaneChannel::ProbeRoundTrips(
    int count, absl::Time deadline, const std::atomic<bool>* abort) {
  if (abort == nullptr) abort = &shut_down_;
  tensor_plane::ProbeHead probe;
  probe.op = tensor_plane::ProbeOp::kRoundTrips;
  probe.round_trips = static_cast<uint32_t>(count);
  RETURN_IF_ERROR(StartProbe(probe, deadline, abort).status());
  absl::StatusOr<RoundTripTimes> times =
      TimeRoundTrips(socket_, count, deadline, abort);
  return times.ok() ? times : Named(times.status());
}

absl::StatusOr<double> TensorPlaneChannel::ProbeUpload(
    int64_t bytes, absl::Time deadline, const std::atomic<bool>* abort) {
  if (abort == nullptr) abort = &shut_down_;
  tensor_plane::ProbeHead probe;
  probe.op = tensor_plane::ProbeOp::kUpload;
  probe.bytes = bytes;
  RETURN_IF_ERROR(StartProbe(probe, deadline, abort).status());
  if (absl::Status s = SendFiller(socket_, bytes, deadline, abort); !s.ok()) {
    return Named(s);
  }
  ASSIGN_OR_RETURN(const std::string answer, ReadOkHeader(deadline));
  if (answer.size() != tensor_plane::kGoodputBytes) {
    return Named(absl::InternalError(absl::StrCat(
        "a probe's answer of ", answer.size(), " bytes, not ",
        tensor_plane::kGoodputBytes, "; is it a gradsync of this version?")));
  }
  return tensor_plane::DecodeGoodput(answer.data());
}

absl::StatusOr<double> TensorPlaneChannel::ProbeDownload(
    int64_t bytes, absl::Time deadline, const std::atomic<bool>* abort) {
  if (abort == nullptr) abort = &shut_down_;
  tensor_plane::ProbeHead probe;
  probe.op = tensor_plane::ProbeOp::kDownload;
  probe.bytes = bytes;
  ASSIGN_OR_RETURN(const uint64_t coming, StartProbe(probe, deadline, abort));
  if (coming != static_cast<uint64_t>(bytes)) {
    return Named(absl::InternalError(
        absl::StrCat("the server offered ", coming, " bytes for a probe of ",
                     bytes, "; is it a gradsync of this version?")));
  }
  absl::StatusOr<double> goodput =
      ReceiveTimed(socket_, bytes, deadline, abort);
  return goodput.ok() ? goodput : Named(goodput.status());
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
  return SendChunk(offset, AsBytes(data), deadline);
}

absl::Status TensorPlaneChannel::SendChunk(int64_t offset,
                                           absl::Span<const char> data,
                                           absl::Time deadline) {
  char head[tensor_plane::kChunkHeadBytes];
  tensor_plane::EncodeChunkHead({offset, data.size()}, head);
  absl::Status s = socket_.SendAll(head, sizeof(head), deadline, &shut_down_);
  if (s.ok()) {
    s = socket_.SendAll(data.data(), data.size(), deadline, &shut_down_);
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
  return ReadReply(header,
                   absl::Span<char>(reinterpret_cast<char*>(params.data()),
                                    params.size() * sizeof(float)),
                   deadline);
}

absl::Status TensorPlaneChannel::ReadReply(ps::PullHeader* header,
                                           absl::Span<char> params,
                                           absl::Time deadline) {
  tensor_plane::ReplyHead head;
  std::string bytes;
  RETURN_IF_ERROR(ReadHead(deadline, &head, &bytes));
  if (head.code != 0) {
    // The server's own error, which names the rank, step and shard.
    return absl::Status(static_cast<absl::StatusCode>(head.code), bytes);
  }
  if (!header->ParseFromString(bytes)) {
    return Named(
        absl::InvalidArgumentError("a reply whose PullHeader does not parse"));
  }
  if (head.param_bytes != params.size()) {
    return Named(absl::InvalidArgumentError(
        absl::StrCat("a reply of ", head.param_bytes,
                     " parameter bytes for a shard of ", params.size(),
                     "; the server's shard does not match the job's layout")));
  }
  const absl::Status s =
      socket_.RecvAll(params.data(), head.param_bytes, deadline, &shut_down_);
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
