#include "collectives/algorithms/collective_context.h"

#include <algorithm>

#include "common/status_macros.h"

namespace gradsync {

size_t CollectiveContext::segment_elements() const {
  return std::max<size_t>(1, segment_bytes / element_size());
}

absl::Status CollectiveContext::ExchangeHeaders(
    absl::Span<const int> send_to, absl::Span<const int> recv_from) {
  for (int p : send_to) Send(p, &header, sizeof(header));
  for (int p : recv_from) {
    CollectiveHeader got{};
    RETURN_IF_ERROR(Recv(p, &got, sizeof(got)));
    RETURN_IF_ERROR(CheckHeader(header, got, p));
  }
  return absl::OkStatus();
}

uint64_t CollectiveContext::Send(int peer, const void* data, size_t bytes) {
  return peers[peer]->Send(data, bytes, deadline);
}

absl::Status CollectiveContext::WaitSent(int peer, uint64_t ticket) {
  if (ticket == 0) return absl::OkStatus();
  return peers[peer]->WaitSent(ticket, deadline);
}

absl::Status CollectiveContext::Drain(int peer) {
  return WaitSent(peer, peers[peer]->LastTicket());
}

absl::Status CollectiveContext::Recv(int peer, void* data, size_t bytes) {
  return peers[peer]->Recv(data, bytes, deadline, spin_polls);
}

absl::Status CollectiveContext::RecvReduce(int peer, void* dst,
                                           const void* local, size_t count) {
  const size_t es = element_size();
  char* d = static_cast<char*>(dst);
  const char* l = static_cast<const char*>(local);
  size_t done = 0;  // elements reduced
  return peers[peer]->RecvPieces(
      count * es, es, scratch, scratch_bytes, deadline, spin_polls,
      [&](const char* got, size_t bytes) {
        const size_t n = bytes / es;
        Reduce(type(), op(), d + done * es, l + done * es, got, n);
        done += n;
      });
}

}  // namespace gradsync
