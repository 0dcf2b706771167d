// gaf: graph-autofusion's command line. Exit codes: 0 ok, 1 user error (bad model, input or
// option; one line on stderr naming what is wrong), 2 internal error, 3 gaf verify found a group
// or output above tolerance, or gaf generate --compare a token that differs.
#include <iostream>

#include "apps/gaf/commands.h"
#include "apps/gaf/parallel_job.h"

int main(int argc, char** argv) {
  CLI::App app{"graph-autofusion: fuse a model's operators and compile them with Halide"};
  app.require_subcommand(1);
  app.footer(
      "A model is path/to/model.onnx or builtin:bert-base. GAF_FUSION (e.g. 'disable-kind=normalization;skip=Erf')\n"
      "adds fusion controls, GAF_LOG_LEVEL=error|warn|info|debug sets the log level (stderr).\n"
      "Exit codes: 0 ok, 1 user error (one line naming the file, node or option), 2 internal error,\n"
      "3 gaf verify found a result above tolerance, or gaf generate --compare a differing token.");
  gaf::cli::Action run = gaf::cli::add_run_command(app);
  gaf::cli::Action info = gaf::cli::add_info_command(app);
  gaf::cli::Action plan = gaf::cli::add_plan_command(app);
  gaf::cli::Action report = gaf::cli::add_report_command(app);
  gaf::cli::Action explain = gaf::cli::add_explain_command(app);
  gaf::cli::Action verify = gaf::cli::add_verify_command(app);
  gaf::cli::Action compile = gaf::cli::add_compile_command(app);
  gaf::cli::Action generate = gaf::cli::add_generate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }
  try {
    int rc = 2;
    if (app.got_subcommand("run"))
      rc = run();
    else if (app.got_subcommand("info"))
      rc = info();
    else if (app.got_subcommand("plan"))
      rc = plan();
    else if (app.got_subcommand("report"))
      rc = report();
    else if (app.got_subcommand("explain"))
      rc = explain();
    else if (app.got_subcommand("verify"))
      rc = verify();
    else if (app.got_subcommand("compile"))
      rc = compile();
    else if (app.got_subcommand("generate"))
      rc = generate();
    gaf::cli::leave_parallel_job();
    return rc;
  } catch (const gaf::GafError& e) {
    std::cerr << "gaf: error: " << e.what() << std::endl;
    gaf::cli::end_parallel_job_on_error(1);
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gaf: internal error: " << e.what() << std::endl;
    gaf::cli::end_parallel_job_on_error(2);
    return 2;
  }
  return 2;
}
