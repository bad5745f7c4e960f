// The state database's checks at start (sqlite_state_store.h,
// state_db_files.h), on real files in a temporary directory. Each way a
// database can hold an older or damaged state than its coordinator left
// (a copy without its write-ahead log, a 0-byte file beside its log, a log
// deleted, an older copy of both, a missing file or sidecar, a damaged
// page, another program's database) is refused naming the files and what
// to do; accept_rollback (--accept-state-rollback) starts on it anyway and
// re-syncs the sidecar; restarts after a stop or a kill load everything.
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/sqlite_state_store.h"
#include "tests/util/status_matchers.h"
#include "tests/util/temp_dir.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::SizeIs;

SavedJob JobRecord(const std::string& id, JobState state) {
  SavedJob job;
  job.set_id(id);
  job.set_number(1);
  job.set_state(state);
  return job;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool CopyFile(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  out << in.rdbuf();
  return in.good() && out.good();
}

// The file's size; -1 when it does not exist.
int64_t SizeOf(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// Saves job-1 in `state` with step metrics first, first + 1, ..., each
// step its own commit, as a coordinator saves a job's reports.
void SaveSteps(StateStore& store, JobState state, int64_t first, int count) {
  for (int64_t step = first; step < first + count; ++step) {
    StateChange change;
    change.jobs = {JobRecord("job-1", state)};
    StepMetrics metric;
    metric.set_step(step);
    metric.set_loss(1.0 / static_cast<double>(step + 1));
    change.metrics = {{"job-1", step, {metric}}};
    ASSERT_THAT(store.Apply(change), IsOk()) << "at step " << step;
  }
}

class StateDbCheckTest : public ::testing::Test {
 protected:
  StateDbCheckTest()
      : dir_("state_db_check"),
        db_(dir_.path() + "/coordinator.db"),
        wal_(db_ + "-wal"),
        sidecar_(db_ + ".generation") {}

  [[nodiscard]] absl::StatusOr<std::unique_ptr<StateStore>> Open(
      const std::string& path, bool accept = false) {
    SqliteStateStoreOptions options;
    options.accept_rollback = accept;
    options.log = [this](absl::string_view line) { log_.emplace_back(line); };
    return OpenSqliteStateStore(path, options);
  }

  // The generation in `db`'s sidecar; -1 when it holds none.
  static int64_t Generation(const std::string& db) {
    std::string text = ReadFile(db + ".generation");
    while (!text.empty() && text.back() == '\n') text.pop_back();
    int64_t generation = -1;
    if (!absl::SimpleAtoi(text.substr(text.rfind(' ') + 1), &generation)) {
      return -1;
    }
    return generation;
  }

  // Runs `body` on the database in a child process that then ends without
  // closing it, as kill -9 leaves it: the last commits only in the log.
  void InKilledCoordinator(const std::function<void(StateStore&)>& body) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      absl::StatusOr<std::unique_ptr<StateStore>> store =
          OpenSqliteStateStore(db_);
      if (!store.ok()) _exit(1);
      body(**store);
      _exit(::testing::Test::HasFailure() ? 2 : 0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    ASSERT_GT(SizeOf(wal_), 0) << "the killed coordinator left its log";
  }

  // Opens `path` with accept_rollback, expecting it to start on `jobs`
  // jobs, then without: the sidecar now agrees with the database.
  void ExpectAcceptedThenPlain(const std::string& path, size_t jobs) {
    const int64_t before = Generation(path);
    {
      absl::StatusOr<std::unique_ptr<StateStore>> store = Open(path, true);
      ASSERT_THAT(store, IsOk());
      absl::StatusOr<SavedState> state = (*store)->Load();
      ASSERT_THAT(state, IsOk());
      EXPECT_THAT(state->jobs, SizeIs(jobs));
      EXPECT_GT(Generation(path), before) << "the sidecar is re-synced";
    }
    EXPECT_THAT(log_, Contains(HasSubstr("--accept-state-rollback")));
    EXPECT_THAT(Open(path), IsOk()) << "the next start needs no flag";
  }

  TempDir dir_;
  const std::string db_, wal_, sidecar_;
  std::vector<std::string> log_;
};

TEST_F(StateDbCheckTest, ANewPath_StartsEmptyAndWritesItsGeneration) {
  absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
  ASSERT_THAT(store, IsOk());
  absl::StatusOr<SavedState> state = (*store)->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_TRUE(state->jobs.empty());
  EXPECT_GE(Generation(db_), 1);
  struct stat st;
  ASSERT_EQ(stat(sidecar_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(StateDbCheckTest, ARestartAfterAStop_LoadsEverythingAtANewGeneration) {
  int64_t first = 0;
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
    ASSERT_THAT(store, IsOk());
    SaveSteps(**store, JOB_STATE_SUCCEEDED, 0, 20);
    first = Generation(db_);
  }
  absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
  ASSERT_THAT(store, IsOk());
  absl::StatusOr<SavedState> state = (*store)->Load();
  ASSERT_THAT(state, IsOk());
  ASSERT_THAT(state->jobs, SizeIs(1));
  EXPECT_EQ(state->jobs[0].state(), JOB_STATE_SUCCEEDED);
  EXPECT_THAT(state->metrics["job-1"], SizeIs(20));
  EXPECT_GT(Generation(db_), first);
  EXPECT_GE(first, 1);
}

TEST_F(StateDbCheckTest, ARestartAfterAKill_LoadsEverythingAtANewGeneration) {
  InKilledCoordinator(
      [](StateStore& store) { SaveSteps(store, JOB_STATE_RUNNING, 0, 20); });
  const int64_t killed = Generation(db_);
  absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
  ASSERT_THAT(store, IsOk());
  absl::StatusOr<SavedState> state = (*store)->Load();
  ASSERT_THAT(state, IsOk());
  ASSERT_THAT(state->jobs, SizeIs(1));
  EXPECT_THAT(state->metrics["job-1"], SizeIs(20));
  EXPECT_GE(killed, 1);
  EXPECT_GT(Generation(db_), killed);
}

// The finding: coordinator.db copied without its -wal loaded a job that
// had SUCCEEDED with 8,000 step metrics as RUNNING with fewer.
TEST_F(StateDbCheckTest, ACopyWithoutItsLog_IsRefused_UnlessAccepted) {
  TempDir elsewhere("state_db_copy");
  const std::string copy = elsewhere.path() + "/coordinator.db";
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
    ASSERT_THAT(store, IsOk());
    const int64_t opened = Generation(db_);
    // Enough commits for several checkpoints into the file on the way.
    SaveSteps(**store, JOB_STATE_RUNNING, 0, 2999);
    SaveSteps(**store, JOB_STATE_SUCCEEDED, 2999, 1);
    EXPECT_GT(Generation(db_), opened) << "checkpoints advance it";
    ASSERT_TRUE(CopyFile(db_, copy));
    ASSERT_TRUE(CopyFile(sidecar_, copy + ".generation"));
  }
  EXPECT_THAT(Open(copy).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(copy), HasSubstr(copy + "-wal"),
                             HasSubstr(copy + ".generation"),
                             HasSubstr("--accept-state-rollback"))));

  // What it would have loaded: an older state, the job still running.
  absl::StatusOr<std::unique_ptr<StateStore>> store = Open(copy, true);
  ASSERT_THAT(store, IsOk());
  absl::StatusOr<SavedState> state = (*store)->Load();
  ASSERT_THAT(state, IsOk());
  ASSERT_THAT(state->jobs, SizeIs(1));
  EXPECT_EQ(state->jobs[0].state(), JOB_STATE_RUNNING);
  EXPECT_LT(state->metrics["job-1"].size(), 3000u);
  store->reset();
  EXPECT_THAT(Open(copy), IsOk()) << "the next start needs no flag";
}

TEST_F(StateDbCheckTest, ACopyWithoutItsLogOrSidecar_IsRefused) {
  TempDir elsewhere("state_db_copy");
  const std::string copy = elsewhere.path() + "/coordinator.db";
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
    ASSERT_THAT(store, IsOk());
    SaveSteps(**store, JOB_STATE_RUNNING, 0, 1500);
    ASSERT_TRUE(CopyFile(db_, copy));
  }
  EXPECT_THAT(Open(copy).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(copy + ".generation"),
                             HasSubstr("--accept-state-rollback"))));
  ExpectAcceptedThenPlain(copy, 1);
}

