#include "server/ps/daemon/tensor_plane_connection.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/transports/tcp/link_timing.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "security/secret.h"
#include "server/ps/daemon/call_waits.h"
#include "server/ps/daemon/ps_proto.h"
#include "server/ps/transport/tensor_plane_handshake.h"
#include "server/ps/transport/tensor_plane_probe.h"
#include "server/ps/transport/tensor_plane_wire.h"

namespace gradsync {
namespace {

using tensor_plane::ChunkHead;
using tensor_plane::kChunkHeadBytes;
using tensor_plane::kReplyHeadBytes;
using tensor_plane::kRequestHeadBytes;
using tensor_plane::ReplyHead;

// How long an error reply waits for the client to close before the
// connection closes anyway.
constexpr absl::Duration kDrainTime = absl::Seconds(5);

// `status` naming the request it failed.
[[nodiscard]] absl::Status ForRequest(const absl::Status& status, int rank,
                                      int64_t step, int shard) {
  return Annotate(status,
                  absl::StrCat("tensor plane PushPull from rank ", rank,
                               " for step ", step, " (shard ", shard, ")"));
}

}  // namespace

TensorPlaneConnection::TensorPlaneConnection(PsService* service, Socket socket,
                                             absl::Duration idle_timeout,
                                             absl::Duration handshake_timeout)
    : service_(service),
      socket_(std::move(socket)),
      idle_timeout_(idle_timeout),
      handshake_timeout_(handshake_timeout) {
  reader_ = std::thread([this] {
    ReadLoop();
    threads_done_.fetch_add(1);
  });
}

TensorPlaneConnection::~TensorPlaneConnection() {
  Stop();
  {
    absl::MutexLock lock(&mu_);
    reader_done_ = true;
  }
  // Only the reader starts the writer: once it has ended, writer_ stays.
  reader_.join();
  if (writer_.joinable()) writer_.join();
}

void TensorPlaneConnection::Stop() {
  stopping_.store(true);
  socket_.Shutdown();
}

void TensorPlaneConnection::StartWriter() {
  if (writer_started_.exchange(true)) return;
  writer_ = std::thread([this] {
    WriteLoop();
    threads_done_.fetch_add(1);
  });
}

absl::Status TensorPlaneConnection::Alive() const {
  if (stopping_.load()) {
    return absl::AbortedError("the parameter server's tensor plane is closing");
  }
  if (TcpPeerClosed(socket_.fd())) {
    return absl::CancelledError("the client went away");
  }
  return absl::OkStatus();
}

void TensorPlaneConnection::Enqueue(Reply reply) {
  absl::MutexLock lock(&mu_);
  replies_.push_back(std::move(reply));
}

absl::Status TensorPlaneConnection::Handshake() {
  const absl::Time deadline = absl::Now() + handshake_timeout_;
  // A client that goes silent or away gets no reply: nothing to tell it.
  // The magic first, so that another protocol's shorter request (an HTTP
  // probe) is told at once rather than when the deadline passes.
  char raw[tensor_plane::kHelloBytes] = {};
  RETURN_IF_ERROR(socket_.RecvAll(raw, 4, deadline, &stopping_));
  if (!tensor_plane::StartsWithHelloMagic(raw)) {
    return SendError(tensor_plane::DecodeHello(raw).status());
  }
  RETURN_IF_ERROR(
      socket_.RecvAll(raw + 4, sizeof(raw) - 4, deadline, &stopping_));
  absl::StatusOr<tensor_plane::Hello> hello = tensor_plane::DecodeHello(raw);
  if (!hello.ok()) return SendError(hello.status());
  std::string job(hello->job_bytes, '\0');
  RETURN_IF_ERROR(
      socket_.RecvAll(job.data(), job.size(), deadline, &stopping_));
  absl::StatusOr<std::string> token = service_->JobToken(job);
  if (!token.ok()) return SendError(token.status());
  // The server proves first, with a nonce of its own: a recorded client
  // proof is worthless on another connection.
  const std::string nonce = RandomSecret(tensor_plane::kNonceBytes);
  ReplyHead challenge;
  challenge.header_bytes = tensor_plane::kChallengeBytes;
  std::string out(kReplyHeadBytes, '\0');
  tensor_plane::EncodeReplyHead(challenge, out.data());
  out += nonce;
  out += tensor_plane::PlaneProof(*token, tensor_plane::PlaneRole::kServer,
                                  *hello, job, nonce);
  RETURN_IF_ERROR(
      socket_.SendAll(out.data(), out.size(), deadline, &stopping_));
  char proof[tensor_plane::kProofBytes];
  RETURN_IF_ERROR(socket_.RecvAll(proof, sizeof(proof), deadline, &stopping_));
  if (!tensor_plane::CheckPlaneProof(*token, tensor_plane::PlaneRole::kClient,
                                     *hello, job, nonce,
                                     absl::string_view(proof, sizeof(proof)))) {
    return SendError(absl::PermissionDeniedError(absl::StrCat(
        "the tensor plane connection of rank ", hello->rank, " for job ", job,
        " did not prove the job's PS token; only the job's own ranks (with "
        "the token their assignment brought) may use its shards")));
  }
  ReplyHead verdict;
  std::string accepted(kReplyHeadBytes, '\0');
  tensor_plane::EncodeReplyHead(verdict, accepted.data());
  RETURN_IF_ERROR(
      socket_.SendAll(accepted.data(), accepted.size(), deadline, &stopping_));
  job_ = std::move(job);
  return absl::OkStatus();
}

void TensorPlaneConnection::ReadLoop() {
  if (Handshake().ok()) {
    authenticated_.store(true);
    StartWriter();
  } else {
    absl::MutexLock lock(&mu_);
    reader_done_ = true;
    return;
  }
  char head[kRequestHeadBytes];
  while (true) {
    // Between requests the connection may idle (a job's compute, a pause).
    if (!socket_
             .RecvAll(head, sizeof(head), absl::Now() + idle_timeout_,
                      &stopping_)
             .ok()) {
      break;  // the client closed, idled out, or the server is closing
    }
    bool failed;
    {
      absl::MutexLock lock(&mu_);
      failed = failed_;
    }
    if (failed) {  // an error reply went out: let the client read it
      Drain();
      break;
    }
    absl::Status status;
    if (tensor_plane::StartsWithProbeMagic(head)) {
      status = ServeProbe(head);
    } else {
      absl::StatusOr<tensor_plane::RequestHead> decoded =
          tensor_plane::DecodeRequestHead(head);
      status =
          decoded.ok() ? TakeRequest(decoded->header_bytes) : decoded.status();
    }
    if (!status.ok()) {
      Reply failed;
      failed.error = status;
      Enqueue(std::move(failed));
      Drain();
      break;
    }
  }
  absl::MutexLock lock(&mu_);
  reader_done_ = true;
}

absl::Status TensorPlaneConnection::TakeRequest(uint32_t header_bytes) {
  if (probed_) {
    return absl::FailedPreconditionError(
        "a push on a tensor plane connection that probed links; a job's "
        "ranks connect for their pushes");
  }
  pushed_ = true;
  std::string bytes(header_bytes, '\0');
  RETURN_IF_ERROR(socket_.RecvAll(bytes.data(), bytes.size(),
                                  absl::Now() + idle_timeout_, &stopping_));
  ps::PushHeader header;
  if (!header.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        "a tensor plane request whose PushHeader does not parse");
  }
  const int rank = header.rank();
  const int64_t step = header.step();
  auto named = [&](const absl::Status& s) {
    return ForRequest(s, rank, step, header.shard());
  };
  if (header.job_id() != job_) {
    // The handshake proved job_'s token, and no other.
    return absl::PermissionDeniedError(
        absl::StrCat("a tensor plane request for job ", header.job_id(),
                     "'s shards on a connection that proved job ", job_,
                     "'s token; each job's ranks connect for themselves"));
  }
  absl::StatusOr<std::shared_ptr<PsShard>> found =
      service_->FindShard(header.job_id(), header.shard());
  if (!found.ok()) return named(found.status());
  std::shared_ptr<PsShard> shard = *std::move(found);
  const absl::Time deadline = absl::Now() + shard->config().max_wait;
  Reply reply;
  reply.shard = shard;
  reply.rank = rank;
  reply.step = step;
  if (header.pull_only()) {
    reply.pull_step = step;
    Enqueue(std::move(reply));
    return absl::OkStatus();
  }
  PushOptions options;
  options.descending = header.descending();
  absl::StatusOr<std::vector<double>> scalars = PushScalarsFromHeader(header);
  if (!scalars.ok()) return named(scalars.status());
  options.scalars = *std::move(scalars);
  options.switch_epoch = header.switch_epoch();
  absl::StatusOr<double> learning_rate = PushLearningRate(header);
  if (!learning_rate.ok()) return named(learning_rate.status());
  options.learning_rate = *learning_rate;
  absl::StatusOr<PsShard::Push> push = WaitInSlices(
      deadline, [this] { return Alive(); },
      [&](absl::Time d) { return shard->BeginPush(rank, step, d, options); });
  if (!push.ok()) return named(push.status());
  if (absl::Status s =
          ReceiveGradient(header, shard->config().wire_dtype, &*push, deadline);
      !s.ok()) {
    return named(s);  // the push is abandoned: the shard is unchanged
  }
  if (absl::Status s = shard->Commit(*std::move(push), deadline); !s.ok()) {
    return named(s);
  }
  reply.pull_step = step + 1;
  Enqueue(std::move(reply));
  return absl::OkStatus();
}

