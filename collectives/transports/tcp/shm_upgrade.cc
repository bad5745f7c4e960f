#include "collectives/transports/tcp/shm_upgrade.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "collectives/host_identity.h"
#include "collectives/transports/shm/shm_pair.h"
#include "collectives/transports/shm/shm_segment.h"
#include "collectives/transports/tcp/connection.h"
#include "collectives/transports/tcp/wire.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

static_assert(kShmOfferTokenBytes == kShmTokenBytes);

[[nodiscard]] absl::Status Named(const absl::Status& s, int rank, int peer,
                                 absl::string_view what) {
  return absl::Status(s.code(),
                      absl::StrCat("rank ", rank, ": ", what, " rank ", peer,
                                   " to choose the transport: ", s.message()));
}

}  // namespace

absl::StatusOr<std::vector<std::unique_ptr<Pair>>> MakePairs(
    std::vector<Socket> sockets, int rank, const TcpOptions& options,
    const std::atomic<bool>* aborted) {
  const int size = static_cast<int>(sockets.size());
  const absl::Time deadline = absl::Now() + options.connect_timeout;
  const std::string host_id =
      options.host_id.empty() ? LocalHostIdentity() : options.host_id;
  const ShmHello mine =
      MakeShmHello(options.transport != Transport::kTcp, host_id);
  std::vector<bool> upgrade(size, false);

  // Phase 1: hellos out, then in.
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    absl::Status s = sockets[p].SendAll(&mine, sizeof(mine), deadline, nullptr);
    if (!s.ok()) return Named(s, rank, p, "sending our host identity to");
  }
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    ShmHello theirs{};
    absl::Status s =
        sockets[p].RecvAll(&theirs, sizeof(theirs), deadline, nullptr);
    if (!s.ok()) return Named(s, rank, p, "reading the host identity of");
    if (theirs.magic != kShmHelloMagic || theirs.version != kTcpWireVersion ||
        theirs.host_id_len > kMaxHostIdBytes) {
      return absl::DataLossError(absl::StrCat(
          "rank ", rank, ": rank ", p,
          " sent garbage where its host identity was expected; are both "
          "ranks the same gradsync build?"));
    }
    const bool same_host =
        absl::string_view(theirs.host_id, theirs.host_id_len) ==
        absl::string_view(mine.host_id, mine.host_id_len);
    upgrade[p] = mine.allows_shm && theirs.allows_shm && same_host;
    if (options.transport == Transport::kShm && !upgrade[p]) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rank ", rank, ": transport shm was asked for, but rank ", p,
          !theirs.allows_shm
              ? " does not allow shared memory (its transport "
                "is tcp)"
              : absl::StrCat(
                    " is on another host ('",
                    absl::string_view(theirs.host_id, theirs.host_id_len),
                    "', we are '", host_id, "')"),
          "; use transport auto or tcp"));
    }
  }

  // Phase 2: the lower rank of each upgraded pair offers a segment.
  std::vector<std::unique_ptr<ShmSegment>> segments(size);
  for (int p = rank + 1; p < size; ++p) {
    if (!upgrade[p]) continue;
    ShmOffer offer;
    std::memset(&offer, 0, sizeof(offer));
    offer.magic = kShmHelloMagic;
    auto seg = ShmSegment::Create(options.shm_ring_bytes);
    if (seg.ok()) {
      segments[p] = *std::move(seg);
      offer.ok = 1;
      std::memcpy(offer.name, segments[p]->name().data(),
                  std::min(kMaxShmNameBytes - 1, segments[p]->name().size()));
      std::memcpy(offer.token, segments[p]->token().data(), kShmTokenBytes);
    } else if (options.transport == Transport::kShm) {
      return Annotate(
          seg.status(),
          absl::StrCat("rank ", rank, ": shared memory for rank ", p));
    }
    absl::Status s =
        sockets[p].SendAll(&offer, sizeof(offer), deadline, nullptr);
    if (!s.ok()) return Named(s, rank, p, "offering shared memory to");
  }

  // Phase 3: the higher rank maps it and answers.
  for (int p = 0; p < rank; ++p) {
    if (!upgrade[p]) continue;
    ShmOffer offer{};
    absl::Status s =
        sockets[p].RecvAll(&offer, sizeof(offer), deadline, nullptr);
    if (!s.ok()) return Named(s, rank, p, "reading the shared memory offer of");
    if (offer.magic != kShmHelloMagic) {
      return absl::DataLossError(absl::StrCat(
          "rank ", rank, ": rank ", p,
          " sent garbage where its shared memory offer was expected"));
    }
    ShmAck ack{kShmHelloMagic, 0};
    absl::Status opened = absl::UnavailableError(
        absl::StrCat("rank ", p, " could not create a segment"));
    if (offer.ok == 1) {
      offer.name[kMaxShmNameBytes - 1] = '\0';
      auto seg = ShmSegment::Open(
          offer.name, std::string(reinterpret_cast<const char*>(offer.token),
                                  kShmTokenBytes));
      opened = seg.status();
      if (seg.ok()) {
        segments[p] = *std::move(seg);
        ack.ok = 1;
      }
    }
    if (!opened.ok() && options.transport == Transport::kShm) {
      return Annotate(
          opened, absl::StrCat("rank ", rank, ": shared memory with rank ", p));
    }
    s = sockets[p].SendAll(&ack, sizeof(ack), deadline, nullptr);
    if (!s.ok()) return Named(s, rank, p, "answering the offer of");
    upgrade[p] = ack.ok == 1;
  }

  // Phase 4: the lower rank learns the outcome and unlinks the name.
  for (int p = rank + 1; p < size; ++p) {
    if (!upgrade[p]) continue;
    ShmAck ack{};
    absl::Status s = sockets[p].RecvAll(&ack, sizeof(ack), deadline, nullptr);
    if (!s.ok()) return Named(s, rank, p, "reading the answer of");
    if (segments[p]) segments[p]->Unlink();
    upgrade[p] = ack.magic == kShmHelloMagic && ack.ok == 1 && segments[p];
    if (!upgrade[p] && options.transport == Transport::kShm) {
      return absl::FailedPreconditionError(absl::StrCat(
          "rank ", rank, ": rank ", p,
          " could not map the shared memory segment; use transport auto or "
          "tcp"));
    }
  }

  std::vector<std::unique_ptr<Pair>> pairs(size);
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    if (upgrade[p]) {
      pairs[p] =
          std::make_unique<ShmPair>(std::move(segments[p]), p > rank ? 0 : 1, p,
                                    sockets[p].Release(), aborted);
    } else {
      pairs[p] =
          std::make_unique<Connection>(std::move(sockets[p]), p, aborted);
    }
    if (options.on_transport) options.on_transport(p, pairs[p]->transport());
  }
  return pairs;
}

}  // namespace gradsync
