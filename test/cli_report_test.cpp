// gaf report: the HTML page (self-contained, picture, tables; opened in headless Chromium), the
// JSON with and without --profile, repeated layers folded, no graphviz, and bad options.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "test/cli_util.h"

using namespace gaf::testing;
namespace fs = std::filesystem;

namespace {

std::string gaf_cmd(const std::string& args) { return gaf_binary() + " " + args; }
const char* kSmall = "builtin:bert-base --layers 1 --seq 16";

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(CliReport, HtmlIsSelfContainedWithPictureAndTables) {
  std::string dir = scratch_dir("cli_report_html");
  fs::create_directories(dir);
  std::string html = dir + "/r.html";
  fs::remove(html);
  CommandResult r = run_command(gaf_cmd(std::string("report ") + kSmall + " --html " + html), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[GRAPH_AUTOFUSION] Applied 6/6 fusions successfully"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote " + html), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;
  std::string page = slurp(html);
  // The picture: graphviz's SVG inline, with the fused groups as clusters linking to their rows.
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_EQ(page.find("<?xml"), std::string::npos);
  EXPECT_EQ(count(page, "class=\"cluster\""), 6u);  // 6 groups of 2+ ops
  EXPECT_NE(page.find("xlink:href=\"#g5\""), std::string::npos);
  EXPECT_NE(page.find("GAF&#45;NF004</text>"), std::string::npos);  // a refused merge drawn with its code
  // The tables: totals per kind, a row per group with its decisions, refusals with meanings.
  EXPECT_NE(page.find("id=\"totals-table\""), std::string::npos);
  EXPECT_NE(page.find("<td>matmul_epilogue</td><td class=\"num\">4</td>"), std::string::npos);
  EXPECT_EQ(count(page, "<tr id=\"g"), 6u);  // every group fuses 2+ ops
  EXPECT_NE(page.find("<b>compute_at</b>"), std::string::npos);
  EXPECT_NE(page.find("matmul_layernorm"), std::string::npos);
  // The wide Q/K/V MatMul maps back to the model's own nodes.
  EXPECT_NE(page.find("replaces encoder.layer.0/attention/encoder.layer.0.attention.self.key/MatMul_11"),
            std::string::npos);
  EXPECT_NE(page.find("a computed value is broadcast by its consumer"), std::string::npos);
  // Self-contained: nothing to fetch, nothing to run.
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(count(page, "http"), count(page, "http://www.w3.org/"));
}

TEST(CliReport, ChromiumRendersTheReport) {
  const std::string chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium))
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium); skipping the browser check";
  std::string dir = scratch_dir("cli_report_chromium");
  fs::remove_all(dir);
  fs::create_directories(dir + "/profile");
  std::string html = dir + "/r.html";
  CommandResult r = run_command(gaf_cmd(std::string("report ") + kSmall + " --html " + html), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-background-networking "
      "--disable-component-update --disable-sync --no-first-run --user-data-dir=" +
      dir + "/profile";
  CommandResult dom = run_command("timeout 120 " + chromium + flags + " --dump-dom file://" + html, dir);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  // The DOM Chromium built: the SVG's own elements, the clusters, and the three tables.
  EXPECT_NE(dom.out.find("<svg"), std::string::npos) << dom.out.substr(0, 500);
  EXPECT_NE(dom.out.find("<polygon"), std::string::npos);
  EXPECT_EQ(count(dom.out, "class=\"cluster\""), 6u);
  EXPECT_NE(dom.out.find("id=\"totals-table\""), std::string::npos);
  EXPECT_EQ(count(dom.out, "<tr id=\"g"), 6u);
  EXPECT_NE(dom.out.find("id=\"refused-table\""), std::string::npos);
  CommandResult shot = run_command(
      "timeout 120 " + chromium + flags + " --window-size=1200,1600 --screenshot=" + dir + "/shot.png file://" + html,
      dir);
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  EXPECT_GT(fs::file_size(dir + "/shot.png"), 20000u);  // a drawn page, not a blank one
}

