// The coordinator's state stores (state_store.h): the SQLite database of
// --state-db and the memory store of the tests keep the same records, apply
// a change whole, and the database reads back what another process wrote,
// refuses a second coordinator, a symbolic link and a damaged record.
#include "server/coordinator/state_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/sqlite_state_store.h"
#include "tests/util/status_matchers.h"
#include "tests/util/temp_dir.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::SizeIs;

SavedJob JobRecord(const std::string& id, int64_t number, JobState state) {
  SavedJob job;
  job.set_id(id);
  job.set_number(number);
  job.set_state(state);
  job.mutable_spec()->set_name(absl::StrCat("spec of ", id));
  return job;
}

StepMetrics Metric(int rank, int64_t step) {
  StepMetrics m;
  m.set_rank(rank);
  m.set_step(step);
  m.set_loss(0.5 * static_cast<double>(step));
  return m;
}

// Applies a change touching every kind of record, then a second one that
// replaces, drops and erases some of them.
void ApplyTwoChanges(StateStore& store) {
  StateChange first;
  SavedMeta meta;
  meta.set_next_worker(3);
  meta.set_next_ps(2);
  meta.set_next_job(3);
  meta.set_shard_key(std::string("k\0ey", 4));
  meta.set_incarnation(1);
  first.meta = meta;
  SavedWorker w1;
  w1.set_id("w-1");
  w1.set_number(1);
  w1.set_credential(std::string("\x01\x00\xff", 3));
  SavedWorker w2;
  w2.set_id("w-2");
  w2.set_number(2);
  first.workers = {w2, w1};
  SavedServer ps;
  ps.set_id("ps-1");
  ps.set_number(1);
  first.servers = {ps};
  first.jobs = {JobRecord("job-2", 2, JOB_STATE_RUNNING),
                JobRecord("job-1", 1, JOB_STATE_SUCCEEDED)};
  first.metrics = {{"job-1", 0, {Metric(0, 0), Metric(0, 1)}},
                   {"job-2", 0, {Metric(1, 7)}}};
  first.set_keys = {{"job/job-1/gen/1/a", "1"},
                    {"job/job-2/gen/1/b", std::string("\0\1", 2)},
                    {"job/job-10/gen/1/c", "3"}};
  ASSERT_THAT(store.Apply(first), IsOk());

  StateChange second;
  SavedWorker w1_lost = w1;
  w1_lost.set_lost(true);
  second.workers = {w1_lost};
  second.dropped_jobs = {"job-1"};
  second.metrics = {{"job-2", 1, {Metric(1, 8), Metric(1, 9)}}};
  second.erased_key_prefixes = {"job/job-1/"};
  ASSERT_THAT(store.Apply(second), IsOk());
}

void ExpectTwoChanges(const SavedState& state) {
  EXPECT_EQ(state.meta.next_worker(), 3);
  EXPECT_EQ(state.meta.shard_key(), std::string("k\0ey", 4));
  ASSERT_THAT(state.workers, SizeIs(2));
  EXPECT_EQ(state.workers[0].id(), "w-1");  // by number
  EXPECT_TRUE(state.workers[0].lost());
  EXPECT_EQ(state.workers[0].credential(), std::string("\x01\x00\xff", 3));
  EXPECT_EQ(state.workers[1].id(), "w-2");
  ASSERT_THAT(state.servers, SizeIs(1));
  ASSERT_THAT(state.jobs, SizeIs(1));
  EXPECT_EQ(state.jobs[0].id(), "job-2");
  EXPECT_EQ(state.jobs[0].spec().name(), "spec of job-2");
  ASSERT_EQ(state.metrics.count("job-1"), 0u);
  ASSERT_EQ(state.metrics.count("job-2"), 1u);
  const std::vector<StepMetrics>& steps = state.metrics.at("job-2");
  ASSERT_THAT(steps, SizeIs(3));
  EXPECT_EQ(steps[0].step(), 7);
  EXPECT_EQ(steps[2].step(), 9);
  // job-10's key does not start with "job/job-1/".
  EXPECT_THAT(state.keys,
              ElementsAre(Pair("job/job-10/gen/1/c", "3"),
                          Pair("job/job-2/gen/1/b", std::string("\0\1", 2))));
}

TEST(MemoryStateStoreTest, KeepsWhatWasApplied) {
  std::shared_ptr<StateStore> store = NewMemoryStateStore();
  ApplyTwoChanges(*store);
  absl::StatusOr<SavedState> state = store->Load();
  ASSERT_THAT(state, IsOk());
  ExpectTwoChanges(*state);
}

