// Symbolic dims: an extent (or an integer a shape computation produces) as a polynomial in named
// symbols such as `seq` and `batch`, e.g. `seq`, `batch*seq`, `seq+1`, `12*seq`. Multilinear
// (no symbol appears twice in a term) with integer coefficients: what reshapes, concatenations
// and slices of transformer graphs produce. Plain data, no Halide: the planner, the executors
// and the AOT plan file (its reader links only gaf_tensor) share it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gaf {

// Values of the symbols at one point, e.g. {seq: 77}.
using SymBindings = std::map<std::string, int64_t>;

class SymExpr {
 public:
  using Monomial = std::vector<std::string>;  // sorted symbol names; empty = the constant term

  SymExpr() = default;  // 0
  static SymExpr constant(int64_t c);
  static SymExpr symbol(const std::string& name);

  bool is_constant() const;
  int64_t constant_term() const;
  // The name when the expression is exactly one symbol (coefficient 1, no constant).
  std::optional<std::string> as_symbol() const;
  std::set<std::string> symbols() const;
  const std::map<Monomial, int64_t>& terms() const { return terms_; }
  void add_term(Monomial m, int64_t coefficient);

  // Throws GafError on a symbol missing from `b` or on overflow.
  int64_t eval(const SymBindings& b) const;
  // "seq", "batch*seq", "12*seq+1", "768".
  std::string str() const;
  // Parses str()'s form; nullopt on anything else.
  static std::optional<SymExpr> parse(const std::string& text);

  bool operator==(const SymExpr& o) const { return terms_ == o.terms_; }
  bool operator!=(const SymExpr& o) const { return !(*this == o); }

 private:
  std::map<Monomial, int64_t> terms_;  // no zero coefficients
};

// An inclusive range of values a symbol takes at run time (`--dim seq=1..512`).
struct SymbolRange {
  int64_t lo = 1, hi = 1;
  bool contains(int64_t v) const { return v >= lo && v <= hi; }
  std::string str() const { return std::to_string(lo) + ".." + std::to_string(hi); }
};
using SymbolRanges = std::map<std::string, SymbolRange>;
// Whether every range holds its dim's value in `dims` (a dim missing from `dims`: no).
bool ranges_hold(const SymbolRanges& ranges, const SymBindings& dims);

// The symbols' values at the upper ends of their ranges (the representative point: planning,
// schedules and the memory plan see these).
SymBindings upper_bounds(const SymbolRanges& ranges);
// The largest value `e` takes over the box of ranges. Exact for multilinear expressions (the
// maximum lies at a corner); throws GafError when there are more than 16 symbols.
int64_t max_over(const SymExpr& e, const SymbolRanges& ranges);

// Shapes with symbolic dims: one SymExpr per dim.
using SymShape = std::vector<SymExpr>;
std::vector<int64_t> eval_shape(const SymShape& s, const SymBindings& b);
std::string sym_shape_str(const SymShape& s);
bool is_static_shape(const SymShape& s);

// Fitting a symbolic form to values observed at sample points (what shape inference gives at
// each): the sample points are the corners {hi, other} of each symbol's range plus up to two
// check points inside it; a fit that misses a check point (seq / 2, min(seq, 64)) or needs a
// fractional coefficient is no fit.
class SymSampler {
 public:
  explicit SymSampler(const SymbolRanges& dynamic);

  // Point 0 is the representative point (every symbol at its upper bound).
  const std::vector<SymBindings>& points() const { return points_; }
  std::optional<SymExpr> fit(const std::vector<int64_t>& observed) const;

 private:
  std::vector<std::string> names_;
  std::vector<int64_t> hi_, other_;
  std::vector<SymBindings> points_;  // 2^k corners (bit i set: symbol i at `other`), then checks
  size_t corners_ = 1;
};

}  // namespace gaf
