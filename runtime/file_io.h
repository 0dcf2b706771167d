// Reading and writing files that users name: only regular files are read (a directory, FIFO or
// device named as a model, tensor or database is an error, never a hang), sizes and ranges are
// checked before anything is allocated, and writes are atomic (a temporary file in the
// destination folder, written, flushed and checked, then renamed: a failure leaves the previous
// file and no temporary). Errors are GafError naming the file. POSIX only, no protobuf.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gaf {

// A regular file opened for reading (O_NONBLOCK, so a FIFO never blocks the open; it is then
// refused by the regular-file check). `what` names the kind of file in errors (".npy file").
class RegularFile {
 public:
  RegularFile(const std::string& path, const std::string& what);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  int64_t size() const { return size_; }
  // `length` bytes at `offset`; GafError unless [offset, offset + length) lies inside the file.
  std::string read(int64_t offset, int64_t length) const;
  // The same into `dst` (at least `length` bytes), e.g. a tensor's storage.
  void read_into(int64_t offset, int64_t length, void* dst) const;
  std::string read_all() const { return read(0, size_); }

 private:
  std::string path_, what_;
  int fd_ = -1;
  int64_t size_ = 0;
};

// The whole file, refused when larger than `max_bytes`.
std::string read_regular_file(const std::string& path, const std::string& what, int64_t max_bytes = INT64_MAX);

// Writes the chunks to `path` atomically (see above). Throws GafError naming the file.
void write_file_atomically(const std::string& path, const std::vector<std::string_view>& chunks);

// Checks before long work that `path` can be written later: its folder exists and is writable,
// and `path` itself, if present, is a regular file. `flag` names the option in errors.
void check_writable_file(const std::string& path, const std::string& flag);
// The same for a folder that files will be written into.
void check_writable_folder(const std::string& dir, const std::string& flag);
// An output folder named by `flag`: created (with its parents) when it does not exist, as most
// tools do, then checked writable. One line naming the flag and folder when it cannot be.
void prepare_output_folder(const std::string& dir, const std::string& flag);

// One file per output in `dir`: NAME.npy with '/', '\\' and ':' replaced by '_'. Names that
// sanitise to the same file are disambiguated with a numeric suffix (NAME.2.npy), so that no
// output silently overwrites another. Paths in the order of `names`.
std::vector<std::string> output_npy_paths(const std::string& dir, const std::vector<std::string>& names);

}  // namespace gaf
