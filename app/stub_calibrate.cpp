// Placeholder until `tagcsim calibrate` lands in app/calibrate_cmd.cpp; delete this file then.
#include "app/commands.hpp"
namespace tagcsim::app {
void add_calibrate_command(CLI::App&, int&) {}
}  // namespace tagcsim::app
