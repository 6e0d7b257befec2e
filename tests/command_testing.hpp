// Runs a shell command from a test and keeps its exit code and its output (stdout and stderr
// together), for the test files that drive the tagcsim binary.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
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

// The tagcsim binary under test, run with these arguments.
inline Outcome run_tagcsim(const std::string& args) { return run_command(std::string(TAGCSIM_BINARY) + " " + args); }

// A scratch path per process (ctest runs each case in its own), so that checkouts testing at once
// do not collide.
inline std::string temp_path(const std::string& name) {
  return "/tmp/tagcsim_test_" + std::to_string(::getpid()) + "_" + name;
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
