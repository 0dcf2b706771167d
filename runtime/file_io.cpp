#include "runtime/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "runtime/tensor.h"

namespace gaf {

namespace fs = std::filesystem;

namespace {

std::string os_error() { return std::strerror(errno); }

// Writes all of `data` to fd, retrying short writes; false on an error (errno set).
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

RegularFile::RegularFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) throw GafError(path + ": cannot open " + what + ": " + os_error());
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd_);
    fd_ = -1;
    const bool vowel = !what.empty() && std::string("aeiou").find(what[0]) != std::string::npos;
    throw GafError(path + ": " + (dir ? "is a directory" : "is not a regular file") + ", expected " +
                   (vowel ? "an " : "a ") + what);
  }
  size_ = st.st_size;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string RegularFile::read(int64_t offset, int64_t length) const {
  std::string bytes;
  if (length > 0 && length <= size_) bytes.resize(static_cast<size_t>(length));
  read_into(offset, length, bytes.data());
  return bytes;
}

void RegularFile::read_into(int64_t offset, int64_t length, void* dst) const {
  if (offset < 0 || length < 0 || offset > size_ || length > size_ - offset)
    throw GafError(path_ + ": range [" + std::to_string(offset) + ", +" + std::to_string(length) +
                   " bytes) is outside the " + what_ + " (" + std::to_string(size_) + " bytes)");
  char* out = static_cast<char*>(dst);
  int64_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(fd_, out + done, static_cast<size_t>(length - done), offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw GafError(path_ + ": cannot read " + what_ + ": " + os_error());
    if (n == 0) throw GafError(path_ + ": " + what_ + " ended early (changed while reading?)");
    done += n;
  }
}

std::string read_regular_file(const std::string& path, const std::string& what, int64_t max_bytes) {
  RegularFile f(path, what);
  if (f.size() > max_bytes)
    throw GafError(path + ": " + what + " of " + std::to_string(f.size()) + " bytes is larger than " +
                   std::to_string(max_bytes) + " bytes");
  return f.read_all();
}

void write_file_atomically(const std::string& path, const std::vector<std::string_view>& chunks) {
  fs::path dest(path);
  fs::path dir = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + dest.filename().string() + ".XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw GafError(path + ": cannot write file: " + os_error());
  // mkstemp creates 0600; give the file the mode a plain create would (0666 minus the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  bool ok = ::fchmod(fd, 0666 & ~mask) == 0;
  for (std::string_view c : chunks) ok = ok && write_all(fd, c);
  // fsync: a full disk or quota can surface only here (delayed allocation), and the rename must
  // not replace the previous file with one whose data is not on disk yet.
  ok = ok && ::fsync(fd) == 0;
  int err = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmpl.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmpl.c_str());
    throw GafError(path + ": write failed (" + std::strerror(err) + "); the previous file, if any, is unchanged");
  }
}

void check_writable_folder(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw GafError(flag + " '" + dir + "': no such folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw GafError(flag + " '" + dir + "': folder is not writable: " + os_error());
}

void prepare_output_folder(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) throw GafError(flag + " '" + dir + "': cannot create the folder: " + ec.message());
  }
  check_writable_folder(dir, flag);
}

void check_writable_file(const std::string& path, const std::string& flag) {
  fs::path p(path);
  std::error_code ec;
  if (fs::exists(p, ec) && !fs::is_regular_file(p, ec))
    throw GafError(flag + " '" + path + "': exists and is not a regular file");
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  if (!fs::is_directory(dir, ec)) throw GafError(flag + " '" + path + "': folder '" + dir + "' does not exist");
  check_writable_folder(dir, flag);
}

std::vector<std::string> output_npy_paths(const std::string& dir, const std::vector<std::string>& names) {
  std::vector<std::string> paths;
  std::set<std::string> taken;
  for (const std::string& name : names) {
    std::string file = name;
    std::replace_if(
        file.begin(), file.end(), [](char c) { return c == '/' || c == '\\' || c == ':'; }, '_');
    if (file.empty() || file[0] == '.') file = "_" + file;  // never hidden, never ".." or "."
    std::string candidate = file + ".npy";
    for (int k = 2; taken.count(candidate); ++k) candidate = file + "." + std::to_string(k) + ".npy";
    taken.insert(candidate);
    paths.push_back((fs::path(dir) / candidate).string());
  }
  return paths;
}

}  // namespace gaf