TEST(SqliteStateStoreTest, ANewDatabaseIsEmpty) {
  TempDir dir("state_store");
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      OpenSqliteStateStore(dir.path() + "/state.db");
  ASSERT_THAT(store, IsOk());
  absl::StatusOr<SavedState> state = (*store)->Load();
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->meta.incarnation(), 0);
  EXPECT_TRUE(state->jobs.empty());
  EXPECT_THAT((*store)->Describe(), HasSubstr("state.db"));
}

TEST(SqliteStateStoreTest, OnlyItsOwnerMayReadIt) {
  TempDir dir("state_store");
  const std::string path = dir.path() + "/state.db";
  {
    // A file left readable by others is narrowed too.
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fclose(f);
    ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  }
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      OpenSqliteStateStore(path);
  ASSERT_THAT(store, IsOk());
  StateChange change;
  change.jobs = {JobRecord("job-1", 1, JOB_STATE_RUNNING)};
  ASSERT_THAT((*store)->Apply(change), IsOk());
  for (const std::string& file : {path, path + "-wal"}) {
    struct stat st;
    ASSERT_EQ(stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
  }
}

TEST(SqliteStateStoreTest, ReadsBackAfterReopening) {
  TempDir dir("state_store");
  const std::string path = dir.path() + "/state.db";
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        OpenSqliteStateStore(path);
    ASSERT_THAT(store, IsOk());
    ApplyTwoChanges(**store);
  }
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      OpenSqliteStateStore(path);
  ASSERT_THAT(store, IsOk());
  absl::StatusOr<SavedState> state = (*store)->Load();
  ASSERT_THAT(state, IsOk());
  ExpectTwoChanges(*state);
}

TEST(SqliteStateStoreTest, ReadsBackWhatAKilledProcessCommitted) {
  TempDir dir("state_store");
  const std::string path = dir.path() + "/state.db";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        OpenSqliteStateStore(path);
    if (!store.ok()) _exit(1);
    StateChange change;
    change.jobs = {JobRecord("job-1", 1, JOB_STATE_RUNNING)};
    if (!(*store)->Apply(change).ok()) _exit(2);
    // No close, no destructor: as kill -9 leaves it (WAL not checkpointed).
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      OpenSqliteStateStore(path);
  ASSERT_THAT(store, IsOk());
  absl::StatusOr<SavedState> state = (*store)->Load();
  ASSERT_THAT(state, IsOk());
  ASSERT_THAT(state->jobs, SizeIs(1));
  EXPECT_EQ(state->jobs[0].state(), JOB_STATE_RUNNING);
}

TEST(SqliteStateStoreTest, RefusesASecondCoordinator) {
  TempDir dir("state_store");
  const std::string path = dir.path() + "/state.db";
  absl::StatusOr<std::unique_ptr<StateStore>> first =
      OpenSqliteStateStore(path);
  ASSERT_THAT(first, IsOk());
  absl::StatusOr<std::unique_ptr<StateStore>> second =
      OpenSqliteStateStore(path);
  EXPECT_THAT(second.status(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("another")));
}

TEST(SqliteStateStoreTest, RefusesASymbolicLink) {
  TempDir dir("state_store");
  const std::string target = dir.path() + "/elsewhere";
  const std::string link = dir.path() + "/state.db";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      OpenSqliteStateStore(link);
  EXPECT_THAT(store.status(), StatusIs(absl::StatusCode::kUnavailable,
                                       HasSubstr("symbolic link")));
  EXPECT_NE(access(target.c_str(), F_OK), 0) << "nothing is created there";
}

TEST(SqliteStateStoreTest, RefusesAFileThatIsNotADatabase) {
  TempDir dir("state_store");
  const std::string path = dir.path() + "/state.db";
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("this is not an SQLite database, just some text of a user's\n", f);
  fclose(f);
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      OpenSqliteStateStore(path);
  EXPECT_THAT(store.status(),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr(path)));
}

TEST(SqliteStateStoreTest, ADamagedRecordIsDataLoss) {
  TempDir dir("state_store");
  const std::string path = dir.path() + "/state.db";
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        OpenSqliteStateStore(path);
    ASSERT_THAT(store, IsOk());
    StateChange change;
    change.jobs = {JobRecord("job-1", 1, JOB_STATE_RUNNING)};
    ASSERT_THAT((*store)->Apply(change), IsOk());
  }
  {
    // Another program's write, straight through SQLite.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, "UPDATE jobs SET record = X'ffffffff'", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  absl::StatusOr<std::unique_ptr<StateStore>> store =
      OpenSqliteStateStore(path);
  ASSERT_THAT(store, IsOk());
  EXPECT_THAT((*store)->Load().status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("job record")));
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
