// ChildProcess: a forked process of gradsync-ps-bench and the two pipes
// the parent talks to it through, one text line per message. Fork it
// before anything starts threads (gRPC above all): the child runs `body`
// and exits with its return value, never returning into the parent's code.
//
//   ChildProcess child = ChildProcess::Fork([](int in, int out) {
//     ... read commands from `in`, write replies to `out` ...
//     return 0;
//   });
//   child.WriteLine("go");
//   std::string reply = child.ReadLine(absl::Seconds(30));
//   child.Wait();
//
// Errors: ReadLine returns what it read so far ("" on timeout or EOF);
// WriteLine drops the line if the child is gone (it reports its own
// failure). Threading: one thread per ChildProcess.
#ifndef GRADSYNC_SERVER_PS_BENCH_BENCH_PROCESS_H_
#define GRADSYNC_SERVER_PS_BENCH_BENCH_PROCESS_H_

#include <sys/types.h>

#include <functional>
#include <string>

#include "absl/time/time.h"

namespace gradsync {

// Reads one line (without its newline) from `fd`, waiting at most
// `timeout`.
std::string ReadLineFrom(int fd, absl::Duration timeout);
// Writes `line` and a newline to `fd`; false if the reader is gone.
bool WriteLineTo(int fd, const std::string& line);

class ChildProcess {
 public:
  static ChildProcess Fork(const std::function<int(int in, int out)>& body);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills a child that is still running.
  ~ChildProcess();

  bool WriteLine(const std::string& line) { return WriteLineTo(to_, line); }
  std::string ReadLine(absl::Duration timeout) {
    return ReadLineFrom(from_, timeout);
  }
  // Waits up to `timeout` for the child to exit (then kills it); returns
  // its exit code, or -1 if it was killed.
  int Wait(absl::Duration timeout = absl::Minutes(1));

 private:
  ChildProcess(pid_t pid, int to, int from) : pid_(pid), to_(to), from_(from) {}

  pid_t pid_ = -1;
  int to_ = -1;    // the child's stdin-like pipe
  int from_ = -1;  // the child's replies
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_BENCH_BENCH_PROCESS_H_
