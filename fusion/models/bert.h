// The built-in default model: a BERT-base encoder (post-LN) built with the C++ builder from the
// same primitive ops PyTorch's opset-14 export produces: LayerNorm as ReduceMean/Sub/Pow/
// ReduceMean/Add/Sqrt/Div/Mul/Add, GELU as Div/Erf/Add/Mul/Mul, attention as MatMul/Div/Add/
// Softmax/MatMul with Reshape/Transpose between heads. Weights come from a fixed seed.
#pragma once

#include <cstdint>

#include "fusion/ir/graph.h"

namespace gaf {

struct BertConfig {
  int layers = 12;
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t ffn = 3072;
  float eps = 1e-12f;
  uint32_t seed = 1234;
};

// Inputs: "hidden_states" float32 [batch, seq, hidden] (the embedding output) and
// "attention_mask" float32 [batch, seq] (1 = attend, 0 = padding). Output: "last_hidden_state".
// batch and seq stay symbolic; bind them before planning.
Graph build_bert(const BertConfig& cfg);
// The bytes of build_bert's weights, overflow-checked, without building (the memory budget
// refuses a too-large configuration before anything is allocated).
int64_t bert_weight_bytes(const BertConfig& cfg);

}  // namespace gaf
