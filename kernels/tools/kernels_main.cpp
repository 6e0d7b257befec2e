// tagcsim-kernels: `tagcsim kernels bench|quality` alone, linked against the
// kernels library only (no SimGrid, no simulator), so that a GPU machine
// without the simulator's dependencies can run the bench (kernels/gpu-check.sh).
// Same subcommand code (app/kernels_cmd.cpp), same options, same output.
#include "app/commands.hpp"
#include "app/run_cli.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tagcsim-kernels: the TAGC kernels' bench and quality commands (as in `tagcsim kernels`)"};
  app.require_subcommand(1);
  int exit_code = 0;
  tagcsim::app::add_kernels_command(app, exit_code);
  return tagcsim::app::run_cli(app, argc, argv, exit_code, "tagcsim-kernels");
}
