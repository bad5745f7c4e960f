#include "worker/daemon/job_runner.h"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/host.h"
#include "common/status_macros.h"
#include "security/path_roots.h"
#include "worker/daemon/rank_report.h"
#include "worker/daemon/timed_communicator.h"

namespace gradsync {
namespace {

// kCoordinatorOutageTolerance (rank_report.h): how long a rank's report
// waits for an unreachable coordinator; the step metrics wait as long
// (MetricsReporterOptions::outage_tolerance).
// How long a finishing rank waits for its metrics to reach the coordinator
// before reporting its end (after which the job takes no more metrics).
constexpr absl::Duration kMetricsFlushTimeout = kCoordinatorOutageTolerance;
// FinishStep's deadline beyond the per-collective timeout: the backend's
// own deadline, which names the late peer, should expire first.
constexpr absl::Duration kStepDeadlineSlack = absl::Seconds(30);
// How often a rank in rendezvous looks for cancellation.
constexpr absl::Duration kCancelPoll = absl::Milliseconds(50);

// "cpu:0", "cuda:1"; "cpu" for an assignment without devices.
std::string DeviceName(const Assignment& a, int i) {
  if (a.devices_size() == 0) return "cpu";
  return absl::StrCat(a.devices(i).kind(), ":", a.devices(i).index());
}

}  // namespace

absl::StatusOr<std::unique_ptr<JobRunner>> JobRunner::Start(
    const Assignment& assignment, JobRunnerConfig config,
    std::shared_ptr<CoordinatorClient> client) {
  if (config.worker_id.empty() || config.blas == nullptr || client == nullptr) {
    return absl::InvalidArgumentError(
        "a job runner needs a worker id, a BLAS policy and a coordinator "
        "client");
  }
  if (absl::Status s = ValidateAssignment(assignment); !s.ok()) return s;
  std::unique_ptr<JobRunner> runner(
      new JobRunner(assignment, std::move(config), std::move(client)));
  absl::MutexLock lock(&runner->join_mu_);
  runner->main_ = std::thread([r = runner.get()] { r->Main(); });
  return runner;
}

absl::Status ValidateAssignment(const Assignment& a) {
  if (a.job_id().empty()) {
    return absl::InvalidArgumentError("assignment without a job id");
  }
  if (a.world_size() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "assignment of job ", a.job_id(), " has world size ", a.world_size()));
  }
  if (a.ranks_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment of job ", a.job_id(), " has no rank"));
  }
  if (a.devices_size() != 0 && a.devices_size() != a.ranks_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment of job ", a.job_id(), " has ", a.ranks_size(),
                     " ranks but ", a.devices_size(), " devices"));
  }
  absl::flat_hash_set<int> seen;
  for (int i = 0; i < a.ranks_size(); ++i) {
    const int r = a.ranks(i);
    if (r < 0 || r >= a.world_size() || !seen.insert(r).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("assignment of job ", a.job_id(), " has rank ", r,
                       " (out of [0, ", a.world_size(), ") or repeated)"));
    }
    if (a.devices_size() == 0) continue;
    const Device& d = a.devices(i);
    if ((d.kind() != "cpu" && d.kind() != "cuda") || d.index() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", r, " of job ", a.job_id(), " is placed on device '",
          d.kind(), ":", d.index(),
          "'; this worker hosts cpu:<n> and cuda:<n> devices only"));
    }
  }
  return absl::OkStatus();
}

StoreScope JobStoreScope(const Assignment& a, const JobRunnerConfig& config) {
  StoreScope scope;
  scope.set_worker_id(config.worker_id);
  scope.set_credential(config.credential);
  scope.set_job_id(a.job_id());
  scope.set_generation(a.generation());
  return scope;
}

MetricsReporterOptions JobReporterOptions(const JobRunnerConfig& config) {
  MetricsReporterOptions o;
  o.rpc_timeout = config.rpc_timeout;
  o.credential = config.credential;
  return o;
}

