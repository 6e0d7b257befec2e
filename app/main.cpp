// tagcsim: how long will one FSDP training step take on that cluster, and
// does gradient compression make it faster?
#include "app/commands.hpp"
#include "common/input.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  CLI::App app{"tagcsim: predict FSDP step time, with and without TAGC gradient compression"};
  app.require_subcommand(1);
  int exit_code = 0;
  tagcsim::app::add_run_command(app, exit_code);
  tagcsim::app::add_collective_command(app, exit_code);
  tagcsim::app::add_kernels_command(app, exit_code);
  tagcsim::app::add_tune_command(app, exit_code);
  tagcsim::app::add_calibrate_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : tagcsim::kExitBadInput;
  } catch (const tagcsim::InputError& e) {
    fmt::print(stderr, "tagcsim: error: {}\n", e.what());
    return tagcsim::kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tagcsim: internal error: {}\n", e.what());
    return 1;
  }
  return exit_code;
}