TEST_F(StateDbCheckTest, ALogDeletedAfterAKill_IsRefused_UnlessAccepted) {
  InKilledCoordinator(
      [](StateStore& store) { SaveSteps(store, JOB_STATE_RUNNING, 0, 20); });
  ASSERT_EQ(unlink(wal_.c_str()), 0);
  const std::string file = ReadFile(db_);
  EXPECT_THAT(Open(db_).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(db_), HasSubstr(wal_ + " is missing"),
                             HasSubstr("restore"))));
  EXPECT_TRUE(ReadFile(db_) == file) << "a refused database is left as is";
  EXPECT_EQ(SizeOf(wal_), -1) << "so that its log can be put back";
  ExpectAcceptedThenPlain(db_, 0);
}

TEST_F(StateDbCheckTest, AnEmptyFileBesideItsLog_IsRefused_UnlessAccepted) {
  InKilledCoordinator(
      [](StateStore& store) { SaveSteps(store, JOB_STATE_RUNNING, 0, 20); });
  ASSERT_EQ(truncate(db_.c_str(), 0), 0);
  const int64_t wal_bytes = SizeOf(wal_);
  EXPECT_THAT(Open(db_).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(db_ + " is empty (0 bytes)"),
                             HasSubstr(wal_), HasSubstr("restore"))));
  EXPECT_EQ(SizeOf(wal_), wal_bytes) << "the log is left as it was";
  ExpectAcceptedThenPlain(db_, 0);
  EXPECT_EQ(SizeOf(wal_ + ".rolled-back"), wal_bytes)
      << "accepting sets the log aside rather than delete it";
}

