// Fuzz target: the checkpoint reader (worker/train/checkpoint.h) on any
// file contents: a checkpoint, or DATA_LOSS / INVALID_ARGUMENT, never a
// crash, an allocation the file cannot back, or a hang.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "worker/train/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = std::string(P_tmpdir) +
                                  "/gradsync-checkpoint-fuzz-" +
                                  std::to_string(getpid()) + ".ckpt";
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) abort();
  if (size > 0 && std::fwrite(data, 1, size, file) != size) abort();
  std::fclose(file);
  absl::StatusOr<gradsync::Checkpoint> checkpoint =
      gradsync::ReadCheckpoint(path);
  if (checkpoint.ok() && checkpoint->params.size() * sizeof(float) > size) {
    abort();  // more parameters than the file holds
  }
  std::remove(path.c_str());
  return 0;
}