JobRunner::JobRunner(const Assignment& assignment, JobRunnerConfig config,
                     std::shared_ptr<CoordinatorClient> client)
    : assignment_(assignment),
      config_(std::move(config)),
      client_(std::move(client)),
      store_(std::make_shared<CoordinatorStore>(
          client_, JobStoreScope(assignment_, config_))),
      reporter_(client_, config_.worker_id, assignment_.job_id(),
                JobReporterOptions(config_), config_.log) {}

JobRunner::~JobRunner() {
  Cancel(absl::CancelledError("the job runner was destroyed"));
  Join();
}

void LogJobLine(const JobRunnerConfig& config, absl::string_view job_id,
                MetricsReporter& reporter, absl::string_view line) {
  if (config.log) config.log(absl::StrCat("job ", job_id, ": ", line));
  reporter.AddLogLine(LogLineRank(line), line);
}

void JobRunner::Log(absl::string_view line) const {
  LogJobLine(config_, assignment_.job_id(), reporter_, line);
}

void JobRunner::Cancel(const absl::Status& reason) {
  std::vector<Communicator*> comms;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_.load()) return;
    cancel_reason_ = reason.ok() ? absl::CancelledError("cancelled") : reason;
    cancelled_.store(true);
    // Under mu_, so that no rank unregisters (and destroys) what is being
    // aborted. A TCP ring's or a PS client's abort only shuts sockets down
    // and cancels calls; an NCCL communicator's (ncclCommAbort) also stops
    // NCCL's threads, which can take a moment, and Register/Unregister of
    // the other ranks wait for it meanwhile.
    for (Communicator* comm : comms_) comm->Abort(cancel_reason_);
    for (Trainer* trainer : trainers_) trainer->Abort(cancel_reason_);
  }
  store_->Cancel(reason);
}

void JobRunner::Join() {
  absl::MutexLock lock(&join_mu_);
  if (main_.joinable()) main_.join();
}

std::string JobRunner::CancelMessage() {
  absl::MutexLock lock(&mu_);
  return absl::StrCat("the rank was cancelled: ", cancel_reason_.message());
}

void JobRunner::NotifySwitch(int64_t epoch) {
  int64_t heard = heard_switch_epoch_.load();
  while (epoch > heard &&
         !heard_switch_epoch_.compare_exchange_weak(heard, epoch)) {
  }
  Log(absl::StrCat("switch request ", epoch, " heard"));
}

bool JobRunner::Register(Communicator* comm) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.load()) {
    comm->Abort(cancel_reason_);
    return false;
  }
  comms_.push_back(comm);
  return true;
}

void JobRunner::Unregister(Communicator* comm) {
  absl::MutexLock lock(&mu_);
  comms_.erase(std::remove(comms_.begin(), comms_.end(), comm), comms_.end());
}

void JobRunner::Register(Trainer* trainer) {
  absl::MutexLock lock(&mu_);
  // Its communicator is registered already: a cancel in between aborted it.
  if (cancelled_.load()) trainer->Abort(cancel_reason_);
  trainers_.push_back(trainer);
}

void JobRunner::Unregister(Trainer* trainer) {
  absl::MutexLock lock(&mu_);
  trainers_.erase(std::remove(trainers_.begin(), trainers_.end(), trainer),
                  trainers_.end());
}

void JobRunner::Report(int rank, RankState state, int64_t step,
                       absl::string_view operation, absl::string_view message,
                       const TrainResult* result) {
  ReportRankRequest request;
  request.set_worker_id(config_.worker_id);
  request.set_credential(config_.credential);
  request.set_job_id(assignment_.job_id());
  request.set_rank(rank);
  request.set_state(state);
  request.set_step(std::max<int64_t>(step, 0));
  request.set_operation(std::string(operation));
  request.set_message(std::string(message));
  if (result != nullptr && result->evaluated) {
    request.set_test_accuracy(result->test_accuracy);
    request.set_test_loss(result->test_loss);
  }
  ReportRankState(*client_, request, config_.rpc_timeout, config_.coordinator,
                  cancelled_, [this](absl::string_view line) { Log(line); });
}

