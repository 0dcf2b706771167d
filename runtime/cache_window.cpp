#include "runtime/cache_window.h"

namespace gaf {

CacheWindow bind_cache_window(const std::string& name, DType dtype, const Shape& shape, int axis, int64_t capacity,
                              bool append, const Tensor* past, const Tensor* kept) {
  const int64_t rows = shape[axis], past_rows = past ? past->shape()[axis] : 0;
  if (rows > capacity)
    throw GafError("KV cache '" + name + "': " + std::to_string(rows) + " rows do not fit its " +
                   std::to_string(capacity));
  Shape past_shape = shape;
  past_shape[axis] = past_rows;
  auto fits = [&](const Tensor* t) {
    return t && t->is_window() && t->dtype() == dtype && t->window_axis() == axis && t->capacity() == capacity &&
           t->window_begin() == 0 && t->rank() == static_cast<int>(shape.size()) &&
           t->window(0, past_rows).shape() == past_shape;
  };
  CacheWindow w;
  if (fits(past))
    w.whole = past->window(0, rows);
  else if (fits(kept))
    w.whole = kept->window(0, rows);
  else
    w.whole = Tensor::with_capacity(dtype, shape, axis, capacity);
  if (past && !(past->is_window() && past->same_block(w.whole) && past->window_begin() == 0)) {
    Tensor head = w.whole.window(0, past_rows);
    head.copy_from(*past);
    w.moved_past = head;
  }
  w.written = append ? w.whole.window(past_rows, rows) : w.whole;
  return w;
}

}  // namespace gaf
