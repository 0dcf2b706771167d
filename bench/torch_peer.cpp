#include "bench/torch_peer.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "runtime/tensor_io.h"

namespace gaf::bench {
namespace {

// The child's next JSON line; other lines (e.g. a library's verbose log) are skipped.
nlohmann::json answer(Coprocess& proc) {
  std::string line = proc.read_line();
  while (line.empty() || line[0] != '{') line = proc.read_line();
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw GafError("torch_bert.py: unexpected output: " + line);
  if (j.contains("error")) throw GafError("torch_bert.py: " + j["error"].get<std::string>());
  return j;
}

}  // namespace

std::string torch_unavailable(const std::string& python) {
  std::string cmd = "'" + python + "' -c 'import torch' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return python + " cannot import torch";
  return "";
}

TorchBert::TorchBert(const std::string& python, const std::string& script, const std::string& weights_dir,
                     const std::string& inputs_dir, int layers, int64_t seq, int threads)
    : proc_(new Coprocess({python, script, "--serve", "--seq", std::to_string(seq), "--layers", std::to_string(layers),
                           "--threads", std::to_string(threads), "--weights", weights_dir, "--inputs", inputs_dir})) {
  nlohmann::json j = answer(*proc_);
  if (!j.value("ready", false)) throw GafError("torch_bert.py: did not start");
  version_ = j.value("torch", "");
}

double TorchBert::run_ms() {
  proc_->send("run");
  return answer(*proc_)["ms"].get<double>();
}

Tensor TorchBert::output(const std::string& npy_path) {
  proc_->send("save " + npy_path);
  answer(*proc_);
  return read_npy(npy_path);
}

}  // namespace gaf::bench
