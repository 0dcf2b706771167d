// Every command the README and the user guide show ("$ ./build/gaf ..." in a text block) runs here
// as written, from a scratch folder: it must exit as the page shows (1 when the page shows
// "gaf: error:", else 0), and every output line the page shows must be in the real output, except
// lines with measured figures (a decimal number) and lines the page shortened ("...").
#include <regex>

#include "test/cli_util.h"

using namespace gaf::testing;

namespace {

struct DocCommand {
  std::string file, command;
  std::vector<std::string> shown;  // output lines the page shows
};

std::vector<DocCommand> doc_commands(const std::string& file) {
  std::vector<DocCommand> cmds;
  std::istringstream in(slurp(source_dir() + "/" + file));
  std::string line;
  bool in_text = false, after_command = false;  // output lines belong to a command of the same block
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      in_text = !in_text && line == "```text";
      after_command = false;
      continue;
    }
    if (!in_text) continue;
    if (line.rfind("$ ./build/gaf ", 0) == 0) {
      cmds.push_back({file, line.substr(2), {}});
      after_command = true;
    } else if (line.rfind("$ ", 0) == 0) {
      after_command = false;  // another program's command (e.g. the AOT app): not run here
    } else if (after_command) {
      cmds.back().shown.push_back(line);
    }
  }
  return cmds;
}

}  // namespace

TEST(DocsCommands, EveryShownCommandRunsAndPrintsWhatThePageShows) {
  std::string dir = scratch_dir("docs_commands");
  std::filesystem::create_directories(dir);
  std::vector<DocCommand> cmds;
  for (const char* f : {"README.md", "docs/USER_GUIDE.md"})
    for (DocCommand& c : doc_commands(f)) cmds.push_back(std::move(c));
  ASSERT_GE(cmds.size(), 8u);
  std::regex measured(R"(\d\.\d)");
  for (const DocCommand& c : cmds) {
    SCOPED_TRACE(c.file + ": " + c.command);
    std::string cmd = c.command;
    cmd.replace(0, std::string("./build/gaf").size(), gaf_binary());
    CommandResult r = run_command("cd " + dir + " && " + cmd, dir + "/run");
    bool shows_error = false;
    for (const std::string& l : c.shown) shows_error = shows_error || l.rfind("gaf: error:", 0) == 0;
    EXPECT_EQ(r.exit_code, shows_error ? 1 : 0) << r.err;
    std::string all = r.out + r.err;
    for (const std::string& l : c.shown) {
      if (l.empty() || l.find("...") != std::string::npos || std::regex_search(l, measured)) continue;
      EXPECT_NE(all.find(l), std::string::npos) << "the page shows a line the command does not print:\n" << l;
    }
  }
}
