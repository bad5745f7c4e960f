// ViewGuard: the readers/writer protocol that lets a PsShard's transports
// send its parameters (and optimizer state) without copying them. A view
// (a ShardViewRef handed out by Pull or AcquireState) counts as a reader
// for as long as it lives; a writer (the optimizer applying a step, a seed
// replacing the state) waits until no reader is left and keeps new readers
// out while it writes. Views are short: the time to send one shard's
// bytes.
//
//   // mu held:
//   RETURN_IF_ERROR(guard.BeginWriteLocked(deadline, ended, "applying"));
//   mu.Unlock(); ... change the parameters ... mu.Lock();
//   guard.EndWriteLocked();
//
// The guard has no lock of its own: it counts under the shard's mutex
// (given at construction), so that a shard's conditions and the guard's
// are awaited together.
//
// Errors: BeginWriteLocked returns DEADLINE_EXCEEDED naming the readers
// still sending.
// Threading: every method but the view deleter's release runs with the
// shard's mutex held; the release takes it.
#ifndef GRADSYNC_SERVER_PS_SHARD_VIEW_GUARD_H_
#define GRADSYNC_SERVER_PS_SHARD_VIEW_GUARD_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace gradsync {

class ViewGuard {
 public:
  // `mu` is the shard's mutex; it must outlive the guard.
  explicit ViewGuard(absl::Mutex* mu) : mu_(mu) {}
  ViewGuard(const ViewGuard&) = delete;
  ViewGuard& operator=(const ViewGuard&) = delete;

  // Waits until no reader is left and nobody writes, then writes. Stops
  // waiting when `ended()` returns an error (the shard was released),
  // which is returned; DEADLINE_EXCEEDED, naming `what` and the readers, if
  // `deadline` passes first.
  [[nodiscard]] absl::Status BeginWriteLocked(
      absl::Time deadline, absl::FunctionRef<absl::Status()> ended,
      const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_);
  void EndWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_) {
    writing_ = false;
  }
  bool writing() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_) { return writing_; }

  // `view` as a shared read handle: a reader until the last copy is
  // dropped. `owner` keeps the guard (and its mutex) alive until then.
  template <typename View>
  std::shared_ptr<const View> ShareLocked(View* view,
                                          std::shared_ptr<const void> owner)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(*mu_) {
    ++readers_;
    return std::shared_ptr<const View>(
        view, [this, owner = std::move(owner)](const View* v) {
          delete v;
          ReleaseReader();
        });
  }

 private:
  void ReleaseReader() ABSL_LOCKS_EXCLUDED(*mu_);

  absl::Mutex* const mu_;
  int readers_ ABSL_GUARDED_BY(*mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(*mu_) = false;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_SHARD_VIEW_GUARD_H_
