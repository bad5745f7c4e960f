// Where the gradsync Python package (python/gradsync, with the C API
// library beside it) is, for the PYTHONPATH of entrypoint processes: in a
// build tree, build/python (next to build/worker/gradsync-worker); once
// installed, PREFIX/lib/gradsync/python (next to PREFIX/bin).
// Threading: thread-safe.
#ifndef GRADSYNC_WORKER_LAUNCH_PYTHON_DIR_H_
#define GRADSYNC_WORKER_LAUNCH_PYTHON_DIR_H_

#include <string>

namespace gradsync {

// The directory holding gradsync/__init__.py beside this binary, or "".
std::string FindGradsyncPythonDir();

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_LAUNCH_PYTHON_DIR_H_