absl::Status TensorPlaneConnection::ServeProbe(const char* start) {
  if (pushed_) {
    return absl::FailedPreconditionError(
        "a link probe on a tensor plane connection that carried pushes; a "
        "probe connects for itself");
  }
  probed_ = true;
  // A whole op may take as long as the connection may idle.
  const absl::Time deadline = absl::Now() + idle_timeout_;
  char raw[tensor_plane::kProbeHeadBytes];
  std::memcpy(raw, start, kRequestHeadBytes);
  RETURN_IF_ERROR(socket_.RecvAll(raw + kRequestHeadBytes,
                                  sizeof(raw) - kRequestHeadBytes, deadline,
                                  &stopping_));
  ASSIGN_OR_RETURN(const tensor_plane::ProbeHead probe,
                   tensor_plane::DecodeProbeHead(raw));
  ReplyHead accepted;
  if (probe.op == tensor_plane::ProbeOp::kDownload) {
    accepted.param_bytes = static_cast<uint64_t>(probe.bytes);
  }
  char out[kReplyHeadBytes + tensor_plane::kGoodputBytes];
  tensor_plane::EncodeReplyHead(accepted, out);
  RETURN_IF_ERROR(socket_.SendAll(out, kReplyHeadBytes, deadline, &stopping_));
  switch (probe.op) {
    case tensor_plane::ProbeOp::kRoundTrips:
      return EchoRoundTrips(socket_, static_cast<int>(probe.round_trips),
                            deadline, &stopping_);
    case tensor_plane::ProbeOp::kUpload: {
      ASSIGN_OR_RETURN(
          const double goodput,
          ReceiveTimed(socket_, probe.bytes, deadline, &stopping_));
      ReplyHead answer;
      answer.header_bytes = tensor_plane::kGoodputBytes;
      tensor_plane::EncodeReplyHead(answer, out);
      tensor_plane::EncodeGoodput(goodput, out + kReplyHeadBytes);
      return socket_.SendAll(out, sizeof(out), deadline, &stopping_);
    }
    case tensor_plane::ProbeOp::kDownload:
      return SendFiller(socket_, probe.bytes, deadline, &stopping_);
  }
  return absl::InternalError("a probe op DecodeProbeHead let through");
}

