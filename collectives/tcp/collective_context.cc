#include "collectives/tcp/collective_context.h"

#include <algorithm>

#include "common/status_macros.h"

namespace gradsync {

size_t CollectiveContext::segment_elements() const {
  return std::max<size_t>(1, options->segment_bytes / element_size());
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
  const size_t block = std::max<size_t>(1, scratch_bytes / es);
  char* d = static_cast<char*>(dst);
  const char* l = static_cast<const char*>(local);
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(block, count - done);
    RETURN_IF_ERROR(Recv(peer, scratch, n * es));
    Reduce(type(), op(), d + done * es, l + done * es, scratch, n);
    done += n;
  }
  return absl::OkStatus();
}

}  // namespace gradsync
