#pragma once
/// NumPy .npy files (format version 1.0, little-endian float64 '<f8', C order), so that a
/// trajectory loads in one line: numpy.load("trajectory.npy").

#include <cstddef>
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

/// Reads a 2-D '<f8' C-order .npy file written by write_npy (or numpy.save).
/// Throws InputError naming the file if it is missing or not such an array.
NpyArray read_npy(const std::filesystem::path& file);

}  // namespace addsim
