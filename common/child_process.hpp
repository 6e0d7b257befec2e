// Work in a forked child process, its result sent back through a pipe. SimGrid allows one engine
// per process, so each replay runs in a child of its own, and so does each leave-one-source-out
// fold of `tagcsim validate`, which replays below it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

namespace tagcsim {

struct ChildProcess {
  pid_t pid = -1;
  int fd = -1;  // the read end of the child's pipe
};

// Forks. The child runs `work`, writes what it returns (on an exception, its message, with exit
// status 4) and exits without the parent's exit handlers. `what` prefixes the errors of pipe()
// and fork() ("replay: fork() failed").
ChildProcess start_child(const std::function<std::string()>& work, const char* what);

// Reads everything the child wrote and waits for it. std::runtime_error "<what> failed (status N):
// <its message, or 'no result'>" when it did not exit with status 0.
std::string finish_child(const ChildProcess& child, const std::string& what);

}  // namespace tagcsim
