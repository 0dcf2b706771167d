#include "fusion/ir/graph.h"

#include <functional>
#include <set>
#include <sstream>

namespace gaf {

std::string Dim::str() const {
  if (!symbol.empty() && known()) return symbol + "=" + std::to_string(value);
  if (!symbol.empty()) return symbol;
  if (known()) return std::to_string(value);
  return "?";
}

TensorType::TensorType(DType t, const Shape& s) : dtype(t) {
  for (int64_t d : s) dims.emplace_back(d);
}

bool TensorType::is_static() const {
  if (!rank_known) return false;
  for (const Dim& d : dims)
    if (!d.known()) return false;
  return true;
}

Shape TensorType::shape() const {
  if (!is_static()) throw GafError("shape " + str() + " is not static");
  Shape s;
  for (const Dim& d : dims) s.push_back(d.value);
  return s;
}

SymShape Value::sym_shape() const {
  if (!sym_dims.empty()) return sym_dims;
  SymShape s;
  for (int64_t d : type.shape()) s.push_back(SymExpr::constant(d));
  return s;
}

std::string TensorType::str() const {
  std::string s = std::string(dtype_name(dtype));
  if (!rank_known) return s + "[?rank]";
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + dims[i].str();
  return s + "]";
}

// ---- Attributes -------------------------------------------------------------------------------

template <typename T>
static const T* attr_as(const std::map<std::string, AttrValue>& m, const std::string& name) {
  auto it = m.find(name);
  if (it == m.end()) return nullptr;
  const T* p = std::get_if<T>(&it->second);
  if (!p) throw GafError("attribute '" + name + "' has an unexpected type");
  return p;
}

int64_t Attributes::get_int(const std::string& name, int64_t dflt) const {
  const int64_t* p = attr_as<int64_t>(values_, name);
  return p ? *p : dflt;
}
float Attributes::get_float(const std::string& name, float dflt) const {
  auto it = values_.find(name);
  if (it == values_.end()) return dflt;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  const float* p = attr_as<float>(values_, name);
  return *p;
}
std::string Attributes::get_string(const std::string& name, const std::string& dflt) const {
  const std::string* p = attr_as<std::string>(values_, name);
  return p ? *p : dflt;
}
std::vector<int64_t> Attributes::get_ints(const std::string& name, const std::vector<int64_t>& dflt) const {
  const auto* p = attr_as<std::vector<int64_t>>(values_, name);
  return p ? *p : dflt;
}
std::vector<float> Attributes::get_floats(const std::string& name, const std::vector<float>& dflt) const {
  const auto* p = attr_as<std::vector<float>>(values_, name);
  return p ? *p : dflt;
}
const Tensor* Attributes::get_tensor(const std::string& name) const { return attr_as<Tensor>(values_, name); }

std::string Attributes::fingerprint() const {
  std::ostringstream os;
  os.precision(9);
  for (const auto& [k, v] : values_) {
    os << k << '=';
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, Tensor>) {
            os << "tensor(" << dtype_name(x.dtype()) << shape_str(x.shape()) << ':';
            const auto* b = static_cast<const unsigned char*>(x.raw());
            std::hash<std::string> h;
            os << h(std::string(reinterpret_cast<const char*>(b), x.nbytes())) << ')';
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<float>> ||
                               std::is_same_v<T, std::vector<std::string>>) {
            os << '[';
            for (const auto& e : x) os << e << ',';
            os << ']';
          } else {
            os << x;
          }
        },
        v);
    os << ';';
  }
  return os.str();
}

// ---- Graph ------------------------------------------------------------------------------------

Value& Graph::add_value(const std::string& name, TensorType type) {
  if (name.empty()) throw GafError("graph '" + this->name + "': a value has an empty name");
  auto [it, inserted] = values_.try_emplace(name);
  if (!inserted) throw GafError("graph '" + this->name + "': duplicate value name '" + name + "'");
  it->second.name = name;
  it->second.type = std::move(type);
  return it->second;
}

Value& Graph::add_initializer(const std::string& name, Tensor t) {
  Value& v = add_value(name, TensorType(t.dtype(), t.shape()));
  v.constant = std::move(t);
  return v;
}

Value& Graph::value(const std::string& name) {
  auto it = values_.find(name);
  if (it == values_.end()) throw GafError("graph '" + this->name + "': no value named '" + name + "'");
  return it->second;
}
const Value& Graph::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw GafError("graph '" + this->name + "': no value named '" + name + "'");
  return it->second;
}

bool Graph::is_constant(const std::string& name) const { return constant(name) != nullptr; }

const Tensor* Graph::constant(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() && it->second.constant ? &*it->second.constant : nullptr;
}

Node& Graph::add_node(Node n) {
  if (n.name.empty()) n.name = fresh_name(n.op_type);
  if (node_names().count(n.name)) throw GafError("node '" + n.name + "': duplicate node name");
  node_names_.insert(n.name);
  nodes_.push_back(std::move(n));
  int idx = static_cast<int>(nodes_.size()) - 1;
  for (const std::string& o : nodes_.back().outputs)
    if (!o.empty() && has_value(o)) values_[o].producer = idx;
  return nodes_.back();
}

void Graph::set_nodes(std::vector<Node> nodes) {
  nodes_ = std::move(nodes);
  names_stale_ = true;
  recompute_producers();
}

