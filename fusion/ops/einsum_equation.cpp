#include "fusion/ops/einsum_equation.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "runtime/tensor.h"

namespace gaf {

namespace {

struct Term {
  std::vector<int> letters_before, letters_after;  // around the ellipsis (all "before" when none)
  bool ellipsis = false;
};

Term parse_term(const std::string& t, const std::string& equation) {
  Term r;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '.') {
      if (r.ellipsis || t.compare(i, 3, "...") != 0)
        throw GafError("equation '" + equation + "': '.' outside one '...' per term");
      r.ellipsis = true;
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      (r.ellipsis ? r.letters_after : r.letters_before).push_back(static_cast<unsigned char>(c));
    } else {
      throw GafError("equation '" + equation + "': unexpected character '" + std::string(1, c) + "'");
    }
  }
  return r;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

}  // namespace

std::string einsum_label_name(int label) {
  if (label >= EinsumEquation::kEllipsis) return "...[" + std::to_string(label - EinsumEquation::kEllipsis) + "]";
  return std::string(1, static_cast<char>(label));
}

EinsumEquation EinsumEquation::parse(const std::string& equation, const std::vector<int>& ranks) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  const size_t arrow = eq.find("->");
  const std::vector<std::string> terms = split(eq.substr(0, arrow), ',');
  if (terms.size() != ranks.size())
    throw GafError("equation '" + equation + "' names " + std::to_string(terms.size()) + " operand(s), the node has " +
                   std::to_string(ranks.size()));
  EinsumEquation e;
  // The ellipsis axes: as many as the most any operand has, right-aligned.
  std::vector<Term> parsed;
  int ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    parsed.push_back(parse_term(terms[i], equation));
    const Term& t = parsed.back();
    const int letters = static_cast<int>(t.letters_before.size() + t.letters_after.size());
    if (t.ellipsis ? letters > ranks[i] : letters != ranks[i])
      throw GafError("equation '" + equation + "': term '" + terms[i] + "' does not fit operand " +
                     std::to_string(i) + " of rank " + std::to_string(ranks[i]));
    if (t.ellipsis) ellipsis_rank = std::max(ellipsis_rank, ranks[i] - letters);
  }
  auto note = [&](int label) {
    if (std::find(e.labels.begin(), e.labels.end(), label) == e.labels.end()) e.labels.push_back(label);
  };
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Term& t = parsed[i];
    std::vector<int> axes = t.letters_before;
    if (t.ellipsis) {
      const int n = ranks[i] - static_cast<int>(t.letters_before.size() + t.letters_after.size());
      for (int j = 0; j < n; ++j) axes.push_back(kEllipsis + ellipsis_rank - n + j);
    }
    axes.insert(axes.end(), t.letters_after.begin(), t.letters_after.end());
    for (int l : axes) note(l);
    e.inputs.push_back(std::move(axes));
  }
  if (arrow != std::string::npos) {
    const std::string out = eq.substr(arrow + 2);
    if (out.find("->") != std::string::npos || out.find(',') != std::string::npos)
      throw GafError("equation '" + equation + "': one '->' and one output term");
    const Term t = parse_term(out, equation);
    e.output = t.letters_before;
    if (t.ellipsis)
      for (int j = 0; j < ellipsis_rank; ++j) e.output.push_back(kEllipsis + j);
    e.output.insert(e.output.end(), t.letters_after.begin(), t.letters_after.end());
    for (size_t i = 0; i < e.output.size(); ++i) {
      const int l = e.output[i];
      if (std::find(e.output.begin() + i + 1, e.output.end(), l) != e.output.end())
        throw GafError("equation '" + equation + "': output label '" + einsum_label_name(l) + "' repeated");
      if (std::find(e.labels.begin(), e.labels.end(), l) == e.labels.end())
        throw GafError("equation '" + equation + "': output label '" + einsum_label_name(l) +
                       "' is in no operand");
    }
  } else {
    // Implicit: the ellipsis axes, then the letters used exactly once, alphabetically.
    for (int j = 0; j < ellipsis_rank; ++j) e.output.push_back(kEllipsis + j);
    std::map<int, int> uses;
    for (const auto& axes : e.inputs)
      for (int l : axes)
        if (l < kEllipsis) ++uses[l];
    for (const auto& [l, n] : uses)
      if (n == 1) e.output.push_back(l);
  }
  for (int l : e.output) note(l);
  return e;
}

std::vector<int64_t> EinsumEquation::extents(const std::vector<Shape>& shapes) const {
  std::vector<int64_t> ext(labels.size(), -1);
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t d = 0; d < inputs[i].size(); ++d) {
      const int l = inputs[i][d];
      int64_t& x = ext[index_of(l)];
      const int64_t n = shapes[i][d];
      if (x < 0 || x == n) {
        x = n;
      } else if (l >= kEllipsis && (x == 1 || n == 1)) {
        x = std::max(x, n);
      } else {
        throw GafError("label '" + einsum_label_name(l) + "' has extent " + std::to_string(x) + " and " +
                       std::to_string(n));
      }
    }
  return ext;
}

Shape EinsumEquation::output_shape(const std::vector<Shape>& shapes) const {
  const std::vector<int64_t> ext = extents(shapes);
  Shape out;
  for (int l : output) out.push_back(ext[index_of(l)]);
  return out;
}

std::vector<int> EinsumEquation::contracted() const {
  std::vector<int> c;
  for (int l : labels)
    if (!in_output(l)) c.push_back(l);
  return c;
}

bool EinsumEquation::in_output(int label) const {
  return std::find(output.begin(), output.end(), label) != output.end();
}

int EinsumEquation::index_of(int label) const {
  return static_cast<int>(std::find(labels.begin(), labels.end(), label) - labels.begin());
}

}  // namespace gaf
