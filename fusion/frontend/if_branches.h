// An ONNX `If` whose condition is a graph input of known value, replaced by the nodes of the branch
// it takes. This is how a merged decoder (optimum's decoder_model_merged.onnx: an If on the bool
// input use_cache_branch, then = the step with past, else = the prefill) becomes two graphs, each
// planned on its own: gaf generate imports the file once per value. An If on a condition computed
// inside the graph stays unsupported.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace onnx {
class GraphProto;
}

namespace gaf {

// Values of bool graph inputs known before planning (--branch NAME=true|false).
using BranchConditions = std::map<std::string, bool>;

// The graph inputs that are the condition of an If node of `g` (top level), in input order.
std::vector<std::string> branch_condition_inputs(const onnx::GraphProto& g);

// Replaces every If (also nested in a taken branch) whose condition is a key of `conditions` by
// its taken branch's nodes, in place: the branch's initializers move to g, a branch output named
// differently from the If's output becomes an Identity. A bound input no node reads any more is
// removed from g's inputs. GafError naming `what` and the input when a condition names no bool
// graph input.
void inline_bound_branches(onnx::GraphProto& g, const BranchConditions& conditions, const std::string& what);

}  // namespace gaf
