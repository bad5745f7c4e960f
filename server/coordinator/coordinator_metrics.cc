#include "server/coordinator/coordinator_metrics.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "jobspec/sync_mode_name.h"

namespace gradsync {
namespace {

// The states in their lifecycle order, each always rendered (0 included),
// so that a dashboard's sum by state never misses a series.
constexpr JobState kJobStates[] = {JOB_STATE_PENDING, JOB_STATE_RENDEZVOUS,
                                   JOB_STATE_RUNNING, JOB_STATE_SUCCEEDED,
                                   JOB_STATE_FAILED,  JOB_STATE_CANCELLED};

// "running" for JOB_STATE_RUNNING.
std::string StateLabel(JobState state) {
  const std::string name = JobState_Name(state);
  return absl::AsciiStrToLower(absl::StripPrefix(name, "JOB_STATE_"));
}

MetricFamily GaugeFamilyOf(const char* name, const char* help) {
  return MetricFamily{name, help, MetricType::kGauge, {}};
}

void Add(MetricFamily* family, MetricLabels labels, double value) {
  family->samples.push_back(MetricSample{std::move(labels), value, {}});
}

bool Active(const Job& job) {
  return job.state() == JOB_STATE_RENDEZVOUS ||
         job.state() == JOB_STATE_RUNNING;
}

// Rank 0's newest step metrics, newest first, at most kJobMetricsWindow
// (found among the job's last kBusbwLookback reports).
std::vector<const StepMetrics*> LeadWindow(const Job& job) {
  std::vector<const StepMetrics*> window;
  const std::vector<StepMetrics>& all = job.metrics();
  const size_t stop = all.size() > static_cast<size_t>(kBusbwLookback)
                          ? all.size() - kBusbwLookback
                          : 0;
  for (size_t i = all.size(); i > stop; --i) {
    const StepMetrics& m = all[i - 1];
    if (m.rank() != 0) continue;
    window.push_back(&m);
    if (window.size() == static_cast<size_t>(kJobMetricsWindow)) break;
  }
  return window;
}

}  // namespace

void CollectCoordinatorMetricsLocked(const CoordinatorState& state,
                                     absl::Time now,
                                     std::vector<MetricFamily>* out) {
  const std::vector<const Job*> jobs = state.jobs.All();

  MetricFamily by_state = GaugeFamilyOf(
      "gradsync_coordinator_jobs",
      "Jobs the coordinator keeps (ended ones until retired), by state.");
  std::map<JobState, int> counts;
  for (const Job* job : jobs) ++counts[job->state()];
  for (JobState s : kJobStates) {
    Add(&by_state, {{"state", StateLabel(s)}}, counts[s]);
  }
  out->push_back(std::move(by_state));

  MetricFamily workers = GaugeFamilyOf("gradsync_coordinator_workers",
                                       "Registered worker daemons.");
  MetricFamily servers = GaugeFamilyOf("gradsync_coordinator_parameter_servers",
                                       "Registered parameter servers.");
  MetricFamily age = GaugeFamilyOf(
      "gradsync_coordinator_heartbeat_age_seconds",
      "Seconds since each live daemon's last heartbeat (lost at the lease).");
  int live = 0, lost = 0;
  for (const WorkerRecord* w : state.workers.All()) {
    if (w->lost) {
      ++lost;
      continue;
    }
    ++live;
    Add(&age, {{"daemon", w->id}, {"kind", "worker"}, {"host", w->host}},
        absl::ToDoubleSeconds(now - w->last_heartbeat));
  }
  Add(&workers, {{"state", "live"}}, live);
  Add(&workers, {{"state", "lost"}}, lost);
  live = lost = 0;
  for (const PsRecord* ps : state.servers.All()) {
    if (ps->lost) {
      ++lost;
      continue;
    }
    ++live;
    Add(&age, {{"daemon", ps->id}, {"kind", "ps"}, {"host", ps->host}},
        absl::ToDoubleSeconds(now - ps->last_heartbeat));
  }
  Add(&servers, {{"state", "live"}}, live);
  Add(&servers, {{"state", "lost"}}, lost);
  out->push_back(std::move(workers));
  out->push_back(std::move(servers));
  out->push_back(std::move(age));

  MetricFamily info =
      GaugeFamilyOf("gradsync_job_info",
                    "1 for each running job: its current sync mode and model.");
  MetricFamily step = GaugeFamilyOf(
      "gradsync_job_step", "The lowest step every rank of the job reported.");
  MetricFamily loss =
      GaugeFamilyOf("gradsync_job_loss", "Rank 0's latest loss.");
  MetricFamily samples = GaugeFamilyOf(
      "gradsync_job_samples_per_second",
      "Training samples per second over the job's last steps, all ranks.");
  MetricFamily step_s =
      GaugeFamilyOf("gradsync_job_step_seconds",
                    "Rank 0's mean step time over the last steps.");
  MetricFamily phase = GaugeFamilyOf(
      "gradsync_job_step_phase_seconds",
      "Rank 0's mean step time by phase: compute, exposed communication "
      "(not hidden behind compute) and idle.");
  MetricFamily busbw = GaugeFamilyOf(
      "gradsync_job_busbw_bytes_per_second",
      "Bus bandwidth of the gradient sync (nccl-tests' busbw) of the job's "
      "latest step in each mode.");
  for (const Job* job : jobs) {
    if (!Active(*job)) continue;
    const MetricLabels labels = {{"job", job->id()}};
    Add(&info,
        {{"job", job->id()},
         {"mode", SyncModeName(job->CurrentMode())},
         {"model", job->spec().model().kind()}},
        1);
    Add(&step, labels, static_cast<double>(job->MinStep()));
    const std::vector<const StepMetrics*> window = LeadWindow(*job);
    if (window.empty()) continue;
    Add(&loss, labels, window.front()->loss());
    double n = 0, total = 0, compute = 0, comm = 0, idle = 0;
    for (const StepMetrics* m : window) {
      n += static_cast<double>(m->samples());
      total += m->step_s();
      compute += m->compute_s();
      comm += m->comm_s();
      idle += m->idle_s();
    }
    const double count = static_cast<double>(window.size());
    const int world = std::max(1, job->world_size());
    Add(&samples, labels, total > 0 ? n * world / total : 0);
    Add(&step_s, labels, total / count);
    Add(&phase, {{"job", job->id()}, {"phase", "compute"}}, compute / count);
    Add(&phase, {{"job", job->id()}, {"phase", "communication"}}, comm / count);
    Add(&phase, {{"job", job->id()}, {"phase", "idle"}}, idle / count);
    // The latest step of each mode, within the lookback.
    std::map<std::string, double> latest;
    const std::vector<StepMetrics>& all = job->metrics();
    for (size_t i = all.size(), seen = 0;
         i > 0 && seen < static_cast<size_t>(kBusbwLookback) &&
         latest.size() < 2;
         --i, ++seen) {
      const StepMetrics& m = all[i - 1];
      if (m.rank() == 0 && m.busbw_gbps() > 0) {
        latest.emplace(SyncModeName(m.mode()), m.busbw_gbps() * 1e9);
      }
    }
    for (const auto& [mode, bytes_per_s] : latest) {
      Add(&busbw, {{"job", job->id()}, {"mode", mode}}, bytes_per_s);
    }
  }
  out->push_back(std::move(info));
  out->push_back(std::move(step));
  out->push_back(std::move(loss));
  out->push_back(std::move(samples));
  out->push_back(std::move(step_s));
  out->push_back(std::move(phase));
  out->push_back(std::move(busbw));
}

}  // namespace gradsync
