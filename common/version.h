// The version of this gradsync build (CMake's project version), which every
// binary prints with --version next to the wire version its daemons speak
// (common/wire_version.h; common/flags.h's VersionLine).
#ifndef GRADSYNC_COMMON_VERSION_H_
#define GRADSYNC_COMMON_VERSION_H_

namespace gradsync {

// "0.1.0": major.minor.patch of the build.
const char* Version();

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_VERSION_H_
