#include "security/grpc_log_tap.h"

#include <grpc/support/log.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

// The only mutable static state of gradsync, and why: gRPC's log hook is
// a bare function pointer, process-wide, with no context argument, so the
// hook can reach the installed tap only through a static. The mutex makes
// a line logged while the tap is destroyed wait for it and then take the
// default path.
ABSL_CONST_INIT absl::Mutex route_mu(absl::kConstInit);
GrpcLogTap* installed_tap ABSL_GUARDED_BY(route_mu) = nullptr;

void WriteStderr(const std::string& line) {
  const std::string text = absl::StrCat(line, "\n");
  fwrite(text.data(), 1, text.size(), stderr);
}

void RouteGrpcLog(gpr_log_func_args* args) {
  absl::MutexLock lock(&route_mu);
  if (installed_tap != nullptr) {
    installed_tap->Log(*args);
  } else {
    WriteStderr(FormatGrpcLogLine(*args));
  }
}

}  // namespace

bool IsGrpcHandshakeFailureLine(absl::string_view message) {
  return absl::StartsWith(message, "Handshake failed with fatal error");
}

std::string FormatGrpcLogLine(const gpr_log_func_args& args) {
  const char* file = args.file == nullptr ? "" : args.file;
  const char* slash = strrchr(file, '/');
  return absl::StrCat(
      gpr_log_severity_string(args.severity),
      absl::FormatTime("%m%d %H:%M:%E6S", absl::Now(), absl::LocalTimeZone()),
      " ", static_cast<int64_t>(syscall(SYS_gettid)), " ",
      slash == nullptr ? file : slash + 1, ":", args.line, "] ",
      args.message == nullptr ? "" : args.message);
}

absl::StatusOr<std::unique_ptr<GrpcLogTap>> GrpcLogTap::Install(
    Options options) {
  std::unique_ptr<GrpcLogTap> tap(new GrpcLogTap(std::move(options)));
  absl::MutexLock lock(&route_mu);
  if (installed_tap != nullptr) {
    return absl::FailedPreconditionError(
        "a GrpcLogTap is already installed; gRPC has one log function per "
        "process");
  }
  installed_tap = tap.get();
  gpr_set_log_function(&RouteGrpcLog);
  return tap;
}

GrpcLogTap::GrpcLogTap(Options options)
    : options_(std::move(options)),
      unclaimed_(options_.unclaimed_period, /*max_keys=*/1) {}

GrpcLogTap::~GrpcLogTap() {
  absl::MutexLock lock(&route_mu);
  installed_tap = nullptr;
  gpr_set_log_function(nullptr);  // gRPC's default again
  absl::MutexLock tap_lock(&mu_);
  assert(subscribers_.empty() && "destroy the servers before the tap");
}

std::unique_ptr<GrpcLogTap::Subscription> GrpcLogTap::Subscribe(
    std::function<void()> wake) {
  std::unique_ptr<Subscription> subscription(
      new Subscription(this, std::move(wake)));
  absl::MutexLock lock(&mu_);
  subscribers_.push_back(subscription.get());
  return subscription;
}

void GrpcLogTap::Unsubscribe(Subscription* subscription) {
  absl::MutexLock lock(&mu_);
  subscribers_.erase(
      std::remove(subscribers_.begin(), subscribers_.end(), subscription),
      subscribers_.end());
  for (uint64_t id : subscription->unresolved_) ResolveLocked(id, false);
  subscription->unresolved_.clear();
  subscription->inbox_.clear();
}

GrpcLogTap::Subscription::~Subscription() { tap_->Unsubscribe(this); }

std::vector<GrpcLogTap::HandshakeLine> GrpcLogTap::Subscription::Take() {
  absl::MutexLock lock(&tap_->mu_);
  std::vector<HandshakeLine> lines(std::make_move_iterator(inbox_.begin()),
                                   std::make_move_iterator(inbox_.end()));
  inbox_.clear();
  return lines;
}

void GrpcLogTap::Subscription::Resolve(uint64_t id, bool claimed) {
  absl::MutexLock lock(&tap_->mu_);
  if (unresolved_.erase(id) == 0) return;
  tap_->ResolveLocked(id, claimed);
}

void GrpcLogTap::ResolveLocked(uint64_t id, bool claimed) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;  // counted as unclaimed already
  Pending& line = it->second;
  line.claimed = line.claimed || claimed;
  if (--line.undecided > 0) return;
  if (!line.claimed) WriteUnclaimedLocked(line.text);
  pending_.erase(it);
}

void GrpcLogTap::Log(const gpr_log_func_args& args) {
  if (args.severity != GPR_LOG_SEVERITY_ERROR || args.message == nullptr ||
      !IsGrpcHandshakeFailureLine(args.message)) {
    Write(FormatGrpcLogLine(args));
    return;
  }
  absl::MutexLock lock(&mu_);
  if (subscribers_.empty()) {
    WriteUnclaimedLocked(FormatGrpcLogLine(args));
    return;
  }
  const uint64_t id = next_id_++;
  pending_[id] = Pending{FormatGrpcLogLine(args),
                         static_cast<int>(subscribers_.size()), false};
  const HandshakeLine line{id, absl::Now(), args.message};
  for (Subscription* subscriber : subscribers_) {
    subscriber->inbox_.push_back(line);
    subscriber->unresolved_.insert(id);
    if (subscriber->inbox_.size() > options_.max_pending) {
      // A subscriber that stopped taking: its oldest line is unclaimed.
      const uint64_t dropped = subscriber->inbox_.front().id;
      subscriber->inbox_.pop_front();
      subscriber->unresolved_.erase(dropped);
      ResolveLocked(dropped, false);
    }
    if (subscriber->wake_) subscriber->wake_();
  }
  while (pending_.size() > options_.max_pending) {
    while (!pending_.contains(oldest_pending_)) ++oldest_pending_;
    auto oldest = pending_.find(oldest_pending_);
    if (!oldest->second.claimed) WriteUnclaimedLocked(oldest->second.text);
    pending_.erase(oldest);
  }
}

void GrpcLogTap::WriteUnclaimedLocked(const std::string& text) {
  int64_t held_back = 0;
  if (!unclaimed_.Admit("", absl::Now(), &held_back)) return;
  Write(held_back == 0
            ? text
            : absl::StrCat(text, " (and ", held_back,
                           " more handshake failures in the period before, "
                           "not shown)"));
}

void GrpcLogTap::Write(const std::string& line) const {
  if (options_.sink) {
    options_.sink(line);
  } else {
    WriteStderr(line);
  }
}

}  // namespace gradsync
