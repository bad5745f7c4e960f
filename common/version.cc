#include "common/version.h"

#ifndef GRADSYNC_VERSION
#error "GRADSYNC_VERSION is set by common/CMakeLists.txt"
#endif

namespace gradsync {

const char* Version() { return GRADSYNC_VERSION; }

}  // namespace gradsync