TEST_F(StateDbCheckTest, AnOlderCopyOfFileAndLog_IsRefused_UnlessAccepted) {
  TempDir backup("state_db_backup");
  InKilledCoordinator(
      [](StateStore& store) { SaveSteps(store, JOB_STATE_RUNNING, 0, 20); });
  ASSERT_TRUE(CopyFile(db_, backup.path() + "/db"));
  ASSERT_TRUE(CopyFile(wal_, backup.path() + "/wal"));
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
    ASSERT_THAT(store, IsOk());
    SaveSteps(**store, JOB_STATE_SUCCEEDED, 20, 20);
  }
  ASSERT_TRUE(CopyFile(backup.path() + "/db", db_));
  ASSERT_TRUE(CopyFile(backup.path() + "/wal", wal_));
  EXPECT_THAT(
      Open(db_).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr(db_), HasSubstr(sidecar_), HasSubstr("older"),
                     HasSubstr("--accept-state-rollback"))));
  EXPECT_TRUE(ReadFile(db_) == ReadFile(backup.path() + "/db"))
      << "a refused database is left as is";
  EXPECT_TRUE(ReadFile(wal_) == ReadFile(backup.path() + "/wal"));
  ExpectAcceptedThenPlain(db_, 1);
}

TEST_F(StateDbCheckTest,
       AMissingFileBesideItsSidecar_IsRefused_UnlessAccepted) {
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
    ASSERT_THAT(store, IsOk());
    SaveSteps(**store, JOB_STATE_RUNNING, 0, 5);
  }
  ASSERT_EQ(unlink(db_.c_str()), 0);
  EXPECT_THAT(
      Open(db_).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr(db_ + " does not exist"), HasSubstr(sidecar_))));
  ExpectAcceptedThenPlain(db_, 0);
}

