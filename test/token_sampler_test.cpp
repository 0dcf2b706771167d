// runtime/token_sampler.h: greedy is torch.argmax of the last position; sampling is reproducible
// per seed, follows the softmax of logits / temperature, and top-k / top-p cut the tail.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/decode_loop.h"
#include "runtime/token_sampler.h"

namespace gaf {
namespace {

// logits [rows, 2, vocab]: the first position is noise, the last holds `last` (every row alike).
Tensor logits_of(const std::vector<float>& last, int64_t rows = 1) {
  const int64_t v = static_cast<int64_t>(last.size());
  Tensor t(DType::Float32, {rows, 2, v});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < v; ++i) {
      t.data<float>()[(r * 2) * v + i] = 100.0f - static_cast<float>(i);  // never read
      t.data<float>()[(r * 2 + 1) * v + i] = last[i];
    }
  return t;
}

std::vector<int64_t> draws(const Sampling& s, const Tensor& logits, int n) {
  TokenSampler sampler(s);
  std::vector<int64_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(sampler.next(logits).data<int64_t>()[0]);
  return ids;
}

TEST(TokenSampler, GreedyIsTheFirstLargestOfTheLastPosition) {
  const Tensor l = logits_of({0.5f, 2.0f, -1.0f, 2.0f}, 3);
  Tensor ids = TokenSampler(Sampling{}).next(l);
  ASSERT_EQ(ids.shape(), (Shape{3, 1}));
  for (int r = 0; r < 3; ++r) EXPECT_EQ(ids.data<int64_t>()[r], 1);
  EXPECT_EQ(last_position_argmax(l).data<int64_t>()[0], 1);
}

TEST(TokenSampler, SameSeedSameTokensOtherSeedOthers) {
  const Tensor l = logits_of({0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f});
  Sampling s;
  s.temperature = 1.0;
  s.seed = 7;
  EXPECT_EQ(draws(s, l, 64), draws(s, l, 64));
  Sampling other = s;
  other.seed = 8;
  EXPECT_NE(draws(s, l, 64), draws(other, l, 64));
}

// Two tokens with probabilities 1/4 and 3/4 at temperature 1 (logits 0 and ln 3); at temperature
// 2 they become 1/(1+sqrt 3) and sqrt 3/(1+sqrt 3). 20000 draws: the share of token 1 within
// 0.015 (5 standard deviations is 0.0153 at p = 0.75).
TEST(TokenSampler, FollowsTheSoftmaxOfLogitsOverTemperature) {
  const Tensor l = logits_of({0.0f, static_cast<float>(std::log(3.0))});
  for (double temperature : {1.0, 2.0}) {
    Sampling s;
    s.temperature = temperature;
    s.seed = 1;
    int ones = 0;
    const int n = 20000;
    for (int64_t id : draws(s, l, n)) ones += id == 1;
    const double want = temperature == 1.0 ? 0.75 : std::sqrt(3.0) / (1 + std::sqrt(3.0));
    EXPECT_NEAR(static_cast<double>(ones) / n, want, 0.015) << "temperature " << temperature;
  }
}

TEST(TokenSampler, TopKAndTopPCutTheTail) {
  // Probabilities at temperature 1: about 0.64, 0.24, 0.09, 0.03.
  const Tensor l = logits_of({3.0f, 2.0f, 1.0f, 0.0f});
  Sampling s;
  s.temperature = 1.0;
  s.top_k = 2;
  for (int64_t id : draws(s, l, 2000)) EXPECT_LT(id, 2);
  s.top_k = 1;
  for (int64_t id : draws(s, l, 200)) EXPECT_EQ(id, 0);
  s.top_k = 0;
  s.top_p = 0.5;  // the first token alone reaches 0.5
  for (int64_t id : draws(s, l, 200)) EXPECT_EQ(id, 0);
  s.top_p = 0.8;  // the first two reach 0.88
  bool second = false;
  for (int64_t id : draws(s, l, 2000)) {
    EXPECT_LT(id, 2);
    second = second || id == 1;
  }
  EXPECT_TRUE(second);
}

TEST(TokenSampler, RefusesSettingsOutOfRangeAndBadLogits) {
  Sampling s;
  s.temperature = -1;
  EXPECT_THROW(TokenSampler{s}, GafError);
  s = Sampling{};
  s.top_p = 0;
  EXPECT_THROW(TokenSampler{s}, GafError);
  s = Sampling{};
  s.top_k = -2;
  EXPECT_THROW(TokenSampler{s}, GafError);
  EXPECT_THROW(TokenSampler(Sampling{}).next(Tensor(DType::Float32, {1, 4})), GafError);
  EXPECT_THROW(TokenSampler(Sampling{}).next(Tensor(DType::Int64, {1, 1, 4})), GafError);
}

}  // namespace
}  // namespace gaf
