// The schedule parameters gaf-tune searches for one group: the legal points of the host
// parameter set (host_params.h) that matter for the group's kind, random sampling and the
// neighbours of a point for local refinement.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "schedules/host_params.h"

namespace gaf::tune {

struct Candidate {
  MatMulParams matmul;
  RowParams rows;
  std::string str() const;  // "vectors=3 rows=8 k_unroll=4 task_elems=16384"
  bool operator==(const Candidate& o) const { return str() == o.str(); }
};

class SearchSpace {
 public:
  // `matmul`: the group has a tiled MatMul (tile and k parameters matter); row-only groups
  // search the parallel task size only. Points keep the accumulator block within
  // `vector_registers` (legal_host_params).
  SearchSpace(bool matmul, int vector_registers);

  Candidate random(std::mt19937& rng) const;
  // Points one step away along one parameter.
  std::vector<Candidate> neighbours(const Candidate& c) const;
  // Number of distinct legal points.
  size_t size() const;
  bool legal(const Candidate& c) const;

 private:
  bool matmul_;
  int registers_;
  std::vector<int> vectors_, rows_, k_unroll_, k_block_;
  std::vector<int64_t> task_elems_, a_block_;
};

}  // namespace gaf::tune
