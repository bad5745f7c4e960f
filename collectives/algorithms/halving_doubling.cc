// Recursive halving-doubling all-reduce
// =====================================
// The ring needs 2(N-1) sequential steps, so for small messages its cost is
// latency. Halving-doubling needs 2 log2(P) steps and still moves only
// about 2 S bytes per rank.
//
// Let P be the largest power of two <= N and E = N - P.
// 1. Fold (only if N is not a power of two): of the first 2E ranks, each
//    even rank sends its whole vector to the odd rank above it and sits
//    out; the odd rank adds it. P "virtual" ranks remain: odd rank r < 2E
//    is v = r/2, rank r >= 2E is v = r - E.
// 2. Reduce-scatter by recursive halving: the vector is cut into P blocks.
//    At distance d = P/2, P/4, ..., 1, virtual rank v exchanges with
//    v XOR d: the one with bit d clear keeps the lower half of its current
//    range and sends the upper half, the other does the opposite; each adds
//    what it receives. After log2(P) steps v holds block v, fully reduced
//    (kAvg divides here).
// 3. All-gather by recursive doubling: the same exchanges in reverse order,
//    each copying the partner's range, until every rank has all P blocks.
// 4. Unfold: each odd rank r < 2E sends the result to r-1.
// Each block is reduced at exactly one rank and copied elsewhere, so every
// rank ends with bitwise the same result.
#include "collectives/algorithms/halving_doubling.h"

#include <cstring>
#include <vector>

#include "common/status_macros.h"

namespace gradsync {

absl::Status HalvingDoublingAllReduce(CollectiveContext& ctx, const void* send,
                                      void* recv, size_t count) {
  const int n = ctx.size;
  const int r = ctx.rank;
  const size_t es = ctx.element_size();
  char* work = static_cast<char*>(recv);
  if (send != recv && count > 0) std::memcpy(work, send, count * es);
  if (n == 1) return absl::OkStatus();

  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;
  const auto real_rank = [extra](int v) {
    return v < extra ? 2 * v + 1 : v + extra;
  };

  // Peers, for the header exchange: fold partner and every halving partner.
  std::vector<int> peers;
  int v = -1;
  if (r < 2 * extra && r % 2 == 0) {
    peers.push_back(r + 1);
  } else {
    v = r < 2 * extra ? r / 2 : r - extra;
    if (r < 2 * extra) peers.push_back(r - 1);
    for (int d = p / 2; d >= 1; d /= 2) peers.push_back(real_rank(v ^ d));
  }
  RETURN_IF_ERROR(ctx.ExchangeHeaders(peers, peers));

  if (v < 0) {  // Folded out: hand our vector over, get the result back.
    const uint64_t t = ctx.Send(r + 1, work, count * es);
    RETURN_IF_ERROR(ctx.WaitSent(r + 1, t));
    return ctx.Recv(r + 1, work, count * es);
  }
  if (r < 2 * extra) {
    RETURN_IF_ERROR(ctx.RecvReduce(r - 1, work, work, count));
  }

  // First element of block `b` (b == p: one past the end).
  auto offset = [&](int b) {
    return b == p ? count : BalancedBlock(count, p, b).begin;
  };
  // Ranges of blocks [lo, hi) kept after each halving step.
  std::vector<std::pair<int, int>> kept;
  int lo = 0, hi = p;
  for (int d = p / 2; d >= 1; d /= 2) {
    const int partner = real_rank(v ^ d);
    const int mid = lo + (hi - lo) / 2;
    const bool upper = (v & d) != 0;
    const int send_lo = upper ? lo : mid, send_hi = upper ? mid : hi;
    const int keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
    const size_t sb = offset(send_lo), se = offset(send_hi);
    const size_t kb = offset(keep_lo), ke = offset(keep_hi);
    ctx.Send(partner, work + sb * es, (se - sb) * es);
    RETURN_IF_ERROR(
        ctx.RecvReduce(partner, work + kb * es, work + kb * es, ke - kb));
    kept.emplace_back(lo, hi);
    lo = keep_lo;
    hi = keep_hi;
  }
  if (ctx.op() == ReduceOp::kAvg) {
    const size_t b = offset(lo), e = offset(hi);
    DivideInPlace(ctx.type(), work + b * es, e - b, n);
  }
  // The halving sends must have left before their regions are overwritten.
  for (int d = p / 2; d >= 1; d /= 2) {
    RETURN_IF_ERROR(ctx.Drain(real_rank(v ^ d)));
  }
  for (int d = 1; d < p; d *= 2) {
    const int partner = real_rank(v ^ d);
    const auto [plo, phi] = kept.back();
    kept.pop_back();
    // We own [lo, hi); the partner owns the other half of [plo, phi).
    const int other_lo = lo == plo ? hi : plo;
    const int other_hi = lo == plo ? phi : lo;
    const size_t b = offset(lo), e = offset(hi);
    const size_t ob = offset(other_lo), oe = offset(other_hi);
    ctx.Send(partner, work + b * es, (e - b) * es);
    RETURN_IF_ERROR(ctx.Recv(partner, work + ob * es, (oe - ob) * es));
    lo = plo;
    hi = phi;
  }
  if (r < 2 * extra) ctx.Send(r - 1, work, count * es);
  // Return only once nothing more is read from `recv`.
  for (int peer : peers) RETURN_IF_ERROR(ctx.Drain(peer));
  return absl::OkStatus();
}

}  // namespace gradsync
