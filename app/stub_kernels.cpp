// Placeholder until `tagcsim kernels` lands in app/kernels_cmd.cpp; delete this file then.
#include "app/commands.hpp"
namespace tagcsim::app {
void add_kernels_command(CLI::App&, int&) {}
}  // namespace tagcsim::app
