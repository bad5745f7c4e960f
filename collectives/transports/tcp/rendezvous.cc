#include "collectives/transports/tcp/rendezvous.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/transports/tcp/wire.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "security/secret.h"

namespace gradsync {
namespace {

constexpr absl::Duration kIoSlice = absl::Milliseconds(100);

std::string AddrKey(int rank) { return absl::StrCat("tcp/addr/", rank); }

// Waits for the rendezvous in slices so that a cancellation is noticed.
constexpr absl::Duration kCancelSlice = absl::Milliseconds(100);
// A connection has this long to send its handshake. Handshakes are read
// side by side, so an idle or slow connection delays no other.
constexpr absl::Duration kHandshakeTimeout = absl::Seconds(5);
// At most this many connections wait for their handshake at once; a new
// one pushes out the oldest (a peer sends its handshake at once, so a
// flood of idle connections cannot keep it out for long).
constexpr size_t kMaxArrivals = 64;

// An accepted connection whose handshake has not all arrived: first the
// Handshake, then (once answered) the connector's proof.
struct Arrival {
  Socket socket;
  std::string peer;
  absl::Time deadline;
  Handshake hs{};
  HandshakeAnswer answer{};  // sent once hs passed its checks
  HandshakeProof proof{};
  bool proving = false;  // answered; reading the proof
  size_t got = 0;        // bytes of hs, then of proof
  bool done = false;     // taken as a peer, or rejected
};

void DropDone(std::vector<Arrival>* arrivals) {
  arrivals->erase(std::remove_if(arrivals->begin(), arrivals->end(),
                                 [](const Arrival& a) { return a.done; }),
                  arrivals->end());
}

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
  auto refused = [&](uint32_t reply) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", peer, " at ", addr, " refused the connection from rank ", rank,
        ": ", HandshakeReplyName(static_cast<HandshakeReply>(reply)),
        " (we are ", DescribeHandshake(hs),
        "); check that both ranks belong to the same job and generation"));
  };
  HandshakeAnswer answer{};
  RETURN_IF_ERROR(s.RecvAll(&answer, sizeof(answer), deadline, nullptr));
  if (static_cast<HandshakeReply>(answer.reply) != HandshakeReply::kAccepted) {
    return refused(answer.reply);
  }
  // The listener proves the secret first: an impostor at a forged or stale
  // address learns nothing from us.
  if (!CheckHandshakeProof(options.job_secret, HandshakeRole::kAcceptor, hs,
                           answer.nonce, answer.proof)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "rank ", rank, ": the listener at ", addr, ", published as rank ", peer,
        " of job '", options.job_id,
        "', did not prove the job's secret; it is not a rank of this job (a "
        "stale or forged rendezvous entry, or an impostor). Refused it; check "
        "what else listens at that address"));
  }
  HandshakeProof proof{};
  const std::string mine = HandshakeProofOf(
      options.job_secret, HandshakeRole::kConnector, hs, answer.nonce);
  std::memcpy(proof.proof, mine.data(), kProofBytes);
  RETURN_IF_ERROR(s.SendAll(&proof, sizeof(proof), deadline, nullptr));
  uint32_t reply = 0;
  RETURN_IF_ERROR(s.RecvAll(&reply, sizeof(reply), deadline, nullptr));
  if (static_cast<HandshakeReply>(reply) != HandshakeReply::kAccepted) {
    return refused(reply);
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
  std::vector<Arrival> arrivals;
  auto reject = [&rejected, &options](Arrival& a, absl::string_view why) {
    rejected.push_back(absl::StrCat(a.peer, " ", why));
    if (options.on_rejected) options.on_rejected(rejected.back());
    a.done = true;
  };
  int pending = size - 1 - rank;
  while (pending > 0) {
    RETURN_IF_ERROR(CheckCancelled(options, rank));
    const absl::Time now = absl::Now();
    for (Arrival& a : arrivals) {
      if (a.deadline <= now) {
        reject(a, absl::StrCat("sent no valid handshake within ",
                               absl::FormatDuration(kHandshakeTimeout)));
      }
    }
    DropDone(&arrivals);
    if (now >= deadline) {
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
          rejected.empty()
              ? ""
              : absl::StrCat("; ", rejected.size(), " rejected connection(s): ",
                             absl::StrJoin(rejected, "; "))));
    }
    // Wait for a new connection or handshake bytes, at most until the
    // next deadline of any kind.
    absl::Time wake = std::min(deadline, now + kCancelSlice);
    std::vector<pollfd> fds = {{listener.fd(), POLLIN, 0}};
    for (const Arrival& a : arrivals) {
      fds.push_back({a.socket.fd(), POLLIN, 0});
      wake = std::min(wake, a.deadline);
    }
    const int ready = poll(fds.data(), fds.size(),
                           static_cast<int>(absl::ToInt64Milliseconds(
                               std::max(absl::ZeroDuration(), wake - now))) +
                               1);
    if (ready <= 0) continue;  // a timeout, or EINTR: re-check deadlines
    for (size_t i = 0; i < arrivals.size(); ++i) {
      if (fds[i + 1].revents == 0) continue;
      Arrival& a = arrivals[i];
      char* buffer = a.proving ? reinterpret_cast<char*>(&a.proof)
                               : reinterpret_cast<char*>(&a.hs);
      const size_t want = a.proving ? sizeof(a.proof) : sizeof(a.hs);
      const ssize_t n =
          recv(a.socket.fd(), buffer + a.got, want - a.got, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                     errno != EINTR)) {
        reject(a, a.proving ? absl::StrCat("(", DescribeHandshake(a.hs),
                                           ") closed the connection before "
                                           "proving the job secret")
                            : "closed the connection before its handshake");
        continue;
      }
      if (n < 0) continue;
      a.got += static_cast<size_t>(n);
      if (a.got < want) continue;
      a.got = 0;
      const absl::Time io_deadline = std::min(deadline, a.deadline);
      if (!a.proving) {
        // The fields first; a peer that passes them gets our proof and
        // challenge, and must answer with its own.
        HandshakeReply reply = CheckHandshake(a.hs, options.job_id, rank, size);
        if (reply == HandshakeReply::kAccepted &&
            sockets[a.hs.from_rank].valid()) {
          reply = HandshakeReply::kDuplicate;
        }
        a.answer.reply = static_cast<uint32_t>(reply);
        if (reply == HandshakeReply::kAccepted) {
          const std::string nonce = RandomSecret(kNonceBytes);
          std::memcpy(a.answer.nonce, nonce.data(), kNonceBytes);
          const std::string proof =
              HandshakeProofOf(options.job_secret, HandshakeRole::kAcceptor,
                               a.hs, a.answer.nonce);
          std::memcpy(a.answer.proof, proof.data(), kProofBytes);
        }
        const absl::Status sent =
            a.socket.SendAll(&a.answer, sizeof(a.answer), io_deadline, nullptr);
        if (reply != HandshakeReply::kAccepted) {
          reject(a, absl::StrCat("(", DescribeHandshake(a.hs),
                                 "): ", HandshakeReplyName(reply)));
        } else if (!sent.ok()) {
          a.done = true;
        } else {
          a.proving = true;
        }
        continue;
      }
      a.done = true;
      HandshakeReply reply =
          CheckHandshakeProof(options.job_secret, HandshakeRole::kConnector,
                              a.hs, a.answer.nonce, a.proof.proof)
              ? HandshakeReply::kAccepted
              : HandshakeReply::kBadProof;
      if (reply == HandshakeReply::kAccepted &&
          sockets[a.hs.from_rank].valid()) {
        reply = HandshakeReply::kDuplicate;
      }
      const uint32_t code = static_cast<uint32_t>(reply);
      const absl::Status sent =
          a.socket.SendAll(&code, sizeof(code), io_deadline, nullptr);
      if (reply != HandshakeReply::kAccepted) {
        reject(a, absl::StrCat("(", DescribeHandshake(a.hs),
                               "): ", HandshakeReplyName(reply)));
        continue;
      }
      if (!sent.ok()) continue;
      sockets[a.hs.from_rank] = std::move(a.socket);
      --pending;
    }
    DropDone(&arrivals);
    if ((fds[0].revents & POLLIN) == 0 || pending == 0) continue;
    absl::StatusOr<Socket> conn = listener.Accept(absl::Now());
    if (!conn.ok()) continue;  // gone again (or refused): poll once more
    Arrival arrival{*std::move(conn), "",
                    std::min(deadline, absl::Now() + kHandshakeTimeout)};
    arrival.peer = arrival.socket.PeerAddress();
    if (!arrival.socket
             .Configure(options.socket_buffer_bytes,
                        ReceiveBufferBytes(options), kIoSlice)
             .ok() ||
        !ApplyCongestionControl(arrival.socket, options).ok()) {
      reject(arrival, "could not be configured");
      continue;
    }
    if (arrivals.size() >= kMaxArrivals) {
      reject(arrivals.front(),
             "was pushed out by newer connections before "
             "its handshake");
      arrivals.erase(arrivals.begin());
    }
    arrivals.push_back(std::move(arrival));
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
