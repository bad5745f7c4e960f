#include "cli/lab/lab_sweep.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "cli/lab/cpu_meter.h"
#include "common/median.h"
#include "common/status_macros.h"

namespace gradsync {
namespace lab {
namespace {

constexpr absl::Duration kCpuSampleEvery = absl::Milliseconds(100);
constexpr absl::Duration kJobPoll = absl::Milliseconds(200);

// Samples /proc/stat in the background, so that a cell's CPU share can be
// taken over exactly the window its measured steps ran in.
class CpuSampler {
 public:
  CpuSampler() : thread_([this] { Loop(); }) {}
  ~CpuSampler() {
    stop_.store(true);
    thread_.join();
  }

  // The busy share between the samples nearest to [begin, end].
  double BusyShare(absl::Time begin, absl::Time end) {
    absl::MutexLock lock(&mu_);
    const Sample* first = nullptr;
    const Sample* last = nullptr;
    for (const Sample& s : samples_) {
      if (s.time <= begin) first = &s;
      if (last == nullptr && s.time >= end) last = &s;
    }
    if (first == nullptr && !samples_.empty()) first = &samples_.front();
    if (last == nullptr && !samples_.empty()) last = &samples_.back();
    if (first == nullptr || last == nullptr || first == last) return 0;
    return CpuBusyShare(first->cpu, last->cpu);
  }

  void Forget() {
    absl::MutexLock lock(&mu_);
    samples_.clear();
  }

 private:
  struct Sample {
    absl::Time time;
    CpuSample cpu;
  };

  void Loop() {
    while (!stop_.load()) {
      Sample s{absl::Now(), ReadCpuSample()};
      {
        absl::MutexLock lock(&mu_);
        samples_.push_back(s);
      }
      absl::SleepFor(kCpuSampleEvery);
    }
  }

