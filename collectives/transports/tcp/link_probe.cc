#include "collectives/transports/tcp/link_probe.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "collectives/transports/tcp/link_timing.h"
#include "common/little_endian.h"

namespace gradsync {
namespace {

constexpr size_t kHeadBytes = 24;

void EncodeHead(int round, const LinkProbeConfig& config, char* out) {
  PutLittleEndian32(out, kLinkProbeMagic);
  PutLittleEndian32(out + 4, static_cast<uint32_t>(round));
  PutLittleEndian32(out + 8, static_cast<uint32_t>(config.round_trips));
  PutLittleEndian32(out + 12, 0);
  PutLittleEndian64(out + 16, static_cast<uint64_t>(config.stream_bytes));
}

// Who `rank` calls in `round` and who calls it; -1: nobody.
std::pair<int, int> RolesIn(const std::vector<std::pair<int, int>>& round,
                            int rank) {
  int to = -1, from = -1;
  for (const auto& [a, b] : round) {
    if (a == rank) to = b;
    if (b == rank) from = a;
  }
  return {to, from};
}

[[nodiscard]] absl::Status InPhase(const absl::Status& status, int round,
                                   int peer, absl::string_view phase) {
  return absl::Status(
      status.code(), absl::StrCat("link probe round ", round + 1, ", ", phase,
                                  " with rank ", peer, ": ", status.message()));
}

// The answering side of every round, on its own thread: Run answers the
// callers in order and says how far it got.
class Answerer {
 public:
  Answerer(const LinkProbeConfig& config, const std::vector<Socket>& respond,
           std::atomic<bool>* abort)
      : config_(config), respond_(respond), abort_(abort) {}

  // Answers every round's caller; a failure ends it (see status()).
  void Run() {
    for (int r = 0; r < static_cast<int>(config_.rounds.size()); ++r) {
      const int from = RolesIn(config_.rounds[r], config_.rank).second;
      absl::Status s = from < 0 ? absl::OkStatus() : Answer(r, from);
      absl::MutexLock lock(&mu_);
      if (!s.ok()) {
        status_ = s;
        return;
      }
      pings_done_ = r + 1;
      streams_done_ = r + 1;
    }
  }

  // Blocks until round `round`'s round trips (`stream` false) or stream
  // were answered, the answerer failed, or `deadline`.
  [[nodiscard]] absl::Status AwaitRound(int round, bool stream,
                                        absl::Time deadline) {
    absl::MutexLock lock(&mu_);
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !status_.ok() || (stream ? streams_done_ : pings_done_) > round;
    };
    mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
    if (!status_.ok()) return status_;
    if (!done()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "link probe round ", round + 1, ": this rank's caller did not ",
          stream ? "finish its stream" : "finish its round trips", " in time"));
    }
    return absl::OkStatus();
  }

  [[nodiscard]] absl::Status status() {
    absl::MutexLock lock(&mu_);
    return status_;
  }

 private:
  [[nodiscard]] absl::Status Answer(int r, int from) {
    const Socket& s = respond_[from];
    absl::Time deadline = absl::Now() + config_.timeout;
    char head[kHeadBytes];
    if (absl::Status st = s.RecvAll(head, kHeadBytes, deadline, abort_);
        !st.ok()) {
      return InPhase(st, r, from, "the head");
    }
    char want[kHeadBytes];
    EncodeHead(r, config_, want);
    if (std::memcmp(head, want, kHeadBytes) != 0) {
      return absl::InternalError(absl::StrCat(
          "link probe round ", r + 1, ": rank ", from,
          " sent a head for round ", GetLittleEndian32(head + 4), " with ",
          GetLittleEndian32(head + 8), " round trips and ",
          GetLittleEndian64(head + 16), " bytes (magic ",
          GetLittleEndian32(head) == kLinkProbeMagic ? "ok" : "wrong",
          "); this rank expected its own spec's. Are both workers of one "
          "build?"));
    }
    if (absl::Status st =
            EchoRoundTrips(s, config_.round_trips, deadline, abort_);
        !st.ok()) {
      return InPhase(st, r, from, "answering round trips");
    }
    {
      absl::MutexLock lock(&mu_);
      pings_done_ = r + 1;
    }
    // The caller streams after a barrier: two phases' time.
    deadline = absl::Now() + 2 * config_.timeout;
    absl::StatusOr<double> timed =
        ReceiveTimed(s, config_.stream_bytes, deadline, abort_);
    if (!timed.ok()) return InPhase(timed.status(), r, from, "the stream");
    const double goodput = *timed;
    char reply[8];
    uint64_t bits = 0;
    std::memcpy(&bits, &goodput, sizeof(bits));
    PutLittleEndian64(reply, bits);
    if (absl::Status st = s.SendAll(reply, sizeof(reply), deadline, abort_);
        !st.ok()) {
      return InPhase(st, r, from, "the stream's answer");
    }
    return absl::OkStatus();
  }

  const LinkProbeConfig& config_;
  const std::vector<Socket>& respond_;
  std::atomic<bool>* const abort_;

  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  int pings_done_ ABSL_GUARDED_BY(mu_) = 0;    // rounds
  int streams_done_ ABSL_GUARDED_BY(mu_) = 0;  // rounds
};

