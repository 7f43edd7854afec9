#pragma once
/// Guards for user-named inputs: files are read only when they are regular files below a
/// size cap (so `/dev/zero`, a FIFO or a directory fail at once instead of exhausting
/// memory), and allocations whose size the input decides (trajectories, generated and
/// loaded meshes, grids) are estimated first and refused with an InputError that says how
/// much memory they would need.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "addsim/core/error.h"

namespace addsim {

/// Largest input file read (scene, task, mesh, marker data): 1 GiB.
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{1} << 30;

/// "1.5 GiB", "12.0 MiB", "512 bytes".
inline std::string format_bytes(double bytes) {
  char buf[64];
  if (bytes >= 1024.0 * 1024.0 * 1024.0 * 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f TiB", bytes / (1024.0 * 1024.0 * 1024.0 * 1024.0));
  else if (bytes >= 1024.0 * 1024.0 * 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  else if (bytes >= 1024.0 * 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  else if (bytes >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  return buf;
}

/// Checks that a user-named input file can be read: throws InputError "<file>: <reason>" when
/// it does not exist, is a directory or not a regular file (device, FIFO, socket), or is
/// larger than `max_bytes`. `what` names the kind in messages ("scene file").
inline void check_input_file(const std::filesystem::path& file, const std::string& what,
                             std::uintmax_t max_bytes = kMaxInputFileBytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  if (st.type() == fs::file_type::not_found) {
    // Files of the git-ignored data/ folder are made by the install script, not shipped.
    const bool generated = file.filename() == "bunny.obj" && file.parent_path().filename() == "data";
    throw InputError(file.string() + ": no such " + what +
                     (generated ? " (it is made by `bash scripts/install-deps.sh`, which needs node and npm)" : ""));
  }
  if (ec) throw InputError(file.string() + ": cannot access the " + what + ": " + ec.message());
  if (st.type() == fs::file_type::directory) throw InputError(file.string() + ": is a directory, not a " + what);
  if (st.type() != fs::file_type::regular)
    throw InputError(file.string() + ": is not a regular file (a device, pipe or socket cannot be a " + what + ")");
  const std::uintmax_t size = fs::file_size(file, ec);
  if (!ec && size > max_bytes)
    throw InputError(file.string() + ": the " + what + " is larger than the limit of " +
                     format_bytes(static_cast<double>(max_bytes)) + " for input files");
}

/// The whole content of a user-named input file, checked first by check_input_file; also
/// fails if more than `max_bytes` can be read (files whose size the system does not know).
inline std::string read_input_file(const std::filesystem::path& file, const std::string& what,
                                   std::uintmax_t max_bytes = kMaxInputFileBytes) {
  check_input_file(file, what, max_bytes);
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  const std::string too_large = ": the " + what + " is larger than the limit of " +
                                format_bytes(static_cast<double>(max_bytes)) + " for input files";
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string() + ": cannot open the " + what + " for reading");
  // Read in chunks up to the cap: the size reported above may be 0 or stale (/proc files,
  // a file that grows while being read).
  std::string text;
  if (!ec) text.reserve(static_cast<std::size_t>(size));
  char chunk[1 << 16];
  while (in) {
    in.read(chunk, sizeof chunk);
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) throw InputError(file.string() + too_large);
  }
  if (in.bad()) throw InputError(file.string() + ": read error in the " + what);
  return text;
}

/// Parses "123", "64K", "512M", "2G" (powers of 1024); 0 if malformed.
inline std::uint64_t parse_byte_count(const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || !(v > 0.0)) return 0;
  double scale = 1.0;
  if (*end == 'K' || *end == 'k') scale = 1024.0, ++end;
  else if (*end == 'M' || *end == 'm') scale = 1024.0 * 1024.0, ++end;
  else if (*end == 'G' || *end == 'g') scale = 1024.0 * 1024.0 * 1024.0, ++end;
  if (*end != '\0') return 0;
  return static_cast<std::uint64_t>(v * scale);
}

/// Memory an input may make addsim allocate: the environment variable ADDSIM_MEMORY_LIMIT
/// (bytes, or with a K/M/G suffix) if set, else 3/4 of the machine's physical memory.
inline std::uint64_t memory_budget_bytes() {
  if (const char* env = std::getenv("ADDSIM_MEMORY_LIMIT"))
    if (const std::uint64_t v = parse_byte_count(env)) return v;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t{8} << 30;
  return static_cast<std::uint64_t>(pages) / 4 * 3 * static_cast<std::uint64_t>(page);
}

/// Throws InputError "<where>: <what> would need <bytes> of memory, more than the <budget>
/// available to addsim ..." when `bytes` exceeds memory_budget_bytes(). `bytes` is a double
/// so that callers can multiply counts without overflow.
inline void check_memory(double bytes, const std::string& where, const std::string& what) {
  const double budget = static_cast<double>(memory_budget_bytes());
  if (!(bytes <= budget))
    throw InputError(where + ": " + what + " would need " + format_bytes(bytes) + " of memory, more than the " +
                     format_bytes(budget) + " addsim may use on this machine (3/4 of its memory, or ADDSIM_MEMORY_LIMIT)");
}

}  // namespace addsim
