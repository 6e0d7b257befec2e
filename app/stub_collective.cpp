// Placeholder until `tagcsim collective` lands in app/collective_cmd.cpp; delete this file then.
#include "app/commands.hpp"
namespace tagcsim::app {
void add_collective_command(CLI::App&, int&) {}
}  // namespace tagcsim::app
