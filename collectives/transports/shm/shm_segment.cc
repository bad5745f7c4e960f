#include "collectives/transports/shm/shm_segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "security/secret.h"

namespace gradsync {
namespace {

constexpr size_t kPage = 4096;

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Bytes before the data: header and both ring controls, page aligned.
size_t ControlBytes() {
  return RoundUp(sizeof(SegmentHeader) + 2 * sizeof(RingControl), kPage);
}

[[nodiscard]] absl::Status Errno(absl::string_view what,
                                 const std::string& name) {
  return absl::InternalError(absl::StrCat(
      what, " of shared memory segment ", name, ": ", std::strerror(errno),
      " (is /dev/shm mounted and large "
      "enough? see docs/collectives.md to use TCP instead)"));
}

}  // namespace

ShmSegment::~ShmSegment() {
  Unlink();
  if (base_ != nullptr) munmap(base_, bytes_);
}

std::string ShmSegment::token() const {
  return std::string(reinterpret_cast<const char*>(header_->token),
                     kShmTokenBytes);
}

void ShmSegment::Unlink() {
  if (!linked_) return;
  shm_unlink(name_.c_str());
  linked_ = false;
}

absl::StatusOr<std::unique_ptr<ShmSegment>> ShmSegment::Create(
    size_t capacity) {
  std::unique_ptr<ShmSegment> seg(new ShmSegment());
  seg->capacity_ = RoundUp(std::max<size_t>(capacity, kPage), kPage);
  seg->bytes_ = ControlBytes() + 2 * seg->capacity_;
  seg->name_ =
      absl::StrCat("/gradsync-", absl::BytesToHexString(RandomSecret(16)));
  const int fd =
      shm_open(seg->name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("creation", seg->name_);
  seg->linked_ = true;
  if (ftruncate(fd, static_cast<off_t>(seg->bytes_)) != 0) {
    const absl::Status s = Errno("sizing", seg->name_);
    close(fd);
    return s;
  }
  seg->base_ =
      mmap(nullptr, seg->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (seg->base_ == MAP_FAILED) {
    seg->base_ = nullptr;
    return Errno("mapping", seg->name_);
  }
  char* base = static_cast<char*>(seg->base_);
  // The fresh object is zero-filled; construct the atomics in place.
  seg->header_ = new (base) SegmentHeader();
  seg->header_->magic = kShmMagic;
  seg->header_->version = kShmVersion;
  seg->header_->capacity = seg->capacity_;
  const std::string token = RandomSecret(kShmTokenBytes);
  std::memcpy(seg->header_->token, token.data(), kShmTokenBytes);
  seg->header_->closed[0].store(0);
  seg->header_->closed[1].store(0);
  seg->rings_ = new (base + sizeof(SegmentHeader)) RingControl[2];
  seg->data_[0] = base + ControlBytes();
  seg->data_[1] = seg->data_[0] + seg->capacity_;
  return seg;
}

absl::StatusOr<std::unique_ptr<ShmSegment>> ShmSegment::Open(
    const std::string& name, const std::string& token) {
  std::unique_ptr<ShmSegment> seg(new ShmSegment());
  seg->name_ = name;
  const int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return Errno("opening", name);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const absl::Status s = Errno("inspecting", name);
    close(fd);
    return s;
  }
  if (st.st_uid != geteuid() || (st.st_mode & 077) != 0 ||
      static_cast<size_t>(st.st_size) < ControlBytes()) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("shared memory segment ", name,
                     " is not private to this user or too small; refusing it"));
  }
  seg->bytes_ = static_cast<size_t>(st.st_size);
  seg->base_ =
      mmap(nullptr, seg->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (seg->base_ == MAP_FAILED) {
    seg->base_ = nullptr;
    return Errno("mapping", name);
  }
  char* base = static_cast<char*>(seg->base_);
  seg->header_ = reinterpret_cast<SegmentHeader*>(base);
  const SegmentHeader& h = *seg->header_;
  if (h.magic != kShmMagic || h.version != kShmVersion ||
      token.size() != kShmTokenBytes ||
      std::memcmp(h.token, token.data(), kShmTokenBytes) != 0 ||
      ControlBytes() + 2 * h.capacity != seg->bytes_) {
    return absl::FailedPreconditionError(
        absl::StrCat("shared memory segment ", name,
                     " is not the one the peer announced (magic, version, "
                     "token or size differ); refusing it"));
  }
  seg->capacity_ = h.capacity;
  seg->rings_ = reinterpret_cast<RingControl*>(base + sizeof(SegmentHeader));
  seg->data_[0] = base + ControlBytes();
  seg->data_[1] = seg->data_[0] + seg->capacity_;
  return seg;
}

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected,
               absl::Duration timeout) {
  const timespec ts = absl::ToTimespec(std::max(timeout, absl::ZeroDuration()));
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected,
          &ts, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX,
          nullptr, nullptr, 0);
}

}  // namespace gradsync