  absl::Mutex mu_;
  std::vector<Sample> samples_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Polls the job until it ends or `deadline`; cancels it on the deadline.
[[nodiscard]] absl::StatusOr<JobStatus> AwaitJob(
    cli::control::ControlClient& client, const std::string& job_id,
    absl::Time deadline) {
  while (true) {
    ASSIGN_OR_RETURN(JobStatus status, client.GetJob(job_id));
    const JobState state = status.state();
    if (state == JOB_STATE_SUCCEEDED || state == JOB_STATE_FAILED ||
        state == JOB_STATE_CANCELLED) {
      return status;
    }
    if (absl::Now() > deadline) {
      client.CancelJob(job_id).IgnoreError();
      return absl::DeadlineExceededError(absl::StrCat(
          "job ", job_id, " did not finish within the cell's timeout (at step ",
          status.step(),
          "; cancelled it); raise --cell-timeout or shrink "
          "the cell"));
    }
    absl::SleepFor(kJobPoll);
  }
}

}  // namespace

absl::StatusOr<std::vector<int>> ResolveShards(absl::string_view token,
                                               int workers) {
  if (token == "all") {
    std::vector<int> all;
    for (int k = 1; k <= workers; ++k) all.push_back(k);
    return all;
  }
  if (token == "N") return std::vector<int>{workers};
  if (token == "N/2") return std::vector<int>{std::max(1, workers / 2)};
  int k = 0;
  if (!absl::SimpleAtoi(token, &k) || k < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shard count '", token, "': use a number >= 1, N, N/2 or all"));
  }
  return std::vector<int>{k};
}

absl::StatusOr<std::vector<CellSpec>> ExpandGrid(
    const SweepGrid& grid, const LabConfig& lab,
    std::vector<std::string>* skipped) {
  const int max_workers = lab.worker_hosts * lab.workers_per_host;
  std::vector<int64_t> rates = grid.rates_bps;
  if (rates.empty()) rates.push_back(lab.link.rate_bps);
  std::vector<CellSpec> cells;
  std::set<std::tuple<int64_t, int, int, int, int64_t>> seen;
  auto add = [&](CellSpec cell) {
    auto key =
        std::make_tuple(cell.rate_bps, cell.workers,
                        static_cast<int>(cell.layout), cell.shards, cell.bytes);
    if (seen.insert(key).second) cells.push_back(cell);
  };
  for (int64_t rate : rates) {
    for (int n : grid.workers) {
      if (n < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("--workers ", n, ": each N must be >= 1"));
      }
      if (n > max_workers) {
        skipped->push_back(absl::StrCat("N = ", n, ": the lab has ",
                                        max_workers,
                                        " workers (lab up --hosts)"));
        continue;
      }
      for (SyncLayout layout : grid.layouts) {
        std::vector<int> shard_counts = {0};
        if (layout != SyncLayout::kRing) {
          shard_counts.clear();
          for (const std::string& token : grid.shards) {
            ASSIGN_OR_RETURN(std::vector<int> ks, ResolveShards(token, n));
            shard_counts.insert(shard_counts.end(), ks.begin(), ks.end());
          }
        }
        for (int k : shard_counts) {
          if (layout == SyncLayout::kPsSeparate && k > lab.ps_hosts) {
            skipped->push_back(absl::StrCat(
                "ps N = ", n, " K = ", k, ": the lab has ", lab.ps_hosts,
                " server hosts (lab up --ps-hosts)"));
            continue;
          }
          if (layout == SyncLayout::kPsColocated &&
              (!lab.colocate_ps || k > n)) {
            skipped->push_back(absl::StrCat(
                "ps-colocated N = ", n, " K = ", k,
                !lab.colocate_ps ? ": the lab runs no colocated servers "
                                   "(lab up --colocate-ps)"
                                 : ": at most one colocated shard per "
                                   "worker host"));
            continue;
          }
          for (int64_t bytes : grid.bytes) {
            add({layout, n, k, bytes, rate});
          }
        }
      }
    }
  }
  return cells;
}

JobSpec CellJobSpec(const CellSpec& cell, const SweepOptions& options) {
  JobSpec spec;
  spec.set_name(absl::StrCat("lab-", SyncLayoutName(cell.layout), "-n",
                             cell.workers, cell.shards > 0 ? "-k" : "",
                             cell.shards > 0 ? absl::StrCat(cell.shards) : "",
                             "-", cell.bytes >> 20, "MiB"));
  spec.mutable_model()->set_kind("synthetic");
  spec.mutable_model()->set_synthetic_floats(cell.bytes / 4);
  spec.mutable_model()->set_synthetic_compute_ms(options.compute_ms);
  spec.mutable_dataset()->set_name("synthetic");
  spec.set_num_workers(cell.workers);
  spec.set_batch_size(cell.workers);
  spec.set_steps(options.warmup_steps + options.measured_steps);
  spec.set_seed(1);
  if (!options.profile.empty()) {
    spec.mutable_model()->set_profile(options.profile);
    spec.mutable_model()->set_profile_scale(options.profile_scale);
    spec.set_bucket_bytes(options.bucket_bytes);
  } else {
    // One bucket: the model's S moves in one collective (one PS push).
    spec.set_bucket_bytes(std::max<int64_t>(cell.bytes, 1 << 20));
  }
  spec.mutable_optimizer()->set_name("sgd");
  spec.mutable_optimizer()->set_learning_rate(0.001);
  if (cell.layout == SyncLayout::kRing) {
    spec.set_mode(SYNC_MODE_RING);
  } else {
    spec.set_mode(SYNC_MODE_PS);
    spec.mutable_ps()->set_shards(cell.shards);
    spec.mutable_ps()->set_placement(
        cell.layout == SyncLayout::kPsColocated ? "colocated" : "separate");
    spec.mutable_ps()->set_chunk_bytes(options.ps_chunk_bytes);
    spec.mutable_ps()->set_partition_bytes(options.ps_partition_bytes);
  }
  return spec;
}

absl::Status SummariseCell(const GetMetricsResponse& metrics, int world_size,
                           int warmup_steps, SweepCell* cell) {
  // Per step: the slowest rank's sync and step times, and how many ranks
  // reported it.
  struct StepTimes {
    double sync = 0, step = 0, end = 0, begin = 0;
    int ranks = 0;
  };
  std::map<int64_t, StepTimes> steps;
  for (const StepMetrics& m : metrics.metrics()) {
    if (m.step() < warmup_steps) continue;
    StepTimes& t = steps[m.step()];
    t.sync = std::max(t.sync, m.sync_busy_s());
    t.step = std::max(t.step, m.step_s());
    t.end = std::max(t.end, m.wall_time());
    const double begin = m.wall_time() - m.step_s();
    t.begin = t.ranks == 0 ? begin : std::min(t.begin, begin);
    ++t.ranks;
  }
  std::vector<double> sync, step;
  for (const auto& [index, t] : steps) {
    if (t.ranks < world_size) continue;
    sync.push_back(t.sync);
    step.push_back(t.step);
  }
  if (sync.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", cell->job_id(), " reported no step after its ", warmup_steps,
        " warm-up steps from all ", world_size, " ranks"));
  }
  cell->set_measured_steps(static_cast<int>(sync.size()));
  cell->clear_sync_samples_s();
  for (double s : sync) cell->add_sync_samples_s(s);
  cell->set_sync_s(Median(sync));
  cell->set_step_s(Median(step));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SweepCell>> RunSweep(
    cli::control::ControlClient& client, const std::vector<CellSpec>& cells,
    const SweepOptions& options, const SetRate& set_rate,
    std::vector<ProbeReport>* probes,
    const std::function<void(const SweepCell&)>& on_cell) {
  std::vector<SweepCell> results;
  std::optional<int64_t> current_rate;
  bool link_ok = false;
  CpuSampler sampler;
  for (const CellSpec& spec : cells) {
    if (!current_rate.has_value() || *current_rate != spec.rate_bps) {
      ASSIGN_OR_RETURN(ProbeReport probe, set_rate(spec.rate_bps));
      link_ok = probe.ok();
      probes->push_back(std::move(probe));
      current_rate = spec.rate_bps;
    }
    SweepCell cell;
    cell.set_link_ok(link_ok);
    cell.set_layout(std::string(SyncLayoutName(spec.layout)));
    cell.set_workers(spec.workers);
    cell.set_shards(spec.shards);
    cell.set_bytes(spec.bytes);
    cell.set_rate_bps(spec.rate_bps);
    if (spec.layout != SyncLayout::kRing) {
      cell.set_partition_bytes(options.ps_partition_bytes);
    }
    cell.set_profile(options.profile);
    cell.set_compute_ms(options.compute_ms);
    sampler.Forget();
    absl::StatusOr<std::string> job_id =
        client.SubmitJob(CellJobSpec(spec, options));
    if (!job_id.ok()) return job_id.status();
    cell.set_job_id(*job_id);
    absl::StatusOr<JobStatus> status =
        AwaitJob(client, *job_id, absl::Now() + options.cell_timeout);
    if (!status.ok()) {
      cell.set_error(std::string(status.status().message()));
    } else if (status->state() != JOB_STATE_SUCCEEDED) {
      cell.set_error(absl::StrCat("job ", *job_id, " ended ",
                                  JobState_Name(status->state()), ": ",
                                  status->message()));
    } else {
      absl::StatusOr<GetMetricsResponse> metrics = client.GetMetrics(*job_id);
      absl::Status summary = metrics.ok()
                                 ? SummariseCell(*metrics, spec.workers,
                                                 options.warmup_steps, &cell)
                                 : metrics.status();
      if (!summary.ok()) {
        cell.set_error(std::string(summary.message()));
      } else {
        // The CPU share over the measured steps.
        double begin = 0, end = 0;
        for (const StepMetrics& m : metrics->metrics()) {
          if (m.step() < options.warmup_steps) continue;
          const double b = m.wall_time() - m.step_s();
          begin = begin == 0 ? b : std::min(begin, b);
          end = std::max(end, m.wall_time());
        }
        cell.set_cpu_busy(
            sampler.BusyShare(absl::FromUnixSeconds(0) + absl::Seconds(begin),
                              absl::FromUnixSeconds(0) + absl::Seconds(end)));
        cell.set_cpu_bound(cell.cpu_busy() > options.cpu_bound_above);
      }
    }
    if (on_cell) on_cell(cell);
    results.push_back(std::move(cell));
  }
  return results;
}

}  // namespace lab
}  // namespace gradsync
