// How every gaf subcommand names and loads a model: "path.onnx" or "builtin:NAME", symbolic dims
// bound from --dim / input files / builtin options, then folded and validated.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fusion/frontend/if_branches.h"
#include "fusion/frontend/passes.h"
#include "generators/reference_executor.h"

namespace gaf {

struct ModelOptions {
  std::map<std::string, int64_t> dims;  // --dim NAME=VALUE
  SymbolRanges dim_ranges;              // --dim NAME=LO..HI: dynamic, one plan for the range
  BranchConditions branches;            // --branch NAME=true|false: an If on that input takes one branch
  // Graph outputs of which only the last position is read (a prefill's logits in generation):
  // their LM head runs on the last row only (fusion/frontend/last_row.h).
  std::set<std::string> last_row_outputs;
  int layers = 12;  // builtin:bert-base
  int64_t seq = 128;
  int64_t batch = 1;
};

struct LoadedModel {
  std::string spec;
  std::string description;
  Graph graph;
  PassStats passes;
};

std::vector<std::string> builtin_model_names();
// One --dim: a value (lo == hi) or a range.
struct DimBinding {
  std::string name;
  SymbolRange range;
};
// Parses "NAME=VALUE" or "NAME=LO..HI" (throws GafError on a malformed binding).
DimBinding parse_dim_binding(const std::string& s);

// `known_inputs` (optional) lets symbols be bound from the shapes of given input tensors.
LoadedModel load_model(const std::string& spec, const ModelOptions& opts, ReferenceExecutor& folder,
                       const TensorMap& known_inputs = {});

// Inputs for a run without input files: float32 N(0,1), int64 zeros, bool true; the BERT mask
// input is all ones. With `uniform` = {lo, hi}, every float32 input is uniform in [lo, hi]
// instead. Deterministic for a seed.
TensorMap make_default_inputs(const Graph& g, uint32_t seed,
                              const std::optional<std::pair<float, float>>& uniform = std::nullopt);
// How make_default_inputs chose the values, in words (printed by gaf run and gaf verify).
std::string describe_default_inputs(uint32_t seed, const std::optional<std::pair<float, float>>& uniform);

}  // namespace gaf