absl::Status TensorPlaneConnection::ReceiveGradient(
    const ps::PushHeader& header, DataType wire_dtype, PsShard::Push* push,
    absl::Time deadline) {
  const size_t size = push->size_bytes();
  char head[kChunkHeadBytes];
  while (push->filled_bytes() < size) {
    RETURN_IF_ERROR(socket_.RecvAll(head, sizeof(head), deadline, &stopping_));
    const ChunkHead chunk = tensor_plane::DecodeChunkHead(head);
    RETURN_IF_ERROR(tensor_plane::ValidateChunk(
        chunk, size, push->filled_bytes(), push->descending(),
        DataTypeSize(wire_dtype)));
    // Straight into the shard's staging buffer: the first unfilled bytes
    // (ascending) or the last (descending).
    const absl::Span<char> unfilled = push->unfilled();
    char* into = push->descending()
                     ? unfilled.data() + unfilled.size() - chunk.bytes
                     : unfilled.data();
    RETURN_IF_ERROR(socket_.RecvAll(into, chunk.bytes, deadline, &stopping_));
    RETURN_IF_ERROR(push->MarkFilled(chunk.bytes));
  }
  if (header.trailer_scalars() > 0) {
    std::vector<double> scalars(static_cast<size_t>(header.trailer_scalars()));
    RETURN_IF_ERROR(socket_.RecvAll(
        scalars.data(), scalars.size() * sizeof(double), deadline, &stopping_));
    RETURN_IF_ERROR(push->SetScalars(std::move(scalars)));
  }
  return absl::OkStatus();
}