void JobRunner::FailAll(absl::string_view operation,
                        const absl::Status& status) {
  Log(absl::StrCat(operation, " failed: ", status.ToString()));
  for (int rank : assignment_.ranks()) {
    Report(rank, RANK_STATE_FAILED, 0, operation, status.ToString());
  }
}

void JobRunner::Main() {
  absl::StatusOr<TrainerConfig> config =
      TrainerConfigFromJobSpec(assignment_.spec());
  if (!config.ok()) {
    FailAll("job spec", config.status());
    done_.store(true);
    return;
  }
  for (const auto& [field, path] :
       {std::pair<const char*, const std::string&>{"checkpoint.directory",
                                                   config->checkpoint_dir},
        {"checkpoint.resumeFrom", config->resume_from}}) {
    if (path.empty()) continue;
    if (absl::Status allowed =
            CheckResolvedUnderRoots(field, path, config_.checkpoint_roots);
        !allowed.ok()) {
      FailAll("job spec", allowed);
      done_.store(true);
      return;
    }
  }
  train_config_ = *std::move(config);
  train_config_.host = config_.host;
  // The roots hold for the whole job: the trainer writes and reads its
  // checkpoints only through directories opened beneath them.
  train_config_.checkpoint_roots = config_.checkpoint_roots;
  train_config_.ps.job_id = assignment_.job_id();
  train_config_.ps.token = assignment_.ps_token();
  train_config_.ps.tcp_congestion = config_.tcp_congestion_control;
  train_config_.ps.security = config_.grpc_security;
  train_config_.ps.tensor_plane =
      PsTransportOf(assignment_.spec(), config_) == kPsTransportPlane;
  train_config_.ps.addresses.assign(assignment_.ps_addresses().begin(),
                                    assignment_.ps_addresses().end());
  train_config_.comm_timeout = config_.collective_timeout + kStepDeadlineSlack;
  absl::StatusOr<int> blas = config_.blas->Acquire(train_config_.blas_threads);
  if (!blas.ok()) {
    FailAll("BLAS setup", blas.status());
    done_.store(true);
    return;
  }
  if (*blas != train_config_.blas_threads) {
    Log(absl::StrCat("spec asks for ", train_config_.blas_threads,
                     " BLAS threads per rank but another job on this worker "
                     "set ",
                     *blas, "; using ", *blas));
  }
  std::vector<std::string> devices;
  for (int i = 0; i < assignment_.ranks_size(); ++i) {
    devices.push_back(DeviceName(assignment_, i));
  }
  Log(absl::StrCat("starting ranks [", absl::StrJoin(assignment_.ranks(), ", "),
                   "] of ", assignment_.world_size(), " on [",
                   absl::StrJoin(devices, ", "), "], generation ",
                   assignment_.generation()));
  absl::StatusOr<TrainData> data = LoadTrainData(train_config_);
  if (!data.ok()) {
    FailAll("data loading", data.status());
  } else if (cancelled_.load()) {
    FailAll("job start", absl::CancelledError(CancelMessage()));
  } else {
    data_ = *std::move(data);
    std::vector<std::thread> ranks;
    for (int i = 0; i < assignment_.ranks_size(); ++i) {
      // devices(i) hosts ranks(i); a rank without a device runs on the CPU.
      TrainerConfig config = train_config_;
      const bool cuda = assignment_.devices_size() != 0 &&
                        assignment_.devices(i).kind() == "cuda";
      config.cuda_device = cuda ? assignment_.devices(i).index() : -1;
      ranks.emplace_back([this, rank = assignment_.ranks(i),
                          device = DeviceName(assignment_, i),
                          config = std::move(config)] {
        // Last line of defence: no exception from a job's code may end
        // the daemon (std::thread would call std::terminate); it fails
        // this rank, and with it the job, instead.
        std::string what = "an unknown exception";
        if (config_.metrics != nullptr) config_.metrics->RankStarted(device);
        try {
          RunRank(rank, device, config);
          if (config_.metrics != nullptr) config_.metrics->RankEnded(device);
          return;
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        if (config_.metrics != nullptr) config_.metrics->RankEnded(device);
        Report(rank, RANK_STATE_FAILED, 0, "training",
               absl::StrCat("internal error (", what,
                            "); this is a gradsync bug: please report it "
                            "with the worker's log"));
      });
    }
    for (std::thread& t : ranks) t.join();
  }
  config_.blas->Release();
  Log("all local ranks ended; devices free");
  done_.store(true);
}

void JobRunner::RunRank(int rank, const std::string& device,
                        const TrainerConfig& config) {
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      Rendezvous(rank, config.ring_algorithm);
  if (!comm.ok()) {
    const std::string message =
        cancelled_.load() ? CancelMessage() : comm.status().ToString();
    Log(absl::StrCat("rank ", rank, ": rendezvous failed: ", message));
    Report(rank, RANK_STATE_FAILED, 0, "rendezvous", message);
    return;
  }
  std::unique_ptr<Communicator> communicator = *std::move(comm);
  if (config_.metrics != nullptr) {
    WorkerMetrics* metrics = config_.metrics;
    communicator = std::make_unique<TimedCommunicator>(
        std::move(communicator),
        [metrics](absl::Duration d) { metrics->ObserveAllReduce(d); });
  }
  if (!Register(communicator.get())) {
    Report(rank, RANK_STATE_FAILED, 0, "rendezvous", CancelMessage());
    return;
  }
  Report(rank, RANK_STATE_READY, 0, "", "");
  SwitchSource switches;
  switches.heard_epoch = &heard_switch_epoch_;
  switches.directive =
      [store = store_](int64_t epoch,
                       absl::Time deadline) -> absl::StatusOr<SwitchDirective> {
    const std::string key = absl::StrCat("switch/", epoch);
    ASSIGN_OR_RETURN(std::string bytes, store->Get(key, deadline));
    SwitchDirective directive;
    if (!directive.ParseFromString(bytes)) {
      return absl::DataLossError(
          absl::StrCat("the job store's ", key, " is not a SwitchDirective"));
    }
    return directive;
  };
  absl::StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(
      config, data_, communicator.get(),
      [this](const StepMetrics& m) {
        reporter_.Add(m);
        if (config_.metrics != nullptr) config_.metrics->AddStep(m);
      },
      &cancelled_, std::move(switches), DeviceComms(rank, config));
  if (!trainer.ok()) {
    Unregister(communicator.get());
    communicator->Abort(trainer.status());
    // A CUDA rank on a host without that GPU ends here (the model's
    // FAILED_PRECONDITION names the device); its peers fail at once on
    // the aborted communicator.
    Log(absl::StrCat("rank ", rank, " on ", device,
                     ": setup failed: ", trainer.status().ToString()));
    Report(rank, RANK_STATE_FAILED, 0, "trainer setup",
           trainer.status().ToString());
    return;
  }
  Register(trainer->get());
  if ((*trainer)->first_step() > 0) {
    Log(absl::StrCat("rank ", rank, ": resuming from ", config.resume_from,
                     " at step ", (*trainer)->first_step()));
  }
  absl::StatusOr<TrainResult> result = (*trainer)->Run();
  Unregister(trainer->get());
  Unregister(communicator.get());
  if (absl::Status s = reporter_.Flush(absl::Now() + kMetricsFlushTimeout);
      !s.ok()) {
    Log(absl::StrCat("rank ", rank, ": ", s.message()));
  }
  if (result.ok()) {
    Log(absl::StrCat(
        "rank ", rank, ": succeeded after ", result->steps, " steps",
        result->evaluated
            ? absl::StrCat("; test accuracy ", result->test_accuracy,
                           ", test loss ", result->test_loss)
            : ""));
    Report(rank, RANK_STATE_SUCCEEDED, result->steps - 1, "", "", &*result);
    return;
  }
  const TrainFailure& failure = (*trainer)->failure();
  const std::string message =
      cancelled_.load() ? CancelMessage() : failure.cause.ToString();
  Log(absl::StrCat("rank ", rank, ": failed at step ", failure.step, " during ",
                   failure.operation, ": ", message));
  Report(rank, RANK_STATE_FAILED, failure.step, failure.operation, message);
}

}  // namespace gradsync
