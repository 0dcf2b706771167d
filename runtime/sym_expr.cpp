#include "runtime/sym_expr.h"

#include <algorithm>
#include <cctype>

#include "runtime/tensor.h"

namespace gaf {

SymExpr SymExpr::constant(int64_t c) {
  SymExpr e;
  e.add_term({}, c);
  return e;
}

SymExpr SymExpr::symbol(const std::string& name) {
  SymExpr e;
  e.add_term({name}, 1);
  return e;
}

void SymExpr::add_term(Monomial m, int64_t coefficient) {
  std::sort(m.begin(), m.end());
  int64_t& c = terms_[m];
  c = checked_add(c, coefficient, "symbolic dim");
  if (c == 0) terms_.erase(m);
}

bool SymExpr::is_constant() const { return terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty()); }

int64_t SymExpr::constant_term() const {
  auto it = terms_.find({});
  return it == terms_.end() ? 0 : it->second;
}

std::optional<std::string> SymExpr::as_symbol() const {
  if (terms_.size() != 1 || terms_.begin()->first.size() != 1 || terms_.begin()->second != 1) return std::nullopt;
  return terms_.begin()->first[0];
}

std::set<std::string> SymExpr::symbols() const {
  std::set<std::string> s;
  for (const auto& [m, c] : terms_) s.insert(m.begin(), m.end());
  return s;
}

int64_t SymExpr::eval(const SymBindings& b) const {
  int64_t sum = 0;
  for (const auto& [m, c] : terms_) {
    int64_t term = c;
    for (const std::string& s : m) {
      auto it = b.find(s);
      if (it == b.end()) throw GafError("symbolic dim '" + str() + "': no value for '" + s + "'");
      term = checked_mul(term, it->second, "symbolic dim");
    }
    sum = checked_add(sum, term, "symbolic dim");
  }
  return sum;
}

std::string SymExpr::str() const {
  if (terms_.empty()) return "0";
  std::string out;
  // Symbolic terms first, the constant last: "seq+1".
  auto append = [&](const Monomial& m, int64_t c) {
    std::string t;
    int64_t mag = c < 0 ? -c : c;
    if (m.empty() || mag != 1) t = std::to_string(mag);
    for (const std::string& s : m) t += (t.empty() ? "" : "*") + s;
    out += c < 0 ? "-" : out.empty() ? "" : "+";
    out += t;
  };
  for (const auto& [m, c] : terms_)
    if (!m.empty()) append(m, c);
  auto k = terms_.find({});
  if (k != terms_.end()) append(k->first, k->second);
  return out;
}

std::optional<SymExpr> SymExpr::parse(const std::string& text) {
  SymExpr e;
  size_t i = 0;
  if (text.empty()) return std::nullopt;
  while (i < text.size()) {
    int64_t sign = 1;
    if (text[i] == '+' || text[i] == '-') {
      sign = text[i] == '-' ? -1 : 1;
      ++i;
    } else if (i != 0) {
      return std::nullopt;
    }
    int64_t coef = 1;
    Monomial m;
    bool first = true, any = false;
    while (i < text.size() && text[i] != '+' && text[i] != '-') {
      if (!first) {
        if (text[i] != '*') return std::nullopt;
        ++i;
      }
      size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      if (j == i) return std::nullopt;
      std::string tok = text.substr(i, j - i);
      if (std::isdigit(static_cast<unsigned char>(tok[0]))) {
        if (!first || tok.size() > 18 || !std::all_of(tok.begin(), tok.end(), ::isdigit)) return std::nullopt;
        coef = std::stoll(tok);
      } else {
        m.push_back(tok);
      }
      i = j;
      first = false;
      any = true;
    }
    if (!any) return std::nullopt;
    e.add_term(m, sign * coef);
  }
  return e;
}

bool ranges_hold(const SymbolRanges& ranges, const SymBindings& dims) {
  for (const auto& [name, r] : ranges) {
    auto it = dims.find(name);
    if (it == dims.end() || !r.contains(it->second)) return false;
  }
  return true;
}

SymBindings upper_bounds(const SymbolRanges& ranges) {
  SymBindings b;
  for (const auto& [name, r] : ranges) b[name] = r.hi;
  return b;
}

