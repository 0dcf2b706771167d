// The memory budget: the most bytes the process may hold in tensor storage at once (default: the
// machine's RAM; the CLI's --max-memory sets it). A model is refused before its weights are
// allocated when their declared sizes already exceed it, and every tensor allocation is counted
// against it, so a hostile or mistaken size ends in a one-line GafError instead of the kernel's
// out-of-memory killer or a machine swapping for minutes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace gaf {

// Physical memory of this machine in bytes (sysconf), 0 if unknown.
int64_t physical_memory_bytes();

// 0 restores the default (physical memory).
void set_memory_budget(int64_t bytes);
int64_t memory_budget();
// Bytes currently held by tensors allocated through allocate_tensor_storage.
int64_t tensor_bytes_live();

// Throws GafError "<what> needs N MB, more than the memory budget of M MB (...)" when `bytes`
// more than what is live would not fit.
void check_memory_budget(int64_t bytes, const std::string& what);

// `bytes` of 64-byte aligned, uninitialised storage counted against the budget until freed.
// `what` names the allocation in errors (e.g. "float32[8,128]"); callers add the tensor.
std::shared_ptr<uint8_t> allocate_tensor_storage(int64_t bytes, const std::string& what);

// "512M", "8G", "1.5G", "1000000" (bytes; K/M/G/T are powers of 1024). GafError naming `flag`.
int64_t parse_byte_count(const std::string& text, const std::string& flag);

}  // namespace gaf
