#include "common/child_process.hpp"

#include <fmt/format.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

namespace tagcsim {
namespace {

// fork() copies the page tables of every resident page, and each page the parent writes after it
// faults once: memory freed but still held by malloc (a large YAML file's nodes, once read) is paid
// for at every child. glibc's malloc hands it back on request; this does when there is much of it.
void trim_freed_memory() {
#if defined(__GLIBC__)
  constexpr std::size_t kTrimAbove = 16u << 20;  // bytes free in malloc's heap
  if (::mallinfo2().fordblks > kTrimAbove) ::malloc_trim(0);
#endif
}

}  // namespace

ChildProcess start_child(const std::function<std::string()>& work, const char* what) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("{}: pipe() failed", what));
  std::fflush(nullptr);  // or the child would print the parent's buffered output again
  trim_freed_memory();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("{}: fork() failed", what));
  if (pid == 0) {
    ::close(fds[0]);
    int rc = 0;
    std::string out;
    try {
      out = work();
    } catch (const std::exception& e) {
      out = e.what();
      rc = 4;
    }
    for (std::size_t at = 0; at < out.size();) {
      const ssize_t w = ::write(fds[1], out.data() + at, out.size() - at);
      if (w <= 0) ::_exit(3);
      at += std::size_t(w);
    }
    ::close(fds[1]);
    ::_exit(rc);  // skip SimGrid's and the parent's exit handlers
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

std::string finish_child(const ChildProcess& child, const std::string& what) {
  std::string data;
  char buf[1 << 16];
  for (ssize_t r; (r = ::read(child.fd, buf, sizeof buf)) > 0;) data.append(buf, std::size_t(r));
  ::close(child.fd);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(fmt::format("{} failed (status {}): {}", what, status,
                                         WIFEXITED(status) && WEXITSTATUS(status) == 4 ? data : "no result"));
  return data;
}

}  // namespace tagcsim
