// Buffers the benchmark hands to a Communicator: host memory for the TCP
// ring, CUDA device memory for NCCL (device_memory.h). Each buffer has a
// host view where the inputs are filled and the results checked; for host
// memory it is the buffer itself, so no copy is made.
//
//   std::unique_ptr<BenchMemory> memory = MakeHostMemory();
//   ASSIGN_OR_RETURN(std::unique_ptr<BenchBuffer> buf, memory->Allocate(n));
//   FillInput(type, rank, buf->host(), count);
//   RETURN_IF_ERROR(buf->HostToData(0, count * element));
//   RETURN_IF_ERROR(comm->AllReduce(buf->data(), buf->data(), ...));
//
// Thread-compatible.
#ifndef GRADSYNC_CLI_BENCH_BENCH_MEMORY_H_
#define GRADSYNC_CLI_BENCH_BENCH_MEMORY_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync {
namespace cli {
namespace bench {

class BenchBuffer {
 public:
  virtual ~BenchBuffer() = default;
  // What the communicator reads and writes (device memory for NCCL).
  virtual void* data() = 0;
  // Host memory of the same size for filling and checking.
  virtual void* host() = 0;
  virtual size_t bytes() const = 0;
  // Copy [offset, offset + bytes) between the host view and data(); no-ops
  // when they are the same memory. INVALID_ARGUMENT out of range; the
  // device's error otherwise.
  [[nodiscard]] virtual absl::Status HostToData(size_t offset,
                                                size_t bytes) = 0;
  [[nodiscard]] virtual absl::Status DataToHost(size_t offset,
                                                size_t bytes) = 0;
};

class BenchMemory {
 public:
  virtual ~BenchMemory() = default;
  // A buffer of `bytes` bytes (at least one, so that data() is never null).
  // RESOURCE_EXHAUSTED when it cannot be had.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<BenchBuffer>> Allocate(
      size_t bytes) = 0;
  // What the "Using devices" line says: "cpu", "cuda:0 NVIDIA H100 ...".
  virtual std::string Describe() const = 0;
};

// Page-aligned host memory, touched at allocation so that no page fault
// lands inside a timed iteration.
std::unique_ptr<BenchMemory> MakeHostMemory();

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_BENCH_MEMORY_H_