TEST_F(StateDbCheckTest, AMissingSidecar_IsRefused_UnlessAccepted) {
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
    ASSERT_THAT(store, IsOk());
    SaveSteps(**store, JOB_STATE_RUNNING, 0, 5);
  }
  ASSERT_EQ(unlink(sidecar_.c_str()), 0);
  EXPECT_THAT(Open(db_).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(sidecar_ + " is missing"),
                             HasSubstr("--accept-state-rollback"))));
  ExpectAcceptedThenPlain(db_, 1);
}

TEST_F(StateDbCheckTest, ASidecarWithoutAGeneration_IsRefused_UnlessAccepted) {
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
    ASSERT_THAT(store, IsOk());
    SaveSteps(**store, JOB_STATE_RUNNING, 0, 5);
  }
  std::ofstream(sidecar_, std::ios::trunc) << "seventeen\n";
  EXPECT_THAT(
      Open(db_).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(sidecar_)));
  ExpectAcceptedThenPlain(db_, 1);
}

TEST_F(StateDbCheckTest, ADamagedPage_IsDataLoss_EvenWhenAccepting) {
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
    ASSERT_THAT(store, IsOk());
    SaveSteps(**store, JOB_STATE_RUNNING, 0, 2000);
  }
  const int64_t bytes = SizeOf(db_);
  ASSERT_GT(bytes, 8 * 4096);
  {
    // Garbage over the start of the last page but one: the file's header
    // and schema (page 1) are intact, so SQLite opens it without a word.
    std::fstream file(db_, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(bytes - 2 * 4096);
    file << std::string(64, '\xff');
    ASSERT_TRUE(file.good());
  }
  for (bool accept : {false, true}) {
    EXPECT_THAT(Open(db_, accept).status(),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(db_), HasSubstr("quick_check"))))
        << "accept " << accept;
  }
}

// A database written before generations (layout 1: no header row, no
// sidecar) is taken as it is, once, and has both from then on.
TEST_F(StateDbCheckTest, ADatabaseOfLayout1_IsUpgradedInPlace) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    const std::string job =
        JobRecord("job-1", JOB_STATE_RUNNING).SerializeAsString();
    const std::string sql = absl::StrCat(
        "PRAGMA journal_mode=WAL;"
        "CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1),"
        " record BLOB NOT NULL);"
        "CREATE TABLE workers (id TEXT PRIMARY KEY, number INTEGER NOT NULL,"
        " record BLOB NOT NULL);"
        "CREATE TABLE servers (id TEXT PRIMARY KEY, number INTEGER NOT NULL,"
        " record BLOB NOT NULL);"
        "CREATE TABLE jobs (id TEXT PRIMARY KEY, number INTEGER NOT NULL,"
        " record BLOB NOT NULL);"
        "CREATE TABLE metrics (job TEXT NOT NULL, idx INTEGER NOT NULL,"
        " record BLOB NOT NULL, PRIMARY KEY (job, idx));"
        "CREATE TABLE keys (key TEXT PRIMARY KEY, value BLOB NOT NULL);"
        "PRAGMA user_version=1;"
        "INSERT INTO jobs VALUES ('job-1', 1, X'",
        absl::BytesToHexString(job), "');");
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store = Open(db_);
    ASSERT_THAT(store, IsOk());
    absl::StatusOr<SavedState> state = (*store)->Load();
    ASSERT_THAT(state, IsOk());
    EXPECT_THAT(state->jobs, SizeIs(1));
    EXPECT_GE(Generation(db_), 1);
  }
  ASSERT_EQ(unlink(sidecar_.c_str()), 0);
  EXPECT_THAT(Open(db_).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition))
      << "from then on it is checked";
}

TEST_F(StateDbCheckTest, AnotherProgramsDatabase_IsRefused) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "PRAGMA application_id=1234;"
                         "CREATE TABLE photos (name TEXT)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_THAT(Open(db_, true).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(db_),
                             HasSubstr("not a gradsync state database"))));
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
