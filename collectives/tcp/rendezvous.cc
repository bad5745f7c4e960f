#include "collectives/tcp/rendezvous.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/tcp/wire.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"

namespace gradsync {
namespace {

constexpr absl::Duration kIoSlice = absl::Milliseconds(100);

std::string AddrKey(int rank) { return absl::StrCat("tcp/addr/", rank); }

// Waits for the rendezvous in slices so that a cancellation is noticed.
constexpr absl::Duration kCancelSlice = absl::Milliseconds(100);

[[nodiscard]] absl::Status CheckCancelled(const TcpOptions& options, int rank) {
  if (options.cancelled != nullptr && options.cancelled->load()) {
    return absl::CancelledError(
        absl::StrCat("rank ", rank, ": rendezvous cancelled"));
  }
  return absl::OkStatus();
}

[[nodiscard]] absl::StatusOr<std::string> GetAddress(Store* store, int peer,
                                                     const TcpOptions& options,
                                                     int rank,
                                                     absl::Time deadline) {
  while (true) {
    RETURN_IF_ERROR(CheckCancelled(options, rank));
    const absl::Time slice = std::min(deadline, absl::Now() + kCancelSlice);
    absl::StatusOr<std::string> addr = store->Get(AddrKey(peer), slice);
    if (addr.ok() || !absl::IsDeadlineExceeded(addr.status()) ||
        slice >= deadline) {
      return addr;
    }
  }
}

// Applies options.congestion_control, which CreateTcpCommunicator checked,
// to a connected socket (common/tcp_congestion.h); "auto" is best effort.
[[nodiscard]] absl::Status ApplyCongestionControl(const Socket& s,
                                                  const TcpOptions& options) {
  const std::string& policy = options.congestion_control;
  const std::string name = CongestionControlFor(policy, s.PeerIsLocal());
  if (name.empty()) return absl::OkStatus();
  absl::Status set = s.SetCongestionControl(name);
  return policy == "auto" ? absl::OkStatus() : set;
}

// Connects to lower rank `peer` and has our handshake accepted.
[[nodiscard]] absl::StatusOr<Socket> ConnectTo(Store* store, int rank, int peer,
                                               int size,
                                               const TcpOptions& options,
                                               absl::Time deadline) {
  ASSIGN_OR_RETURN(std::string addr,
                   GetAddress(store, peer, options, rank, deadline));
  std::string host;
  int port = 0;
  RETURN_IF_ERROR(SplitHostPort(addr, &host, &port));
  ASSIGN_OR_RETURN(Socket s,
                   Socket::Connect(host, port, deadline, options.cancelled));
  RETURN_IF_ERROR(s.Configure(options.socket_buffer_bytes,
                              ReceiveBufferBytes(options), kIoSlice));
  RETURN_IF_ERROR(ApplyCongestionControl(s, options));
  const Handshake hs = MakeHandshake(options.job_id, rank, peer, size);
  RETURN_IF_ERROR(s.SendAll(&hs, sizeof(hs), deadline, nullptr));
  uint32_t reply = 0;
  RETURN_IF_ERROR(s.RecvAll(&reply, sizeof(reply), deadline, nullptr));
  if (static_cast<HandshakeReply>(reply) != HandshakeReply::kAccepted) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", peer, " at ", addr, " refused the connection from rank ", rank,
        ": ", HandshakeReplyName(static_cast<HandshakeReply>(reply)),
        " (we are ", DescribeHandshake(hs),
        "); check that both ranks belong to the same job and generation"));
  }
  return s;
}

[[nodiscard]] absl::StatusOr<std::vector<Socket>> ConnectAllPeersOnce(
    Store* store, int rank, int size, const TcpOptions& options) {
  const absl::Time deadline = absl::Now() + options.connect_timeout;
  std::vector<Socket> sockets(size);
  if (size == 1) return sockets;

  ASSIGN_OR_RETURN(Socket listener,
                   Socket::Listen(options.listen_host, options.listen_port));
  ASSIGN_OR_RETURN(int port, listener.LocalPort());
  const std::string host = options.advertise_host.empty()
                               ? options.listen_host
                               : options.advertise_host;
  RETURN_IF_ERROR(store->Set(AddrKey(rank), absl::StrCat(host, ":", port)));

  for (int peer = 0; peer < rank; ++peer) {
    auto s = ConnectTo(store, rank, peer, size, options, deadline);
    if (!s.ok()) {
      return Annotate(s.status(), absl::StrCat("rank ", rank,
                                               ": connecting to rank ", peer));
    }
    sockets[peer] = *std::move(s);
  }

  std::vector<std::string> rejected;
  int pending = size - 1 - rank;
  while (pending > 0) {
    RETURN_IF_ERROR(CheckCancelled(options, rank));
    auto conn = listener.Accept(std::min(deadline, absl::Now() + kCancelSlice));
    if (absl::IsDeadlineExceeded(conn.status()) && absl::Now() < deadline) {
      continue;
    }
    if (!conn.ok()) {
      std::vector<int> missing;
      for (int p = rank + 1; p < size; ++p) {
        if (!sockets[p].valid()) missing.push_back(p);
      }
      return absl::DeadlineExceededError(absl::StrCat(
          "rank ", rank, ": rendezvous timed out after ",
          absl::FormatDuration(options.connect_timeout), "; rank(s) ",
          absl::StrJoin(missing, ", "),
          " never connected (not started, crashed, or given another store "
          "namespace)",
          rejected.empty() ? "" : "; rejected connections: ",
          absl::StrJoin(rejected, "; ")));
    }
    Socket s = *std::move(conn);
    Handshake hs{};
    const absl::Time hs_deadline =
        std::min(deadline, absl::Now() + absl::Seconds(5));
    if (!s.Configure(options.socket_buffer_bytes, ReceiveBufferBytes(options),
                     kIoSlice)
             .ok() ||
        !ApplyCongestionControl(s, options).ok() ||
        !s.RecvAll(&hs, sizeof(hs), hs_deadline, nullptr).ok()) {
      rejected.push_back(
          absl::StrCat(s.PeerAddress(), " sent no valid handshake"));
      continue;
    }
    HandshakeReply reply = CheckHandshake(hs, options.job_id, rank, size);
    if (reply == HandshakeReply::kAccepted && sockets[hs.from_rank].valid()) {
      reply = HandshakeReply::kDuplicate;
    }
    const uint32_t code = static_cast<uint32_t>(reply);
    const absl::Status sent =
        s.SendAll(&code, sizeof(code), hs_deadline, nullptr);
    if (reply != HandshakeReply::kAccepted) {
      rejected.push_back(absl::StrCat(s.PeerAddress(), " (",
                                      DescribeHandshake(hs),
                                      "): ", HandshakeReplyName(reply)));
      continue;
    }
    if (!sent.ok()) continue;
    sockets[hs.from_rank] = std::move(s);
    --pending;
  }
  return sockets;
}

}  // namespace

absl::StatusOr<std::vector<Socket>> ConnectAllPeers(Store* store, int rank,
                                                    int size,
                                                    const TcpOptions& options) {
  auto sockets = ConnectAllPeersOnce(store, rank, size, options);
  // A cancelled rendezvous also breaks the peers' half-open connections;
  // what they then report is a consequence, the cause is the cancellation.
  if (!sockets.ok() && !CheckCancelled(options, rank).ok()) {
    return CheckCancelled(options, rank);
  }
  return sockets;
}

}  // namespace gradsync
