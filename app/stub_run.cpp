// Placeholder until `tagcsim run` lands in app/run_cmd.cpp; delete this file then.
#include "app/commands.hpp"
namespace tagcsim::app {
void add_run_command(CLI::App&, int&) {}
}  // namespace tagcsim::app
