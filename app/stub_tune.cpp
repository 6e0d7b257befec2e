// Placeholder until `tagcsim tune` lands in app/tune_cmd.cpp; delete this file then.
#include "app/commands.hpp"
namespace tagcsim::app {
void add_tune_command(CLI::App&, int&) {}
}  // namespace tagcsim::app