int64_t max_over(const SymExpr& e, const SymbolRanges& ranges) {
  std::vector<std::string> names;
  for (const std::string& s : e.symbols()) names.push_back(s);
  if (names.size() > 16) throw GafError("symbolic dim '" + e.str() + "' has more than 16 symbols");
  int64_t best = INT64_MIN;
  for (size_t mask = 0; mask < (size_t{1} << names.size()); ++mask) {
    SymBindings b;
    for (size_t i = 0; i < names.size(); ++i) {
      auto r = ranges.find(names[i]);
      if (r == ranges.end()) throw GafError("symbolic dim '" + e.str() + "': no range for '" + names[i] + "'");
      b[names[i]] = (mask >> i & 1) ? r->second.lo : r->second.hi;
    }
    best = std::max(best, e.eval(b));
  }
  return best;
}

std::vector<int64_t> eval_shape(const SymShape& s, const SymBindings& b) {
  std::vector<int64_t> out;
  for (const SymExpr& d : s) out.push_back(d.eval(b));
  return out;
}

std::string sym_shape_str(const SymShape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + s[i].str();
  return out + "]";
}

bool is_static_shape(const SymShape& s) {
  return std::all_of(s.begin(), s.end(), [](const SymExpr& d) { return d.is_constant(); });
}

SymSampler::SymSampler(const SymbolRanges& dynamic) {
  for (const auto& [name, r] : dynamic) {
    if (r.lo >= r.hi) continue;
    names_.push_back(name);
    hi_.push_back(r.hi);
    // Away from 1 where the range allows: size-1 dims broadcast, which would mislead the fit.
    int64_t other = std::max<int64_t>(r.lo, 2);
    other_.push_back(other < r.hi ? other : r.lo);
  }
  if (names_.size() > 8) throw GafError("more than 8 dynamic dims");
  corners_ = size_t{1} << names_.size();
  for (size_t mask = 0; mask < corners_; ++mask) {
    SymBindings b;
    for (size_t i = 0; i < names_.size(); ++i) b[names_[i]] = (mask >> i & 1) ? other_[i] : hi_[i];
    points_.push_back(b);
  }
  // Check points: the middle of each range and one below the top, where they are new values.
  for (int which = 0; which < 2; ++which) {
    SymBindings b;
    bool fresh = false;
    for (size_t i = 0; i < names_.size(); ++i) {
      const SymbolRange& r = dynamic.at(names_[i]);
      int64_t v = which == 0 ? other_[i] + (hi_[i] - other_[i]) / 2 : hi_[i] - 1;
      if (v == hi_[i] || v == other_[i] || v < r.lo) v = hi_[i];
      fresh = fresh || v != hi_[i];
      b[names_[i]] = v;
    }
    if (fresh && std::find(points_.begin() + static_cast<long>(corners_), points_.end(), b) == points_.end())
      points_.push_back(b);
  }
}

std::optional<SymExpr> SymSampler::fit(const std::vector<int64_t>& observed) const {
  if (observed.size() != points_.size()) throw GafError("internal: fit with the wrong number of samples");
  // Corner values -> multilinear coefficients, one symbol at a time: along symbol i,
  // f = u + v * x_i with v = (f(hi) - f(other)) / (hi - other).
  std::vector<int64_t> t(observed.begin(), observed.begin() + static_cast<long>(corners_));
  for (size_t i = 0; i < names_.size(); ++i) {
    const size_t bit = size_t{1} << i;
    const int64_t h = hi_[i], o = other_[i];
    for (size_t mask = 0; mask < corners_; ++mask) {
      if (mask & bit) continue;
      const int64_t a = t[mask], b = t[mask | bit];
      if ((a - b) % (h - o) != 0) return std::nullopt;
      const int64_t v = (a - b) / (h - o);
      t[mask] = a - v * h;
      t[mask | bit] = v;
    }
  }
  SymExpr e;
  for (size_t mask = 0; mask < corners_; ++mask) {
    SymExpr::Monomial m;
    for (size_t i = 0; i < names_.size(); ++i)
      if (mask >> i & 1) m.push_back(names_[i]);
    e.add_term(m, t[mask]);
  }
  for (size_t p = 0; p < points_.size(); ++p)
    if (e.eval(points_[p]) != observed[p]) return std::nullopt;
  return e;
}

}  // namespace gaf
