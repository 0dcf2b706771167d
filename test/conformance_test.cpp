// ONNX backend conformance: every case under /usr/share/libonnx-testdata/data/{node,
// pytorch-converted, pytorch-operator, simple} whose ops are all supported and whose inputs and
// outputs are float32/int64/bool runs through the unfused reference executor and is compared with
// ONNX's expected outputs at rtol 1e-4, atol 1e-5. Other cases are skipped, with the ops that caused
// the skips listed. Prints "N passed, M failed, K skipped".
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>

#include "fusion/frontend/onnx_import.h"
#include "generators/reference_executor.h"
#include "runtime/tensor_io.h"
#include "test/tensor_compare.h"

namespace fs = std::filesystem;
using namespace gaf;

namespace {

const char* kRoot = "/usr/share/libonnx-testdata/data";
const char* kFolders[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};
// The cases of those folders whose ops and types graph-autofusion supports (counted when the
// op list was fixed); a drop means an op stopped being recognised.
constexpr int kExpectedRunnable = 305;

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) files.push_back(e.path());
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    auto num = [](const fs::path& p) {
      std::smatch m;
      std::string s = p.filename().string();
      return std::regex_search(s, m, std::regex("_(\\d+)\\.pb$")) ? std::stoi(m[1]) : 0;
    };
    return num(a) < num(b);
  });
  return files;
}

}  // namespace

TEST(OnnxConformance, ReferenceExecutorMatchesOnnxTestData) {
  if (!fs::exists(kRoot)) GTEST_SKIP() << kRoot << " missing (apt-get install libonnx-testdata)";
  ReferenceExecutor ex;
  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> skip_reasons;
  std::vector<std::string> failures;
  for (const char* folder : kFolders) {
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(fs::path(kRoot) / folder)) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    for (const fs::path& dir : cases) {
      std::string name = std::string(folder) + "/" + dir.filename().string();
      if (!fs::exists(dir / "model.onnx")) continue;
      Graph g;
      try {
        g = import_onnx_file((dir / "model.onnx").string());
      } catch (const GafError& e) {
        std::string msg = e.what();
        std::smatch m;
        std::string reason = "other";
        if (std::regex_search(msg, m, std::regex("unsupported op\\(s\\): (.*)$"))) {
          std::string list = m[1];
          std::regex op_re("\\(([^,]+), '");
          std::set<std::string> ops;
          for (auto it = std::sregex_iterator(list.begin(), list.end(), op_re);
               it != std::sregex_iterator(); ++it)
            ops.insert((*it)[1]);
          reason = "";
          for (const std::string& o : ops) reason += (reason.empty() ? "" : "+") + o;
        } else if (msg.find("element type") != std::string::npos) {
          reason = "dtype";
        } else if (msg.find("not a tensor") != std::string::npos) {
          reason = "sequence/map";
        } else {
          reason = "import: " + msg.substr(msg.find(": ") + 2, 60);
        }
        ++skip_reasons[reason];
        ++skipped;
        continue;
      }
      bool ok = true;
      std::string why;
      for (const auto& e : fs::directory_iterator(dir)) {
        if (!e.is_directory() || e.path().filename().string().rfind("test_data_set", 0) != 0) continue;
        try {
          TensorMap inputs;
          std::vector<fs::path> in_files = sorted_files(e.path(), "input_");
          if (in_files.size() > g.inputs().size()) throw GafError("more input files than inputs");
          for (size_t i = 0; i < in_files.size(); ++i)
            inputs[g.inputs()[i]] = read_tensor_pb(in_files[i].string());
          TensorMap outs = ex.run(g, inputs);
          std::vector<fs::path> out_files = sorted_files(e.path(), "output_");
          for (size_t i = 0; i < out_files.size() && i < g.outputs().size(); ++i) {
            std::string diff = gaf::testing::compare_tensors(outs.at(g.outputs()[i]),
                                                             read_tensor_pb(out_files[i].string()));
            if (!diff.empty()) throw GafError("output '" + g.outputs()[i] + "': " + diff);
          }
        } catch (const std::exception& ex_) {
          ok = false;
          why = e.path().filename().string() + ": " + ex_.what();
          break;
        }
      }
      if (ok) ++passed;
      else {
        ++failed;
        failures.push_back(name + ": " + why);
      }
    }
  }
  for (const std::string& f : failures) std::cout << "[conformance] FAILED " << f << "\n";
  std::cout << "[conformance] skipped cases by cause:";
  for (const auto& [r, n] : skip_reasons) std::cout << " " << r << "(" << n << ")";
  std::cout << "\n[conformance] kernels compiled " << ex.stats().kernels_compiled << ", cache hits "
            << ex.stats().kernel_cache_hits << ", compile " << ex.stats().compile_seconds << " s\n";
  std::cout << "[conformance] reference executor: " << passed << " passed, " << failed
            << " failed, " << skipped << " skipped" << std::endl;
  EXPECT_EQ(failed, 0);
  EXPECT_GE(passed, kExpectedRunnable);
}
