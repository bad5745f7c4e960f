// The ring all-reduce
// ===================
// N ranks form a ring: rank r sends only to r+1 and receives only from r-1.
// The vector is cut into N chunks (balanced: the first count % N chunks get
// one more element; chunks may be empty when count < N).
//
// Reduce-scatter, N-1 steps. At step s rank r sends chunk (r - s) and
// receives chunk (r - s - 1), adding its own contribution to it. The chunk a
// rank receives at step s is the one it sends at step s+1, so after N-1
// steps rank r holds chunk (r + 1) summed over all N ranks. (For kAvg the
// owner divides it by N now, so every rank later copies the same bits.)
//
// All-gather, N-1 steps. At step s rank r receives chunk (r - s), already
// final, stores it, and forwards it at step s+1, except at the last step.
//
// Every rank sends 2(N-1)/N * S bytes in all, which is optimal; busbw is
// therefore algbw * 2(N-1)/N.
//
// Pipelining. Each chunk is cut into segments (options.segment_bytes). A
// segment is forwarded as soon as it is reduced, by the connection's sender
// thread, while this thread receives and reduces the next one; received
// bytes land in a sub-block scratch buffer that stays in L2 until reduced.
// So at any time a rank is sending, receiving and adding at once, and the
// steps overlap instead of running back to back.
//
// Buffer reuse. A region that is being sent may not be overwritten: before
// the all-gather receives into a chunk, it waits until that chunk's last
// send (from the reduce-scatter) has left. The sender may run a whole chunk
// behind the receiver (it begins with our own chunk), so partial sums need
// chunk-sized homes; in the all-reduce that is the output buffer itself.
#include "collectives/algorithms/ring.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/status_macros.h"

