// Drawing DOT with Graphviz's `dot` program (Debian package graphviz).
#pragma once

#include <string>

namespace gaf {

// The SVG document `dot -Tsvg` makes of `dot_text`. Throws GafError when `dot` is not on PATH
// or fails (its first stderr line is in the message).
std::string render_svg(const std::string& dot_text);

}  // namespace gaf
