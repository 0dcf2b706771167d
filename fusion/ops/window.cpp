#include "fusion/ops/window.h"

namespace gaf {

bool Window::padded() const {
  for (int d = 0; d < spatial(); ++d)
    if (pad_begin[d] > 0 || pad_end[d] > 0) return true;
  return false;
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

Window window_of(const InferContext& c, const Shape& in, const std::vector<int64_t>& kernel, bool ceil_mode) {
  const size_t n = in.size();
  const Attributes& a = c.attrs();
  Window w;
  w.kernel = kernel;
  c.check(kernel.size() == n, "kernel_shape " + ints_str(kernel) + " has " + std::to_string(kernel.size()) +
                                  " axes, the input " + std::to_string(n) + " spatial axes");
  w.strides = a.get_ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = a.get_ints("dilations", std::vector<int64_t>(n, 1));
  c.check(w.strides.size() == n, "strides " + ints_str(w.strides) + " must have " + std::to_string(n) + " values");
  c.check(w.dilations.size() == n,
          "dilations " + ints_str(w.dilations) + " must have " + std::to_string(n) + " values");
  for (size_t d = 0; d < n; ++d) {
    c.check(kernel[d] >= 1, "kernel_shape " + ints_str(kernel) + " has an empty axis");
    c.check(w.strides[d] >= 1, "strides " + ints_str(w.strides) + " must be positive");
    c.check(w.dilations[d] >= 1, "dilations " + ints_str(w.dilations) + " must be positive");
  }
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  w.pad_begin.assign(n, 0);
  w.pad_end.assign(n, 0);
  w.out.assign(n, 0);
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < n; ++d) {
      w.out[d] = (in[d] + w.strides[d] - 1) / w.strides[d];
      const int64_t span = w.dilations[d] * (kernel[d] - 1) + 1;
      const int64_t total = std::max<int64_t>(0, (w.out[d] - 1) * w.strides[d] + span - in[d]);
      w.pad_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[d] = total - w.pad_begin[d];
    }
    return w;
  }
  c.check(auto_pad == "NOTSET" || auto_pad == "VALID",
          "unsupported attribute auto_pad=" + auto_pad + " (NOTSET, VALID, SAME_UPPER or SAME_LOWER)");
  if (auto_pad == "NOTSET") {
    const std::vector<int64_t> pads = a.get_ints("pads", std::vector<int64_t>(2 * n, 0));
    c.check(pads.size() == 2 * n, "pads " + ints_str(pads) + " must have " + std::to_string(2 * n) + " values");
    for (size_t d = 0; d < n; ++d) {
      c.check(pads[d] >= 0 && pads[n + d] >= 0, "pads " + ints_str(pads) + " must not be negative");
      w.pad_begin[d] = pads[d];
      w.pad_end[d] = pads[n + d];
    }
  }
  for (size_t d = 0; d < n; ++d) {
    const int64_t span = w.dilations[d] * (kernel[d] - 1) + 1;
    const int64_t room = in[d] + w.pad_begin[d] + w.pad_end[d] - span;
    c.check(room >= 0, "the window (kernel_shape " + ints_str(kernel) + ", dilations " + ints_str(w.dilations) +
                           ") is larger than the padded input " + shape_str(in));
    w.out[d] = (ceil_mode ? room + w.strides[d] - 1 : room) / w.strides[d] + 1;
    // ceil_mode: a last window starting in the end padding reads nothing of the input.
    if (ceil_mode && (w.out[d] - 1) * w.strides[d] >= in[d] + w.pad_begin[d]) --w.out[d];
  }
  return w;
}

}  // namespace gaf