namespace gradsync {
namespace {

// Calls fn(begin, n) for each segment of the element range [begin, end).
template <typename Fn>
[[nodiscard]] absl::Status ForEachSegment(const CollectiveContext& ctx,
                                          BlockRange range, Fn fn) {
  const size_t seg = ctx.segment_elements();
  for (size_t off = range.begin; off < range.end; off += seg) {
    RETURN_IF_ERROR(fn(off, std::min(seg, range.end - off)));
  }
  return absl::OkStatus();
}

void CopyIfDistinct(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
}

}  // namespace

absl::Status RingAllReduce(CollectiveContext& ctx, const void* send, void* recv,
                           size_t count) {
  const int n = ctx.size;
  const int r = ctx.rank;
  const size_t es = ctx.element_size();
  if (n == 1) {
    CopyIfDistinct(recv, send, count * es);
    return absl::OkStatus();
  }
  const int left = ctx.Mod(r - 1);
  const int right = ctx.Mod(r + 1);
  const int to[] = {right};
  const int from[] = {left};
  RETURN_IF_ERROR(ctx.ExchangeHeaders(to, from));

  const char* local = static_cast<const char*>(send);
  char* work = static_cast<char*>(recv);
  auto chunk = [&](int c) { return BalancedBlock(count, n, ctx.Mod(c)); };
  // Ticket of the last send out of each chunk's region of `work`.
  std::vector<uint64_t> sent_from(n, 0);

  // Step 0 of the reduce-scatter sends this rank's own chunk r.
  uint64_t t = 0;
  RETURN_IF_ERROR(ForEachSegment(ctx, chunk(r), [&](size_t off, size_t len) {
    t = ctx.Send(right, local + off * es, len * es);
    return absl::OkStatus();
  }));
  if (local == work) sent_from[r] = t;

  // Reduce-scatter: receive chunk r-s-1, add ours, forward it next step.
  for (int s = 0; s < n - 1; ++s) {
    const int c = ctx.Mod(r - s - 1);
    const bool last = s == n - 2;
    RETURN_IF_ERROR(ForEachSegment(ctx, chunk(c), [&](size_t off, size_t len) {
      RETURN_IF_ERROR(
          ctx.RecvReduce(left, work + off * es, local + off * es, len));
      if (last && ctx.op() == ReduceOp::kAvg) {
        DivideInPlace(ctx.type(), work + off * es, len, n);
      }
      sent_from[c] = ctx.Send(right, work + off * es, len * es);
      return absl::OkStatus();
    }));
  }

  // All-gather: receive final chunk r-s, forward it unless last step.
  for (int s = 0; s < n - 1; ++s) {
    const int c = ctx.Mod(r - s);
    RETURN_IF_ERROR(ctx.WaitSent(right, sent_from[c]));
    const bool forward = s < n - 2;
    RETURN_IF_ERROR(ForEachSegment(ctx, chunk(c), [&](size_t off, size_t len) {
      RETURN_IF_ERROR(ctx.Recv(left, work + off * es, len * es));
      if (forward) ctx.Send(right, work + off * es, len * es);
      return absl::OkStatus();
    }));
  }
  return ctx.Drain(right);
}

// Same ring as the all-reduce's first phase, shifted by one so that rank r
// ends with block r: step s sends block r-s-1 and receives block r-s-2.
//
// A partial sum must live until it has been sent, and the sender runs up to
// a whole block behind the receiver (it starts with our own block). So the
// partial sums alternate between two blocks of the communicator's spare
// memory (`recv` may alias our own input block, read at the last step), and
// a block is rewritten only after its sends from two steps earlier left.
// The last step reduces straight into `recv`.
absl::Status RingReduceScatter(CollectiveContext& ctx, const void* send,
                               void* recv, size_t recv_count) {
  const int n = ctx.size;
  const int r = ctx.rank;
  const size_t es = ctx.element_size();
  if (n == 1) {
    CopyIfDistinct(recv, send, recv_count * es);
    return absl::OkStatus();
  }
  const int left = ctx.Mod(r - 1);
  const int right = ctx.Mod(r + 1);
  const int to[] = {right};
  const int from[] = {left};
  RETURN_IF_ERROR(ctx.ExchangeHeaders(to, from));

  const char* local = static_cast<const char*>(send);
  char* regions[2] = {ctx.spare, ctx.spare + recv_count * es};
  auto block = [&](int c) {
    const size_t b = static_cast<size_t>(ctx.Mod(c)) * recv_count;
    return BlockRange{b, b + recv_count};
  };
  const size_t segments =
      (recv_count + ctx.segment_elements() - 1) / ctx.segment_elements();
  // Ticket of the last send out of each segment of each region.
  std::vector<uint64_t> sent[2] = {std::vector<uint64_t>(segments, 0),
                                   std::vector<uint64_t>(segments, 0)};

  RETURN_IF_ERROR(
      ForEachSegment(ctx, block(r - 1), [&](size_t off, size_t len) {
        ctx.Send(right, local + off * es, len * es);
        return absl::OkStatus();
      }));
  for (int s = 0; s < n - 1; ++s) {
    const BlockRange b = block(r - s - 2);
    const int region = s % 2;
    const bool last = s == n - 2;
    RETURN_IF_ERROR(ForEachSegment(ctx, b, [&](size_t off, size_t len) {
      const size_t rel = off - b.begin;
      uint64_t& ticket = sent[region][rel / ctx.segment_elements()];
      RETURN_IF_ERROR(ctx.WaitSent(right, ticket));
      char* dst =
          (last ? static_cast<char*>(recv) : regions[region]) + rel * es;
      RETURN_IF_ERROR(ctx.RecvReduce(left, dst, local + off * es, len));
      if (!last) {
        ticket = ctx.Send(right, dst, len * es);
      } else if (ctx.op() == ReduceOp::kAvg) {
        DivideInPlace(ctx.type(), dst, len, n);
      }
      return absl::OkStatus();
    }));
  }
  return ctx.Drain(right);
}

// The all-reduce's second phase on its own: rank r starts with block r.
absl::Status RingAllGather(CollectiveContext& ctx, const void* send, void* recv,
                           size_t send_count) {
  const int n = ctx.size;
  const int r = ctx.rank;
  const size_t es = ctx.element_size();
  char* out = static_cast<char*>(recv);
  CopyIfDistinct(out + static_cast<size_t>(r) * send_count * es, send,
                 send_count * es);
  if (n == 1) return absl::OkStatus();
  const int left = ctx.Mod(r - 1);
  const int right = ctx.Mod(r + 1);
  const int to[] = {right};
  const int from[] = {left};
  RETURN_IF_ERROR(ctx.ExchangeHeaders(to, from));
  auto block = [&](int c) {
    const size_t b = static_cast<size_t>(ctx.Mod(c)) * send_count;
    return BlockRange{b, b + send_count};
  };
  RETURN_IF_ERROR(ForEachSegment(ctx, block(r), [&](size_t off, size_t len) {
    ctx.Send(right, out + off * es, len * es);
    return absl::OkStatus();
  }));
  for (int s = 0; s < n - 1; ++s) {
    const bool forward = s < n - 2;
    RETURN_IF_ERROR(
        ForEachSegment(ctx, block(r - s - 1), [&](size_t off, size_t len) {
          RETURN_IF_ERROR(ctx.Recv(left, out + off * es, len * es));
          if (forward) ctx.Send(right, out + off * es, len * es);
          return absl::OkStatus();
        }));
  }
  return ctx.Drain(right);
}

// A chain from the root around the ring, pipelined by segments: each rank
// forwards a segment as soon as it arrived. busbw = algbw.
absl::Status ChainBroadcast(CollectiveContext& ctx, const void* send,
                            void* recv, size_t count, int root) {
  const int n = ctx.size;
  const size_t es = ctx.element_size();
  const int v = ctx.Mod(ctx.rank - root);  // position in the chain
  if (v == 0) CopyIfDistinct(recv, send, count * es);
  if (n == 1) return absl::OkStatus();
  const int left = ctx.Mod(ctx.rank - 1);
  const int right = ctx.Mod(ctx.rank + 1);
  const bool sends = v < n - 1;
  std::vector<int> to, from;
  if (sends) to.push_back(right);
  if (v > 0) from.push_back(left);
  RETURN_IF_ERROR(ctx.ExchangeHeaders(to, from));
  char* out = static_cast<char*>(recv);
  RETURN_IF_ERROR(ForEachSegment(ctx, {0, count}, [&](size_t off, size_t len) {
    if (v > 0) RETURN_IF_ERROR(ctx.Recv(left, out + off * es, len * es));
    if (sends) ctx.Send(right, out + off * es, len * es);
    return absl::OkStatus();
  }));
  return sends ? ctx.Drain(right) : absl::OkStatus();
}

}  // namespace gradsync
