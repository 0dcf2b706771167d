// An Einsum equation ("bqhd,bkhd->bhqk", "...ii->...i", "i,i") read against its operands' ranks:
// every axis of every operand and of the output as a label. No Halide here: the op builder
// (einsum.cpp) and the load-time rewrite into MatMul (fusion/frontend/einsum_rewrite.h) both
// read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace gaf {

struct EinsumEquation {
  // Labels are ids: a letter is its own character ('a'..'z', 'A'..'Z'); the axes an ellipsis
  // stands for are kEllipsis + j, right-aligned across the operands (numpy broadcasting).
  static constexpr int kEllipsis = 256;
  std::vector<std::vector<int>> inputs;  // per operand, per axis
  std::vector<int> output;               // per output axis
  // Every label in order of first appearance (inputs, then output), each once.
  std::vector<int> labels;

  // Parses `equation` for operands of `ranks`; throws GafError naming the fault ("equation
  // '...': ..."). No "->": the implicit output, the ellipsis axes then the letters used once, in
  // alphabetical order.
  static EinsumEquation parse(const std::string& equation, const std::vector<int>& ranks);

  // The extent of each label in `labels` order, from the operands' shapes: a letter's extents must
  // agree; an ellipsis axis broadcasts (1 against n). Throws GafError naming the label.
  std::vector<int64_t> extents(const std::vector<Shape>& shapes) const;
  // The output shape for those extents.
  Shape output_shape(const std::vector<Shape>& shapes) const;
  // Labels summed over: in some operand, not in the output (labels order).
  std::vector<int> contracted() const;
  bool in_output(int label) const;
  int index_of(int label) const;  // position in `labels`
};

std::string einsum_label_name(int label);  // "i", or "...[j]"

}  // namespace gaf
