#include "collectives/transports/tcp/link_timing.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/median.h"

namespace gradsync {
namespace {

constexpr int64_t kMaxPieceBytes = int64_t{1} << 20;
constexpr int64_t kMinPieceBytes = int64_t{4} << 10;

// A stream moves in pieces of a 64th of it (4 KiB to 1 MiB), so that the
// warm-up eighth ends close to where it is counted from.
size_t PieceBytes(int64_t stream_bytes) {
  return static_cast<size_t>(
      std::clamp(stream_bytes / 64, kMinPieceBytes, kMaxPieceBytes));
}

}  // namespace

absl::StatusOr<RoundTripTimes> TimeRoundTrips(const Socket& socket, int count,
                                              absl::Time deadline,
                                              const std::atomic<bool>* abort) {
  std::vector<double> rtts;
  rtts.reserve(static_cast<size_t>(std::max(count, 0)));
  char ping[kPingBytes];
  char echo[kPingBytes];
  for (int i = 0; i < count; ++i) {
    const uint64_t tag = static_cast<uint64_t>(i);
    std::memcpy(ping, &tag, sizeof(tag));
    const absl::Time start = absl::Now();
    absl::Status s = socket.SendAll(ping, kPingBytes, deadline, abort);
    if (s.ok()) s = socket.RecvAll(echo, kPingBytes, deadline, abort);
    if (!s.ok()) return s;
    if (std::memcmp(ping, echo, kPingBytes) != 0) {
      return absl::InternalError(absl::StrCat(
          "round trip ", i + 1, " came back as another one than was sent"));
    }
    rtts.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  RoundTripTimes times;
  times.count = count;
  times.median_us = Median(rtts);
  times.min_us = rtts.empty() ? 0 : *std::min_element(rtts.begin(), rtts.end());
  return times;
}

absl::Status EchoRoundTrips(const Socket& socket, int count,
                            absl::Time deadline,
                            const std::atomic<bool>* abort) {
  char ping[kPingBytes];
  for (int i = 0; i < count; ++i) {
    absl::Status s = socket.RecvAll(ping, kPingBytes, deadline, abort);
    if (s.ok()) s = socket.SendAll(ping, kPingBytes, deadline, abort);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status SendFiller(const Socket& socket, int64_t bytes,
                        absl::Time deadline, const std::atomic<bool>* abort) {
  const std::vector<char> buffer(
      static_cast<size_t>(
          std::min(std::max<int64_t>(bytes, 0), kMaxPieceBytes)),
      '\x5a');
  int64_t sent = 0;
  while (sent < bytes) {
    const size_t n = static_cast<size_t>(
        std::min<int64_t>(static_cast<int64_t>(buffer.size()), bytes - sent));
    if (absl::Status s = socket.SendAll(buffer.data(), n, deadline, abort);
        !s.ok()) {
      return s;
    }
    sent += static_cast<int64_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<double> ReceiveTimed(const Socket& socket, int64_t bytes,
                                    absl::Time deadline,
                                    const std::atomic<bool>* abort) {
  std::vector<char> buffer(PieceBytes(bytes));
  const int64_t warm = bytes / 8;
  int64_t received = 0, counted_from = -1;
  absl::Time t0;
  while (received < bytes) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(
        static_cast<int64_t>(buffer.size()), bytes - received));
    if (absl::Status s = socket.RecvAll(buffer.data(), n, deadline, abort);
        !s.ok()) {
      return s;
    }
    received += static_cast<int64_t>(n);
    if (counted_from < 0 && received >= warm) {
      counted_from = received;
      t0 = absl::Now();
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - t0);
  const int64_t counted = received - counted_from;
  if (counted <= 0 || seconds <= 0) return 0.0;
  return static_cast<double>(counted) / seconds;
}

}  // namespace gradsync