void TensorPlaneConnection::Drain() {
  const absl::Time until = absl::Now() + kDrainTime;
  std::vector<char> scratch(64 << 10);
  while (!stopping_.load() && absl::Now() < until) {
    const ssize_t n = ::recv(socket_.fd(), scratch.data(), scratch.size(), 0);
    if (n == 0) return;  // the client closed
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return;
    }
  }
}

void TensorPlaneConnection::WriteLoop() {
  while (true) {
    Reply reply;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](TensorPlaneConnection* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(c->mu_) {
            return !c->replies_.empty() || c->reader_done_;
          },
          this));
      if (replies_.empty() || stopping_.load()) return;
      reply = std::move(replies_.front());
      replies_.pop_front();
    }
    if (!SendReply(reply).ok()) return;
  }
}

absl::Status TensorPlaneConnection::SendReply(const Reply& reply) {
  if (!reply.error.ok()) return SendError(reply.error);
  const absl::Time deadline = absl::Now() + reply.shard->config().max_wait;
  absl::StatusOr<ShardViewRef> view = WaitInSlices(
      deadline, [this] { return Alive(); },
      [&](absl::Time d) {
        return reply.shard->Pull(reply.rank, reply.pull_step, d);
      });
  if (!view.ok()) {
    return SendError(ForRequest(view.status(), reply.rank, reply.step,
                                reply.shard->config().shard));
  }
  const std::string header =
      PullHeaderFromView(**view, *reply.shard).SerializeAsString();
  ReplyHead head;
  head.header_bytes = static_cast<uint32_t>(header.size());
  // A 16-bit job's pull: the parameters rounded once on the shard.
  const absl::Span<const char> params = (*view)->PullBytes();
  head.param_bytes = params.size();
  std::string out(kReplyHeadBytes, '\0');
  tensor_plane::EncodeReplyHead(head, out.data());
  out += header;
  RETURN_IF_ERROR(
      socket_.SendAll(out.data(), out.size(), deadline, &stopping_));
  // From the shard's own memory; the view keeps it unchanged until sent.
  return socket_.SendAll(params.data(), head.param_bytes, deadline, &stopping_);
}

absl::Status TensorPlaneConnection::SendError(const absl::Status& error) {
  {
    absl::MutexLock lock(&mu_);
    failed_ = true;
  }
  const std::string out = tensor_plane::EncodeErrorReply(error);
  // An unauthenticated connection's error goes out briefly: it is no
  // reason to hold a thread.
  const absl::Duration wait =
      authenticated() ? kDrainTime : absl::Milliseconds(500);
  const absl::Status sent =
      socket_.SendAll(out.data(), out.size(), absl::Now() + wait, &stopping_);
  // The reply, then the end of our side: the client reads the error, not
  // a reset.
  ::shutdown(socket_.fd(), SHUT_WR);
  return sent.ok() ? error : sent;
}

}  // namespace gradsync
