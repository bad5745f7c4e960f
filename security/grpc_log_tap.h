// GrpcLogTap: while it lives, the process's gRPC log function
// (gpr_set_log_function), so that gRPC's "Handshake failed with fatal
// error ..." lines, which name no peer, reach the servers that can: a
// GrpcListener (grpc_listener.h) subscribes, pairs each line with the
// connection gRPC closed right after logging it, and says the peer, the
// cause and what to do instead. Every other gRPC line is written as gRPC
// writes it; a handshake line that no subscriber claims (a channel's own
// failed handshake, a connection no listener watched) is written too, at
// most one per period with a count of those held back.
//
// Why an object with process-wide effect: gRPC's log hook is one function
// pointer per process and takes no context, so exactly one tap may be
// installed at a time, and the hook reaches it through the one static
// pointer in grpc_log_tap.cc (behind a mutex, so a line logged while the
// tap goes away never touches a dead tap). main() owns the tap and hands
// it to the servers (CoordinatorServerOptions::handshakes); tests install
// their own. Destroy every server using it before the tap.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<GrpcLogTap> tap, GrpcLogTap::Install());
//   options.handshakes.tap = tap.get();
//
// Errors: Install returns FAILED_PRECONDITION while another tap lives.
// Threading: thread-safe; gRPC calls it from any of its threads.
#ifndef GRADSYNC_SECURITY_GRPC_LOG_TAP_H_
#define GRADSYNC_SECURITY_GRPC_LOG_TAP_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "security/handshake_report.h"

struct gpr_log_func_args;

namespace gradsync {

class GrpcLogTap {
 public:
  struct Options {
    // Where gRPC's lines go, one at a time without the newline. Empty:
    // stderr, in gRPC's own format ("E0512 15:08:16.123456 4242
    // ssl_transport_security.cc:1501] Handshake failed ...").
    std::function<void(absl::string_view)> sink;
    // Unclaimed handshake lines: at most one per period.
    absl::Duration unclaimed_period = absl::Minutes(1);
    // Handshake lines awaiting their subscribers' verdicts; past it the
    // oldest counts as unclaimed.
    size_t max_pending = 256;
  };

  [[nodiscard]] static absl::StatusOr<std::unique_ptr<GrpcLogTap>> Install(
      Options options);
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<GrpcLogTap>> Install() {
    return Install(Options());
  }

  GrpcLogTap(const GrpcLogTap&) = delete;
  GrpcLogTap& operator=(const GrpcLogTap&) = delete;
  // Gives gRPC back its default log function.
  ~GrpcLogTap();

  // One of gRPC's handshake-failure lines.
  struct HandshakeLine {
    uint64_t id = 0;
    absl::Time at;     // when gRPC logged it
    std::string text;  // gRPC's message
  };

  // A subscriber's mailbox: every handshake line logged while it lives.
  // The subscriber resolves each line it took, claiming it (it said the
  // line its own way) or not; a line nobody claims is written as gRPC's.
  // What it holds unresolved when destroyed counts as not claimed.
  class Subscription {
   public:
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription();

    // The lines logged since the last Take, oldest first.
    std::vector<HandshakeLine> Take();
    void Resolve(uint64_t id, bool claimed);

   private:
    friend class GrpcLogTap;
    Subscription(GrpcLogTap* tap, std::function<void()> wake)
        : tap_(tap), wake_(std::move(wake)) {}

    GrpcLogTap* const tap_;
    const std::function<void()> wake_;  // called under the tap's mutex
    std::deque<HandshakeLine> inbox_ ABSL_GUARDED_BY(tap_->mu_);
    absl::flat_hash_set<uint64_t> unresolved_ ABSL_GUARDED_BY(tap_->mu_);
  };

  // `wake` is called (on a gRPC thread, briefly: write to an eventfd)
  // when a line arrives.
  std::unique_ptr<Subscription> Subscribe(std::function<void()> wake);

  // The hook's entry; public for the hook function only.
  void Log(const gpr_log_func_args& args);

 private:
  struct Pending {
    std::string text;
    int undecided = 0;  // subscribers yet to resolve it
    bool claimed = false;
  };

  explicit GrpcLogTap(Options options);
  void ResolveLocked(uint64_t id, bool claimed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Unsubscribe(Subscription* subscription);
  void WriteUnclaimedLocked(const std::string& text)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Write(const std::string& line) const;

  const Options options_;
  absl::Mutex mu_;
  std::vector<Subscription*> subscribers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t oldest_pending_ ABSL_GUARDED_BY(mu_) = 1;
  ReportLimiter unclaimed_ ABSL_GUARDED_BY(mu_);
};

// Whether `message` is gRPC's handshake-failure line ("Handshake failed
// with fatal error ...").
bool IsGrpcHandshakeFailureLine(absl::string_view message);

// `args` in gRPC's default format, without the newline.
std::string FormatGrpcLogLine(const gpr_log_func_args& args);

}  // namespace gradsync

#endif  // GRADSYNC_SECURITY_GRPC_LOG_TAP_H_
