#include "fusion/models/synthetic.h"

#include "fusion/ir/builder.h"

namespace gaf {

Graph elementwise_chain_graph(int n) {
  GraphBuilder b("chain");
  ValueRef x = b.input("x", DType::Float32, {64, 256});
  for (int i = 0; i < n; ++i) x = i % 2 ? b.add(x, b.scalar(0.5f)) : b.relu(x);
  b.output(x, "y");
  return b.finish();
}

Graph fanout_graph(int n) {
  GraphBuilder b("fanout");
  ValueRef x = b.input("x", DType::Float32, {64, 256});
  std::vector<ValueRef> level;
  for (int i = 0; i < n / 2; ++i) level.push_back(b.add(b.relu(x), b.scalar(static_cast<float>(i))));
  while (level.size() > 1) {
    std::vector<ValueRef> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(b.add(level[i], level[i + 1]));
    if (level.size() % 2) next.push_back(level.back());
    level = next;
  }
  b.output(level[0], "y");
  return b.finish();
}

}  // namespace gaf
