// Ranks as processes (fork) over a FileStore in a fresh directory, each
// running all-reduces of 1 Mi floats in a loop; rank `victim` SIGKILLs
// itself at its fifth. Every survivor writes the error its collective
// failed with and exits 0 (3: rendezvous failed, 4: never noticed). The
// transports' tests (TCP, shared memory) judge what the survivors said.
#ifndef GRADSYNC_TESTS_COLLECTIVES_KILL_ONE_RANK_H_
#define GRADSYNC_TESTS_COLLECTIVES_KILL_ONE_RANK_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "collectives/tcp/tcp_communicator.h"

namespace gradsync::testing {

struct KillOneRankRun {
  // Per rank: waitpid's status and the error it wrote ("" for the victim).
  std::vector<int> status;
  std::vector<std::string> error;
  // From the forks to the last survivor's exit.
  absl::Duration elapsed;
  // The first rank still running after options.timeout (then every rank
  // was killed), or -1.
  int hung_rank = -1;
};

// `options.timeout` bounds the whole run as well as each collective.
KillOneRankRun KillOneRankMidStream(const TcpOptions& options, int ranks,
                                    int victim);

}  // namespace gradsync::testing

#endif  // GRADSYNC_TESTS_COLLECTIVES_KILL_ONE_RANK_H_
