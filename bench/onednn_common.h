// Internal to the oneDNN peers: the one CPU engine and stream, and a weights reorder helper.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace gaf::bench {

dnnl::engine& cpu_engine();
dnnl::stream& cpu_stream();

// `plain` (a user memory in a plain layout) reordered into `want` (the primitive's chosen
// layout); returns `plain` itself when the layouts already agree.
dnnl::memory reorder_to(const dnnl::memory& plain, const dnnl::memory::desc& want);

}  // namespace gaf::bench
