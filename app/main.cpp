// tagcsim: how long will one FSDP training step take on that cluster, and
// does gradient compression make it faster?
#include "app/commands.hpp"
#include "app/run_cli.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tagcsim: predict FSDP step time, with and without TAGC gradient compression"};
  app.require_subcommand(1);
  int exit_code = 0;
  tagcsim::app::add_run_command(app, exit_code);
  tagcsim::app::add_collective_command(app, exit_code);
  tagcsim::app::add_kernels_command(app, exit_code);
  tagcsim::app::add_tune_command(app, exit_code);
  tagcsim::app::add_calibrate_command(app, exit_code);
  tagcsim::app::add_show_command(app, exit_code);
  tagcsim::app::add_validate_command(app, exit_code);
  return tagcsim::app::run_cli(app, argc, argv, exit_code, "tagcsim");
}
