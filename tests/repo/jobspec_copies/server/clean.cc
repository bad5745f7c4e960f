// A fixture of scripts/check_jobspec_copies.sh: nothing to find here (a
// socket buffer of 4 MiB is not the partition default). Not compiled.
namespace fixture {

constexpr int kSocketBufferBytes = 4 << 20;

}  // namespace fixture
