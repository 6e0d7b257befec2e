// Runs a shell command from a test and keeps its exit code and its output (stdout and stderr
// together), for the test files that drive the tagcsim binary.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

struct Outcome {
  int code = -1;
  std::string output;
};

inline Outcome run_command(const std::string& cmd) {
  Outcome o;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf;
  while (fgets(buf.data(), int(buf.size()), p)) o.output += buf.data();
  const int status = pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}
