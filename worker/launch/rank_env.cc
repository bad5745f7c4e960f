#include "worker/launch/rank_env.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/launch/rank_process.h"

extern char** environ;

namespace gradsync {

std::vector<std::string> BuildRankEnvironment(const RankEnvInputs& in) {
  const Assignment& a = *in.assignment;
  std::map<std::string, std::string> env;
  for (const std::string& entry : in.base) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  // Whatever the daemon was started with must not leak a user's token to
  // the job, nor steer it to another cluster.
  for (auto it = env.begin(); it != env.end();) {
    if (it->first.rfind("GRADSYNC_", 0) == 0 ||
        it->first.rfind("TORCHELASTIC_", 0) == 0) {
      it = env.erase(it);
    } else {
      ++it;
    }
  }
  const int local_world = a.ranks_size();
  const int rank = a.ranks(in.index);
  const int lowest = *std::min_element(a.ranks().begin(), a.ranks().end());
  const int groups =
      std::max(1, (a.world_size() + local_world - 1) / local_world);
  const Device& device = a.devices(in.index);
  env["RANK"] = absl::StrCat(rank);
  env["LOCAL_RANK"] = absl::StrCat(in.index);
  env["WORLD_SIZE"] = absl::StrCat(a.world_size());
  env["LOCAL_WORLD_SIZE"] = absl::StrCat(local_world);
  env["GROUP_RANK"] = absl::StrCat(lowest / local_world);
  env["GROUP_WORLD_SIZE"] = absl::StrCat(groups);
  env["ROLE_RANK"] = env["RANK"];
  env["ROLE_WORLD_SIZE"] = env["WORLD_SIZE"];
  env["ROLE_NAME"] = "default";
  env["TORCHELASTIC_RESTART_COUNT"] = absl::StrCat(a.spec().restart_count());
  env["TORCHELASTIC_MAX_RESTARTS"] =
      absl::StrCat(a.spec().restart_count() + a.spec().max_restarts());
  env["TORCHELASTIC_RUN_ID"] = a.job_id();
  env["OMP_NUM_THREADS"] = absl::StrCat(std::max(1, a.spec().blas_threads()));
  env["GRADSYNC_JOB_ID"] = a.job_id();
  env["GRADSYNC_COORDINATOR"] = in.coordinator;
  env["GRADSYNC_TLS_DIR"] = in.tls_dir;
  env["GRADSYNC_DEVICE"] = absl::StrCat(device.kind(), ":", device.index());
  env["GRADSYNC_RANK_FILE"] = in.rank_file;
  env["GRADSYNC_REPORT_FD"] = absl::StrCat(kReportFd);
  env["GRADSYNC_AGENT"] = in.agent_tag;
  if (!in.python_dir.empty()) {
    auto old = env.find("PYTHONPATH");
    env["PYTHONPATH"] = old == env.end() || old->second.empty()
                            ? in.python_dir
                            : absl::StrCat(in.python_dir, ":", old->second);
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) {
    out.push_back(absl::StrCat(name, "=", value));
  }
  return out;
}

std::vector<std::string> ProcessEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    out.emplace_back(*e);
  }
  return out;
}

}  // namespace gradsync
