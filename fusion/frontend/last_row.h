// Generation reads only the last position's logits of a prefill (runtime/token_sampler.h): the
// LM head need not run on every row of the prompt. No Halide here.
#pragma once

#include <string>

#include "fusion/ir/graph.h"

namespace gaf {

// When graph output `output` ([batch, seq, vocab]) is a MatMul with a constant B (optionally
// followed by an Add of a constant bias) whose A is [batch, seq, hidden], A is sliced to its last
// row along seq first, so the LM head runs on one row per sequence instead of seq rows (vocab
// 50257, prompt 32: about a fifth of the first token's time), and `output` becomes
// [batch, 1, vocab]. Returns false, the graph untouched, when the output is not made that way.
// On a prepared graph (load_model runs it after prepare_graph); shapes are inferred again.
bool slice_output_to_last_row(Graph& g, const std::string& output);

}  // namespace gaf
