// Horizontal MatMul fusion (built-in rule 4): sibling MatMuls that read the same activation with
// constant [K, N_i] weights, each with a constant bias or none (Q, K and V of attention, biased
// as in BERT or bias-free as in Llama and T5) become one wide MatMul, with a bias where any branch
// had one (zeros for those without). A gated MLP's gate and up stay apart: the gated_mlp rule
// computes them per panel and writes only their product. The weights and biases are concatenated
// once, here, at load (the originals are dropped, so memory does not grow) and one Slice per
// branch hands each consumer its columns. The "horizontal_matmul" rule then groups the wide
// MatMul (and its bias); each Slice (a layout op) joins the group that reads it, so the wide
// output is written once and never copied.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fusion/ir/graph.h"
#include "fusion/planner/rule.h"

namespace gaf {

// Rewrites `g` in place (it must be typed); returns one line per rewrite naming the MatMuls.
// Branches with a `skipped` node are left alone. With `replaced`, records for the wide MatMul and
// its Add the original nodes each one replaces.
std::vector<std::string> fuse_horizontal_matmuls(Graph& g, const std::function<bool(const Node&)>& skipped,
                                                 std::map<std::string, std::vector<std::string>>* replaced = nullptr);

std::shared_ptr<const FusionRule> make_horizontal_matmul_rule();

}  // namespace gaf
