// Fixed-width integers in little-endian byte order, for the wire heads of
// gradsync's own TCP protocols (the tensor plane, the link probes): the
// same bytes on any host, with no alignment needed at `in` or `out`.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COMMON_LITTLE_ENDIAN_H_
#define GRADSYNC_COMMON_LITTLE_ENDIAN_H_

#include <cstdint>

namespace gradsync {

inline void PutLittleEndian32(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(v >> (8 * i));
}

inline void PutLittleEndian64(char* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
}

inline uint32_t GetLittleEndian32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return v;
}

inline uint64_t GetLittleEndian64(const char* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return v;
}

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_LITTLE_ENDIAN_H_
