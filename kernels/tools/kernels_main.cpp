// tagcsim-kernels: `tagcsim kernels bench|quality` alone, linked against the
// kernels library only (no SimGrid, no simulator), so that a GPU machine
// without the simulator's dependencies can run the bench (kernels/gpu-check.sh).
// Same subcommand code (app/kernels_cmd.cpp), same options, same output.
#include "app/commands.hpp"
#include "common/input.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  CLI::App app{"tagcsim-kernels: the TAGC kernels' bench and quality commands (as in `tagcsim kernels`)"};
  app.require_subcommand(1);
  int exit_code = 0;
  tagcsim::app::add_kernels_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : tagcsim::kExitBadInput;
  } catch (const tagcsim::InputError& e) {
    fmt::print(stderr, "tagcsim-kernels: error: {}\n", e.what());
    return tagcsim::kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tagcsim-kernels: internal error: {}\n", e.what());
    return 1;
  }
  return exit_code;
}
