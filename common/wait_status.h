// What happened to a child process, in words, from its waitpid() status;
// for the errors of the launchers that start daemons and ranks.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COMMON_WAIT_STATUS_H_
#define GRADSYNC_COMMON_WAIT_STATUS_H_

#include <string>

namespace gradsync {

// "exited with status 3", "was killed by signal 9 (Killed)", or "ended
// with wait status N" for anything else; reads as the rest of a sentence
// that starts with the process's name.
std::string DescribeExit(int wait_status);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_WAIT_STATUS_H_
