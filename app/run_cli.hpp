// Parses the command line and runs the chosen subcommand, turning every
// error into one line on stderr and the exit code: 2 for bad input, 1 for
// a bug. Shared by `tagcsim` and `tagcsim-kernels`.
#pragma once

#include "common/input.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>

namespace tagcsim::app {

inline int run_cli(CLI::App& app, int argc, char** argv, const int& exit_code, const char* program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitBadInput;
  } catch (const InputError& e) {
    fmt::print(stderr, "{}: error: {}\n", program, e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: internal error: {}\n", program, e.what());
    return 1;
  }
  return exit_code;
}

}  // namespace tagcsim::app
