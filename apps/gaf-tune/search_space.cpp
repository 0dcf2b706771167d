#include "apps/gaf-tune/search_space.h"

#include <algorithm>

#include "schedules/schedule_db.h"

namespace gaf::tune {

std::string Candidate::str() const {
  return "vectors=" + std::to_string(matmul.vectors) + " rows=" + std::to_string(matmul.rows) +
         " k_unroll=" + std::to_string(matmul.k_unroll) + " a_block=" + std::to_string(matmul.a_block_bytes >> 10) +
         "K k_block=" + std::to_string(matmul.k_block) + " task_elems=" + std::to_string(rows.task_elems);
}

SearchSpace::SearchSpace(bool matmul, int vector_registers) : matmul_(matmul), registers_(vector_registers) {
  task_elems_ = {2048, 4096, 8192, 16384, 32768, 65536, 131072};
  if (matmul_) {
    vectors_ = {1, 2, 3, 4, 5, 6};
    for (int r = 1; r <= 16; ++r) rows_.push_back(r);
    k_unroll_ = {1, 2, 4, 8};
    a_block_ = {0, 128 << 10, 256 << 10, 512 << 10, 1024 << 10, 2048 << 10};
    k_block_ = {0, 64, 128, 256, 512, 1024};
  } else {
    MatMulParams d;  // unused by row-only groups: fixed at the defaults
    vectors_ = {d.vectors};
    rows_ = {d.rows};
    k_unroll_ = {d.k_unroll};
    a_block_ = {d.a_block_bytes};
    k_block_ = {d.k_block};
  }
}

bool SearchSpace::legal(const Candidate& c) const {
  if (!matmul_) return legal_host_params(MatMulParams{}, c.rows, 1 << 30);
  return legal_host_params(c.matmul, c.rows, registers_);
}

Candidate SearchSpace::random(std::mt19937& rng) const {
  auto pick = [&](const auto& v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  for (;;) {
    Candidate c;
    c.matmul.vectors = pick(vectors_);
    c.matmul.rows = pick(rows_);
    c.matmul.k_unroll = pick(k_unroll_);
    c.matmul.a_block_bytes = pick(a_block_);
    c.matmul.k_block = pick(k_block_);
    c.rows.task_elems = pick(task_elems_);
    if (legal(c)) return c;
  }
}

namespace {

// The values one step below and above `x` in `v` (v sorted).
template <typename T>
std::vector<T> steps(const std::vector<T>& v, T x) {
  std::vector<T> out;
  auto it = std::find(v.begin(), v.end(), x);
  if (it == v.end()) return v;  // off the grid (e.g. a default of 0): any grid value is a step
  if (it != v.begin()) out.push_back(*(it - 1));
  if (it + 1 != v.end()) out.push_back(*(it + 1));
  return out;
}

}  // namespace

std::vector<Candidate> SearchSpace::neighbours(const Candidate& c) const {
  std::vector<Candidate> out;
  auto add = [&](Candidate n) {
    if (legal(n) && !(n == c) && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  // One step along one parameter: `set` writes the value into a copy of c.
  auto vary = [&](const auto& grid, auto current, auto set) {
    for (auto x : steps(grid, current)) {
      Candidate n = c;
      set(n, x);
      add(n);
    }
  };
  vary(vectors_, c.matmul.vectors, [](Candidate& n, int v) { n.matmul.vectors = v; });
  vary(rows_, c.matmul.rows, [](Candidate& n, int v) { n.matmul.rows = v; });
  vary(k_unroll_, c.matmul.k_unroll, [](Candidate& n, int v) { n.matmul.k_unroll = v; });
  vary(a_block_, c.matmul.a_block_bytes, [](Candidate& n, int64_t v) { n.matmul.a_block_bytes = v; });
  vary(k_block_, c.matmul.k_block, [](Candidate& n, int v) { n.matmul.k_block = v; });
  vary(task_elems_, c.rows.task_elems, [](Candidate& n, int64_t v) { n.rows.task_elems = v; });
  return out;
}

size_t SearchSpace::size() const {
  size_t n = 0;
  for (int v : vectors_)
    for (int r : rows_)
      for (int k : k_unroll_)
        for (int64_t b : a_block_)
          for (int kb : k_block_)
            for (int64_t t : task_elems_) {
              Candidate c;
              c.matmul = MatMulParams{v, r, k, b, kb};
              c.rows.task_elems = t;
              n += legal(c);
            }
  return n;
}

}  // namespace gaf::tune