const std::unordered_set<std::string>& Graph::node_names() {
  if (names_stale_) {
    node_names_.clear();
    for (const Node& m : nodes_) node_names_.insert(m.name);
    names_stale_ = false;
  }
  return node_names_;
}

void Graph::recompute_producers() {
  for (auto& [_, v] : values_) v.producer = -1;
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (const std::string& o : nodes_[i].outputs)
      if (!o.empty() && has_value(o)) values_[o].producer = static_cast<int>(i);
}

std::string Graph::fresh_name(const std::string& prefix) {
  int& c = fresh_counter_[prefix];
  const std::unordered_set<std::string>& taken = node_names();
  std::string n;
  do {
    n = prefix + "_" + std::to_string(c++);
  } while (has_value(n) || taken.count(n));
  return n;
}

void Graph::rename_value(const std::string& from, const std::string& to) {
  if (has_value(to)) throw GafError("cannot rename '" + from + "' to '" + to + "': name in use");
  Value v = value(from);
  values_.erase(from);
  v.name = to;
  values_[to] = std::move(v);
  for (Node& n : nodes_) {
    for (std::string& i : n.inputs)
      if (i == from) i = to;
    for (std::string& o : n.outputs)
      if (o == from) o = to;
  }
  for (std::string& i : inputs_)
    if (i == from) i = to;
  for (std::string& o : outputs_)
    if (o == from) o = to;
}

std::vector<int> Graph::topological_order() const {
  std::map<std::string, int> producer;
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (const std::string& o : nodes_[i].outputs)
      if (!o.empty()) producer[o] = static_cast<int>(i);
  std::vector<int> state(nodes_.size(), 0), order;  // 0 new, 1 visiting, 2 done
  std::function<void(int)> visit = [&](int i) {
    if (state[i] == 2) return;
    if (state[i] == 1)
      throw GafError("node '" + nodes_[i].name + "' (" + nodes_[i].op_type +
                     "): the graph has a cycle through this node");
    state[i] = 1;
    for (const std::string& in : nodes_[i].inputs) {
      auto it = producer.find(in);
      if (!in.empty() && it != producer.end()) visit(it->second);
    }
    state[i] = 2;
    order.push_back(i);
  };
  for (size_t i = 0; i < nodes_.size(); ++i) visit(static_cast<int>(i));
  return order;
}

void Graph::validate() const {
  std::set<std::string> node_names;
  std::map<std::string, std::string> produced_by;
  for (const std::string& in : inputs_) {
    if (!has_value(in)) throw GafError("graph input '" + in + "' has no value");
    produced_by[in] = "graph input";
  }
  for (const auto& [n, v] : values_)
    if (v.constant) produced_by[n] = "initializer";
  for (const Node& n : nodes_) {
    if (!node_names.insert(n.name).second) throw GafError("node '" + n.name + "': duplicate node name");
    if (n.op_type.empty()) throw GafError("node '" + n.name + "': empty op type");
    for (const std::string& o : n.outputs) {
      if (o.empty()) continue;
      if (!has_value(o)) throw GafError("node '" + n.name + "': output '" + o + "' has no value");
      auto [it, ok] = produced_by.emplace(o, "node '" + n.name + "'");
      if (!ok) throw GafError("node '" + n.name + "': output '" + o + "' is also produced by " + it->second);
    }
  }
  for (const Node& n : nodes_)
    for (const std::string& in : n.inputs)
      if (!in.empty() && !produced_by.count(in))
        throw GafError("node '" + n.name + "' (" + n.op_type + "): input '" + in +
                       "' is dangling (no graph input, initializer or node produces it)");
  for (const std::string& o : outputs_)
    if (!produced_by.count(o)) throw GafError("graph output '" + o + "' is dangling (nothing produces it)");
  topological_order();  // throws on a cycle
}

std::string Graph::dump() const {
  std::ostringstream os;
  os << "graph " << name << " {\n";
  for (const std::string& in : inputs_) os << "  input  %" << in << " : " << value(in).type.str() << "\n";
  int nconst = 0;
  for (const auto& [_, v] : values_) nconst += v.constant ? 1 : 0;
  os << "  (" << nconst << " initializers)\n";
  for (int i : topological_order()) {
    const Node& n = nodes_[i];
    os << "  ";
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      os << (k ? ", " : "") << "%" << n.outputs[k];
      if (has_value(n.outputs[k])) os << ":" << value(n.outputs[k]).type.str();
    }
    os << " = " << n.op_type << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k)
      os << (k ? ", " : "") << (n.inputs[k].empty() ? "_" : "%" + n.inputs[k]);
    os << ")";
    std::string attrs = n.attrs.fingerprint();
    if (!attrs.empty()) os << " {" << attrs << "}";
    os << "  # " << n.name << "\n";
  }
  for (const std::string& o : outputs_) os << "  output %" << o << "\n";
  os << "}\n";
  return os.str();
}

void Graph::bind_dims(const std::map<std::string, int64_t>& bindings) {
  for (auto& [name, v] : values_)
    for (Dim& d : v.type.dims)
      if (!d.symbol.empty()) {
        auto it = bindings.find(d.symbol);
        if (it != bindings.end()) d.value = it->second;
      }
}

std::vector<std::string> Graph::unbound_symbols() const {
  std::set<std::string> s;
  for (const std::string& in : inputs_)
    for (const Dim& d : value(in).type.dims)
      if (!d.known() && !d.symbol.empty()) s.insert(d.symbol);
  return {s.begin(), s.end()};
}

}  // namespace gaf
