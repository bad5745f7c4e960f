#include "cli/control/job_csv.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "cli/control/job_format.h"
#include "cli/framework/format.h"

namespace gradsync {
namespace cli {
namespace control {

std::string JobsToCsv(const ListJobsResponse& jobs) {
  std::string out = absl::StrCat(CsvHeader(*JobStatus::descriptor()),
                                 ",name,num_workers,steps_total\n");
  for (const JobStatus& job : jobs.jobs()) {
    absl::StrAppend(&out, CsvRow(job), ",", CsvCell(job.spec().name()), ",",
                    job.spec().num_workers(), ",", job.spec().steps(), "\n");
  }
  return out;
}

std::string WorkersToCsv(const ListWorkersResponse& workers) {
  std::string out =
      absl::StrCat(CsvHeader(*WorkerInfo::descriptor()), ",devices,job_ids\n");
  for (const WorkerInfo& worker : workers.workers()) {
    absl::StrAppend(&out, CsvRow(worker), ",",
                    CsvCell(FormatDevices(worker.devices())), ",",
                    CsvCell(absl::StrJoin(worker.job_ids(), " ")), "\n");
  }
  return out;
}

std::string MetricsPlotInput(const JobStatus& job,
                             absl::string_view metrics_json) {
  return absl::StrCat("{\"job\":", MessageToJson(job), ",\"metrics\":",
                      absl::StripTrailingAsciiWhitespace(metrics_json), "}\n");
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
