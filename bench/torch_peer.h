// The PyTorch eager peer: bench/torch_bert.py run by Debian's python3 as a coprocess, so its
// forwards can be timed interleaved with the in-process variants.
#pragma once

#include <memory>
#include <string>

#include "bench/coprocess.h"
#include "runtime/tensor.h"

namespace gaf::bench {

// "" if `python` can import torch, else the reason (one line).
std::string torch_unavailable(const std::string& python);

class TorchBert {
 public:
  // Starts torch_bert.py --serve with the weights in `weights_dir` and the inputs in
  // `inputs_dir` (files as written by the bench), then waits for its warm-up.
  TorchBert(const std::string& python, const std::string& script, const std::string& weights_dir,
            const std::string& inputs_dir, int layers, int64_t seq, int threads);
  double run_ms();                             // one forward, timed inside Python
  Tensor output(const std::string& npy_path);  // one forward, saved to npy_path and read back
  const std::string& version() const { return version_; }

 private:
  std::unique_ptr<Coprocess> proc_;
  std::string version_;
};

}  // namespace gaf::bench
