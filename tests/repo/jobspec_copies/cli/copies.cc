// A fixture of scripts/check_jobspec_copies.sh (tests/repo/CMakeLists.txt):
// one copy of each kind it must find. Not compiled.
#include <google/protobuf/util/json_util.h>

namespace fixture {

constexpr long kDefaultPartitionBytes = 4 << 20;
constexpr double kDefaultMomentum = 0.9;

const char* Mode(SyncMode mode) { return mode == SYNC_MODE_PS ? "ps" : "ring"; }

void Parse(const std::string& json, JobSpec* spec) {
  google::protobuf::util::JsonStringToMessage(json, spec);
}

}  // namespace fixture
