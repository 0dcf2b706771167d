// gaf: graph-autofusion's command line. Exit codes: 0 ok, 1 user error (bad model, input or
// option; one line on stderr naming what is wrong), 2 internal error.
#include <iostream>

#include "apps/gaf/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"graph-autofusion: fuse a model's operators and compile them with Halide"};
  app.require_subcommand(1);
  gaf::cli::Action run = gaf::cli::add_run_command(app);
  gaf::cli::Action info = gaf::cli::add_info_command(app);
  gaf::cli::Action plan = gaf::cli::add_plan_command(app);
  gaf::cli::Action compile = gaf::cli::add_compile_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }
  try {
    if (app.got_subcommand("run")) return run();
    if (app.got_subcommand("info")) return info();
    if (app.got_subcommand("plan")) return plan();
    if (app.got_subcommand("compile")) return compile();
  } catch (const gaf::GafError& e) {
    std::cerr << "gaf: error: " << e.what() << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gaf: internal error: " << e.what() << std::endl;
    return 2;
  }
  return 2;
}
