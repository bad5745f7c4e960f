// ShmSegment: the shared memory that two ranks on one host share, one
// segment per pair of ranks, holding one single-producer single-consumer
// byte ring per direction. ShmPair (shm_pair.h) moves the data.
//
// Layout (every block starts on its own cache line, so that the writer's
// and the reader's counters never share one):
//
//   SegmentHeader   magic, version, capacity, a random token, closed flags
//   RingControl[0]  endpoint 0 (the creator) -> endpoint 1
//   RingControl[1]  endpoint 1 -> endpoint 0
//   data[0]         `capacity` bytes
//   data[1]         `capacity` bytes
//
// A ring's head and tail count bytes ever written and read (they never
// wrap); the bytes in flight are [tail, head), at offsets modulo capacity.
// Wake-ups use futexes on the 32-bit event words (the shared, not the
// process-private, futex: the two ends are usually different processes).
//
// Naming and security: Create() makes a POSIX shm object named
// "/gradsync-<128 random bits>" with O_EXCL and mode 0600 (only this user,
// and nothing may pre-create the name); the creator sends the name and the
// token to its peer over the already authenticated TCP connection and
// unlinks the name as soon as the peer has mapped it (or on any failure),
// so the segment is reachable by name for milliseconds only and never
// through the rendezvous store. See docs/security.md.
//
// Errors: INTERNAL with errno text for system calls; FAILED_PRECONDITION
// when an opened segment is not what the peer announced.
// Threading: the mapping is immutable; the rings are used as documented in
// shm_pair.h.
#ifndef GRADSYNC_COLLECTIVES_TRANSPORTS_SHM_SHM_SEGMENT_H_
#define GRADSYNC_COLLECTIVES_TRANSPORTS_SHM_SHM_SEGMENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync {

inline constexpr uint32_t kShmMagic = 0x47534d53;  // "GSMS"
inline constexpr uint32_t kShmVersion = 1;
inline constexpr size_t kShmTokenBytes = 16;

// One direction of a segment.
struct alignas(64) RingControl {
  // Written by the writer.
  alignas(64) std::atomic<uint64_t> head{0};
  std::atomic<uint32_t> data_event{0};  // futex: bumped when head moved
  std::atomic<uint32_t> writer_waiting{0};
  // Written by the reader.
  alignas(64) std::atomic<uint64_t> tail{0};
  std::atomic<uint32_t> space_event{0};  // futex: bumped when tail moved
  std::atomic<uint32_t> reader_waiting{0};
};

struct alignas(64) SegmentHeader {
  uint32_t magic;
  uint32_t version;
  uint64_t capacity;
  uint8_t token[kShmTokenBytes];
  // Set by endpoint e when it shuts down or goes away (never cleared).
  std::atomic<uint32_t> closed[2];
};

class ShmSegment {
 public:
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates and maps a fresh segment with rings of `capacity` bytes
  // (rounded up to a multiple of 4 KiB), as endpoint 0.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ShmSegment>> Create(
      size_t capacity);
  // Maps the segment `name` as endpoint 1; FAILED_PRECONDITION unless it
  // carries `token` and a valid header.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ShmSegment>> Open(
      const std::string& name, const std::string& token);

  const std::string& name() const { return name_; }
  // The random token written into the header (creator only).
  std::string token() const;
  // Removes the name (creator only; idempotent). The mapping stays.
  void Unlink();

  SegmentHeader& header() const { return *header_; }
  RingControl& ring(int direction) const { return rings_[direction]; }
  char* data(int direction) const { return data_[direction]; }
  size_t capacity() const { return capacity_; }

 private:
  ShmSegment() = default;

  std::string name_;
  bool linked_ = false;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  size_t capacity_ = 0;
  SegmentHeader* header_ = nullptr;
  RingControl* rings_ = nullptr;
  char* data_[2] = {nullptr, nullptr};
};

// Blocks while *word == expected, at most `timeout` (shared futex).
// Spurious returns are allowed; callers re-check their condition.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected,
               absl::Duration timeout);
// Wakes every waiter on `word`.
void FutexWakeAll(std::atomic<uint32_t>* word);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TRANSPORTS_SHM_SHM_SEGMENT_H_
