#include "apps/gaf/commands.h"

namespace gaf::cli {

void ModelArgs::add_to(CLI::App* app) {
  app->add_option("model", model, "path/to/model.onnx or builtin:bert-base")->required();
  app->add_option("--dim", dims, "bind a symbolic dim, NAME=VALUE (repeatable)");
  app->add_option("--layers", opts.layers, "builtin:bert-base: encoder layers")->capture_default_str();
  app->add_option("--seq", opts.seq, "builtin:bert-base: sequence length")->capture_default_str();
  app->add_option("--batch", opts.batch, "builtin:bert-base: batch size")->capture_default_str();
}

ModelOptions ModelArgs::resolved() const {
  ModelOptions o = opts;
  for (const std::string& d : dims) {
    auto [name, v] = parse_dim_binding(d);
    o.dims[name] = v;
  }
  return o;
}

}  // namespace gaf::cli
