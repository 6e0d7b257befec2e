// The `tagcsim` subcommands. Each file in app/ adds one to the CLI and
// returns its exit code through the callback it installs.
#pragma once

#include <CLI/CLI.hpp>

namespace tagcsim::app {

// Each add_* registers a subcommand; `exit_code` receives its result.
void add_run_command(CLI::App& app, int& exit_code);         // tagcsim run SCENARIO
void add_collective_command(CLI::App& app, int& exit_code);  // tagcsim collective ...
void add_kernels_command(CLI::App& app, int& exit_code);     // tagcsim kernels bench|quality
void add_tune_command(CLI::App& app, int& exit_code);        // tagcsim tune SCENARIO
void add_calibrate_command(CLI::App& app, int& exit_code);   // tagcsim calibrate ...
void add_show_command(CLI::App& app, int& exit_code);        // tagcsim show [models|clusters|gpus] [NAME]
void add_validate_command(CLI::App& app, int& exit_code);    // tagcsim validate
void add_calibrate_box_commands(CLI::App* calibrate, int& exit_code);  // calibrate box | check
void add_calibrate_log_command(CLI::App* calibrate, int& exit_code);   // calibrate log SCENARIO LOG

}  // namespace tagcsim::app
