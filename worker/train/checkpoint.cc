#include "worker/train/checkpoint.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/train/param_hash.h"

namespace gradsync {
namespace {

// Version 2 adds the checksum trailer; version 1 files still load.
constexpr char kMagic[8] = {'G', 'S', 'C', 'K', 'P', 'T', '0', '2'};
constexpr char kMagicV1[8] = {'G', 'S', 'C', 'K', 'P', 'T', '0', '1'};

// Over everything the file holds: the fields, then the parameters and each
// optimizer buffer (HashParameters of each, which covers its length).
uint64_t Checksum(int64_t steps_done, absl::Span<const float> params,
                  uint8_t kind, uint64_t step,
                  const std::vector<std::vector<float>>& buffers) {
  constexpr uint64_t kPrime = 1099511628211ULL;  // FNV-1a's
  uint64_t h = 14695981039346656037ULL;
  for (uint64_t v :
       {static_cast<uint64_t>(steps_done), static_cast<uint64_t>(kind), step,
        static_cast<uint64_t>(buffers.size()), HashParameters(params)}) {
    h = (h ^ v) * kPrime;
  }
  for (const std::vector<float>& buffer : buffers) {
    h = (h ^ HashParameters(buffer)) * kPrime;
  }
  return h;
}

template <typename T>
void Put(std::ofstream& out, const T& value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof(value));
}

void PutFloats(std::ofstream& out, absl::Span<const float> values) {
  const uint64_t n = values.size();
  Put(out, n);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(n * sizeof(float)));
}

class Reader {
 public:
  Reader(std::ifstream& in, const std::string& path) : in_(in), path_(path) {}

  template <typename T>
  [[nodiscard]] absl::Status Get(T* value) {
    in_.read(reinterpret_cast<char*>(value), sizeof(*value));
    return Check();
  }

  [[nodiscard]] absl::Status GetFloats(std::vector<float>* values,
                                       uint64_t limit) {
    uint64_t n = 0;
    RETURN_IF_ERROR(Get(&n));
    if (n > limit) {
      return absl::DataLossError(
          absl::StrCat(path_, ": truncated or corrupt checkpoint (a vector of ",
                       n, " floats does not fit in the file)"));
    }
    values->resize(n);
    in_.read(reinterpret_cast<char*>(values->data()),
             static_cast<std::streamsize>(n * sizeof(float)));
    return Check();
  }

 private:
  [[nodiscard]] absl::Status Check() {
    if (in_) return absl::OkStatus();
    return absl::DataLossError(absl::StrCat(path_, ": truncated checkpoint"));
  }

  std::ifstream& in_;
  const std::string& path_;
};

}  // namespace

std::string CheckpointPath(const std::string& directory, int64_t steps_done) {
  return absl::StrCat(directory, "/step-", steps_done, ".ckpt");
}

absl::Status WriteCheckpoint(const std::string& path, int64_t steps_done,
                             absl::Span<const float> params,
                             const OptimizerState& optimizer) {
  std::error_code ec;
  const std::filesystem::path target(path);
  if (target.has_parent_path()) {
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot create checkpoint directory ",
                       target.parent_path().string(), ": ", ec.message()));
    }
  }
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(kMagic, sizeof(kMagic));
    Put(out, steps_done);
    PutFloats(out, params);
    Put(out, static_cast<uint8_t>(optimizer.kind));
    Put(out, static_cast<uint64_t>(optimizer.step));
    Put(out, static_cast<uint32_t>(optimizer.buffers.size()));
    for (const auto& buffer : optimizer.buffers) PutFloats(out, buffer);
    Put(out,
        Checksum(steps_done, params, static_cast<uint8_t>(optimizer.kind),
                 static_cast<uint64_t>(optimizer.step), optimizer.buffers));
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return absl::InternalError(absl::StrCat("cannot write checkpoint ", tmp,
                                              ": ", std::strerror(errno)));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot rename checkpoint to ", path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("no checkpoint at ", path));
  const uint64_t limit = std::filesystem::file_size(path) / sizeof(float);
  char magic[sizeof(kMagic)];
  in.read(magic, sizeof(magic));
  const bool v1 = in && std::memcmp(magic, kMagicV1, sizeof(kMagicV1)) == 0;
  if (!in || (!v1 && std::memcmp(magic, kMagic, sizeof(kMagic)) != 0)) {
    return absl::DataLossError(
        absl::StrCat(path, " is not a gradsync checkpoint (bad magic)"));
  }
  Reader r(in, path);
  Checkpoint c;
  RETURN_IF_ERROR(r.Get(&c.steps_done));
  RETURN_IF_ERROR(r.GetFloats(&c.params, limit));
  uint8_t kind = 0;
  uint64_t step = 0;
  uint32_t buffers = 0;
  RETURN_IF_ERROR(r.Get(&kind));
  RETURN_IF_ERROR(r.Get(&step));
  RETURN_IF_ERROR(r.Get(&buffers));
  if (buffers > 8) {
    return absl::DataLossError(
        absl::StrCat(path, ": implausible optimizer buffer count ", buffers));
  }
  c.optimizer.kind = static_cast<OptimizerKind>(kind);
  c.optimizer.step = step;
  c.optimizer.size = c.params.size();
  c.optimizer.buffers.resize(buffers);
  for (auto& buffer : c.optimizer.buffers) {
    RETURN_IF_ERROR(r.GetFloats(&buffer, limit));
  }
  if (!v1) {
    uint64_t stored = 0;
    RETURN_IF_ERROR(r.Get(&stored));
    if (stored !=
        Checksum(c.steps_done, c.params, kind, step, c.optimizer.buffers)) {
      return absl::DataLossError(absl::StrCat(
          path, " is corrupt: its checksum does not match its contents"));
    }
  }
  RETURN_IF_ERROR(ValidateOptimizerState(c.optimizer));
  return c;
}

}  // namespace gradsync