// The calling side of round `r` to `to`: head, timed round trips.
[[nodiscard]] absl::Status CallRoundTrips(const LinkProbeConfig& config, int r,
                                          int to, const Socket& s,
                                          std::atomic<bool>* abort,
                                          MeasuredLink* link) {
  const absl::Time deadline = absl::Now() + config.timeout;
  char head[kHeadBytes];
  EncodeHead(r, config, head);
  if (absl::Status st = s.SendAll(head, kHeadBytes, deadline, abort);
      !st.ok()) {
    return InPhase(st, r, to, "the head");
  }
  absl::StatusOr<RoundTripTimes> times =
      TimeRoundTrips(s, config.round_trips, deadline, abort);
  if (!times.ok()) return InPhase(times.status(), r, to, "round trips");
  link->from = config.rank;
  link->to = to;
  link->round_trips = times->count;
  link->rtt_median_us = times->median_us;
  link->rtt_min_us = times->min_us;
  return absl::OkStatus();
}

// The stream of round `r` to `to`, and the goodput it answers.
[[nodiscard]] absl::Status CallStream(const LinkProbeConfig& config, int r,
                                      int to, const Socket& s,
                                      std::atomic<bool>* abort,
                                      MeasuredLink* link) {
  const absl::Time deadline = absl::Now() + config.timeout;
  if (absl::Status st = SendFiller(s, config.stream_bytes, deadline, abort);
      !st.ok()) {
    return InPhase(st, r, to, "the stream");
  }
  char reply[8];
  if (absl::Status st = s.RecvAll(reply, sizeof(reply), deadline, abort);
      !st.ok()) {
    return InPhase(st, r, to, "the stream's answer");
  }
  const uint64_t bits = GetLittleEndian64(reply);
  double goodput = 0;
  std::memcpy(&goodput, &bits, sizeof(goodput));
  link->goodput_Bps = goodput;
  link->stream_bytes = config.stream_bytes;
  return absl::OkStatus();
}

[[nodiscard]] absl::Status CheckConfig(const LinkProbeConfig& config,
                                       const std::vector<Socket>& initiate,
                                       const std::vector<Socket>& respond) {
  if (config.size < 2 || config.rank < 0 || config.rank >= config.size ||
      static_cast<int>(initiate.size()) != config.size ||
      static_cast<int>(respond.size()) != config.size ||
      config.stream_bytes <= 0 || config.round_trips < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("link probe of rank ", config.rank, " of ", config.size,
                     " with ", initiate.size(), "/", respond.size(),
                     " connections, a stream of ", config.stream_bytes,
                     " bytes and ", config.round_trips, " round trips"));
  }
  for (const auto& round : config.rounds) {
    const auto [to, from] = RolesIn(round, config.rank);
    if ((to >= 0 && (to >= config.size || !initiate[to].valid())) ||
        (from >= 0 && (from >= config.size || !respond[from].valid()))) {
      return absl::InvalidArgumentError(
          absl::StrCat("link probe of rank ", config.rank,
                       ": no connection to rank ", to, " or from rank ", from));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status StoreBarrier(Store* store, absl::string_view name, int rank,
                          int size, absl::Time deadline) {
  if (absl::Status s = store->Set(absl::StrCat(name, "/", rank), "1");
      !s.ok()) {
    return s;
  }
  std::vector<std::string> keys;
  keys.reserve(size);
  for (int r = 0; r < size; ++r) keys.push_back(absl::StrCat(name, "/", r));
  absl::Status s = store->Wait(keys, deadline);
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("barrier ", name, " of rank ",
                                               rank, ": ", s.message()));
  }
  return s;
}

absl::StatusOr<std::vector<MeasuredLink>> MeasureLinks(
    const LinkProbeConfig& config, const std::vector<Socket>& initiate,
    const std::vector<Socket>& respond,
    absl::FunctionRef<absl::Status(absl::string_view, absl::Time)> barrier,
    std::atomic<bool>* abort) {
  if (absl::Status s = CheckConfig(config, initiate, respond); !s.ok()) {
    return s;
  }
  auto stop_everything = [&] {
    abort->store(true);
    for (const Socket& s : initiate) {
      if (s.valid()) s.Shutdown();
    }
    for (const Socket& s : respond) {
      if (s.valid()) s.Shutdown();
    }
  };
  Answerer answerer(config, respond, abort);
  std::thread answering([&] {
    answerer.Run();
    if (!answerer.status().ok()) stop_everything();
  });
  std::vector<MeasuredLink> links;
  absl::Status status;
  for (int r = 0; r < static_cast<int>(config.rounds.size()) && status.ok();
       ++r) {
    const int to = RolesIn(config.rounds[r], config.rank).first;
    MeasuredLink link;
    if (to >= 0) {
      status = CallRoundTrips(config, r, to, initiate[to], abort, &link);
    }
    if (status.ok()) {
      status = answerer.AwaitRound(r, /*stream=*/false,
                                   absl::Now() + config.timeout);
    }
    if (status.ok()) {
      status = barrier(absl::StrCat("link-probe/round-", r + 1, "/pings"),
                       absl::Now() + config.timeout);
    }
    if (status.ok() && to >= 0) {
      status = CallStream(config, r, to, initiate[to], abort, &link);
    }
    if (status.ok()) {
      status =
          answerer.AwaitRound(r, /*stream=*/true, absl::Now() + config.timeout);
    }
    if (status.ok()) {
      status = barrier(absl::StrCat("link-probe/round-", r + 1, "/streams"),
                       absl::Now() + config.timeout);
    }
    if (status.ok() && to >= 0) links.push_back(link);
  }
  if (!status.ok()) stop_everything();
  answering.join();
  if (!status.ok()) {
    // The answerer's own failure is the cause when ours is its echo.
    const absl::Status answered = answerer.status();
    if (!answered.ok() && (status.code() == absl::StatusCode::kAborted ||
                           status.code() == absl::StatusCode::kUnavailable)) {
      return answered;
    }
    return status;
  }
  return links;
}

}  // namespace gradsync
