#include "tests/collectives/kill_one_rank.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"
#include "collectives/file_store.h"

namespace gradsync::testing {

KillOneRankRun KillOneRankMidStream(const TcpOptions& options, int ranks,
                                    int victim) {
  KillOneRankRun run;
  run.status.assign(ranks, 0);
  run.error.assign(ranks, "");
  char tmpl[] = "/tmp/gradsync-kill-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return run;
  const std::string dir = tmpl;
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      FileStore store(dir);
      auto comm = CreateTcpCommunicator(&store, r, ranks, options);
      if (!comm.ok()) {
        std::ofstream(dir + "/err." + std::to_string(r))
            << comm.status().message();
        _exit(3);
      }
      std::vector<float> buf(1 << 20, 1.0f);
      for (int it = 0; it < 100000; ++it) {
        if (r == victim && it == 5) raise(SIGKILL);
        absl::Status s = (*comm)->AllReduce(buf.data(), buf.data(), buf.size(),
                                            DataType::kFloat32, ReduceOp::kMax);
        if (!s.ok()) {
          std::ofstream(dir + "/err." + std::to_string(r)) << s.message();
          _exit(0);
        }
      }
      _exit(4);  // never noticed the death
    }
    pids.push_back(pid);
  }
  const absl::Time start = absl::Now();
  for (int r = 0; r < ranks && run.hung_rank < 0; ++r) {
    while (pids[r] > 0 && waitpid(pids[r], &run.status[r], WNOHANG) == 0) {
      if (absl::Now() - start > options.timeout) {
        for (pid_t p : pids) kill(p, SIGKILL);
        run.hung_rank = r;
        break;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    if (r == victim) continue;
    std::ifstream in(dir + "/err." + std::to_string(r));
    std::stringstream error;
    error << in.rdbuf();
    run.error[r] = error.str();
  }
  run.elapsed = absl::Now() - start;
  for (pid_t p : pids) {
    if (p > 0) waitpid(p, nullptr, WNOHANG);
  }
  std::filesystem::remove_all(dir);
  return run;
}

}  // namespace gradsync::testing
