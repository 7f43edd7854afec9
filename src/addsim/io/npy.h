#pragma once
/// NumPy .npy files (format version 1.0, little-endian float64 '<f8', C order), so that a
/// trajectory loads in one line: numpy.load("trajectory.npy").

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "addsim/core/types.h"

namespace addsim {

/// A 2-D float64 array read from an .npy file (row-major values).
struct NpyArray {
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<double> values;  ///< rows × cols, row-major
};

/// Writes `rows` (each of length cols) as an (rows.size() × cols) '<f8' array.
/// Throws InputError if the file cannot be written, InternalError on a length mismatch.
void write_npy(const std::filesystem::path& file, const std::vector<VecX>& rows, std::size_t cols);

/// Writes an (rows × cols) '<f8' .npy file row by row, so that the file is a valid array at
/// every moment: the header has a fixed size (128 bytes, room for any shape) and flush()
/// rewrites it with the rows appended so far after they reached the operating system
/// (numpy.load and read_npy ignore bytes past the header's shape, e.g. rows appended since
/// the last flush).
class NpyRowWriter {
 public:
  /// Creates `file` holding a (0 × cols) array. Throws InputError if it cannot be written.
  NpyRowWriter(const std::filesystem::path& file, std::size_t cols);
  /// Flushes (errors ignored: a destructor cannot report them; call flush() to see them).
  ~NpyRowWriter();
  NpyRowWriter(const NpyRowWriter&) = delete;
  NpyRowWriter& operator=(const NpyRowWriter&) = delete;
  /// Appends one row (cols values; buffered). Throws InputError on a write error,
  /// InternalError on a length mismatch.
  void append(const VecX& row);
  /// Writes the buffered rows, then the header counting them. Throws InputError on a write error.
  void flush();
  std::size_t rows() const { return rows_; }

 private:
  std::filesystem::path file_;
  std::size_t cols_;
  std::size_t rows_ = 0;
  std::FILE* f_ = nullptr;
};

/// Reads a 2-D '<f8' C-order .npy file written by write_npy (or numpy.save).
/// Throws InputError naming the file if it is missing or not such an array.
NpyArray read_npy(const std::filesystem::path& file);

}  // namespace addsim