TEST(CliReport, RepeatedLayersAreFolded) {
  std::string dir = scratch_dir("cli_report_fold");
  fs::create_directories(dir);
  CommandResult r = run_command(gaf_cmd("report builtin:bert-base --layers 3 --seq 16 --html " + dir + "/r.html"), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string page = slurp(dir + "/r.html");
  // Layer 0 drawn (6 clusters), layers 1 and 2 one box; all 16 group rows still in the tables.
  EXPECT_EQ(count(page, "class=\"cluster\""), 6u);
  EXPECT_NE(page.find("x2 identical layers"), std::string::npos);
  EXPECT_NE(page.find("2 layers are identical to the first, folded: g6..g15"), std::string::npos);
  EXPECT_EQ(count(page, "<tr id=\"g"), 16u);
}

TEST(CliReport, JsonWithProfile) {
  std::string dir = scratch_dir("cli_report_profile");
  fs::create_directories(dir);
  CommandResult r = run_command(gaf_cmd(std::string("report ") + kSmall + " --profile --repeat 2 --json " + dir +
                                        "/r.json --html " + dir + "/r.html"),
                                dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("profile: forward "), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(slurp(dir + "/r.json"));
  EXPECT_EQ(j["schema"], "graph-autofusion/plan/1");
  EXPECT_EQ(j["profile"]["runs"], 2);
  const auto& qkv = j["groups"][1];
  ASSERT_EQ(qkv["kind"], "horizontal_matmul");
  std::vector<std::string> sources = qkv["source_nodes"];
  for (const char* n : {"encoder.layer.0/attention/encoder.layer.0.attention.self.query/MatMul_6",
                        "encoder.layer.0/attention/encoder.layer.0.attention.self.key/Add_12",
                        "encoder.layer.0/attention/encoder.layer.0.attention.self.value/MatMul_16"})
    EXPECT_NE(std::find(sources.begin(), sources.end(), n), sources.end()) << n;
  EXPECT_GT(j["profile"]["fused_forward_ms"].get<double>(), 0.0);
  EXPECT_GT(j["profile"]["unfused_forward_ms"].get<double>(), 0.0);
  double saved = 0;
  for (const auto& g : j["groups"]) {
    EXPECT_GT(g["fused_ms"].get<double>(), 0.0) << g["id"];
    EXPECT_GT(g["unfused_ms"].get<double>(), 0.0) << g["id"];
    if (g["nodes"].size() >= 2 && g["kind"] == "matmul_epilogue")
      saved += g["unfused_ms"].get<double>() - g["fused_ms"].get<double>();
  }
  EXPECT_NEAR(j["totals"]["matmul_epilogue"]["ms_saved"].get<double>(), saved, 1e-9);
  std::string page = slurp(dir + "/r.html");
  EXPECT_NE(page.find("<th>time saved per fusion</th>"), std::string::npos);
  EXPECT_NE(page.find("<th>fused</th><th>unfused</th><th>saved</th>"), std::string::npos);
}

TEST(CliReport, WithoutGraphvizThePageSaysWhy) {
  std::string dir = scratch_dir("cli_report_nodot");
  fs::create_directories(dir);
  CommandResult r =
      run_command("PATH=/nonexistent " + gaf_cmd(std::string("report ") + kSmall + " --html " + dir + "/r.html"), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err_lines(), 1) << r.err;
  EXPECT_NE(r.err.find("cannot run graphviz 'dot'"), std::string::npos) << r.err;
  std::string page = slurp(dir + "/r.html");
  EXPECT_EQ(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("id=\"no-picture\""), std::string::npos);
  EXPECT_NE(page.find("id=\"totals-table\""), std::string::npos);
}

TEST(CliReport, BadOptionsOneLineNoOutput) {
  std::string dir = scratch_dir("cli_report_errors");
  fs::remove_all(dir);
  fs::create_directories(dir);
  CommandResult none = run_command(gaf_cmd(std::string("report ") + kSmall), dir);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err_lines(), 1) << none.err;
  EXPECT_NE(none.err.find("give --html FILE and/or --json FILE"), std::string::npos) << none.err;
  CommandResult folder = run_command(
      gaf_cmd(std::string("report ") + kSmall + " --json " + dir + "/r.json --html " + dir + "/no/such/r.html"), dir);
  EXPECT_EQ(folder.exit_code, 1);
  EXPECT_EQ(folder.err_lines(), 1) << folder.err;
  EXPECT_NE(folder.err.find("--html '" + dir + "/no/such/r.html': folder"), std::string::npos) << folder.err;
  CommandResult kind =
      run_command(gaf_cmd(std::string("report ") + kSmall + " --html " + dir + "/r.html --disable-kind vertical"), dir);
  EXPECT_EQ(kind.exit_code, 1);
  EXPECT_NE(kind.err.find("unknown fusion kind 'vertical'"), std::string::npos) << kind.err;
  fs::remove(dir + "/stdout.txt");
  fs::remove(dir + "/stderr.txt");
  EXPECT_TRUE(fs::is_empty(dir));  // nothing written, not even the JSON given beside the bad --html
}
