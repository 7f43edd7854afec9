#include "addsim/io/npy.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "addsim/core/error.h"
#include "addsim/core/input_file.h"

namespace addsim {

namespace {
constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;
// The npy header (magic, version, length and dict) is padded to a multiple of 64 bytes.
constexpr std::size_t kAlign = 64;
static_assert(std::endian::native == std::endian::little, "npy output assumes a little-endian host");
}  // namespace

void write_npy(const std::filesystem::path& file, const std::vector<VecX>& rows, std::size_t cols) {
  for (const VecX& r : rows) ADDSIM_CHECK(static_cast<std::size_t>(r.size()) == cols, "npy rows differ in length");
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(rows.size()) + ", " +
                     std::to_string(cols) + "), }";
  // magic (6) + version (2) + header length (2) + dict + padding + '\n'.
  const std::size_t unpadded = kMagicSize + 2 + 2 + dict.size() + 1;
  dict.append((kAlign - unpadded % kAlign) % kAlign, ' ');
  dict += '\n';
  std::ofstream out(file, std::ios::binary);
  if (!out) throw InputError(file.string() + ": cannot open for writing");
  out.write(kMagic, kMagicSize);
  const char version[2] = {1, 0};
  out.write(version, 2);
  const std::uint16_t len = static_cast<std::uint16_t>(dict.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out.write(dict.data(), static_cast<std::streamsize>(dict.size()));
  for (const VecX& r : rows)
    out.write(reinterpret_cast<const char*>(r.data()), static_cast<std::streamsize>(cols * sizeof(double)));
  if (!out) throw InputError(file.string() + ": write failed");
}

NpyArray read_npy(const std::filesystem::path& file) {
  const std::string bytes = read_input_file(file, ".npy file");
  std::istringstream in(bytes);
  char head[10];
  in.read(head, 10);
  if (!in || std::memcmp(head, kMagic, kMagicSize) != 0) throw InputError(file.string() + ": not an .npy file");
  if (head[6] != 1) throw InputError(file.string() + ": only .npy format version 1.0 is supported");
  const std::size_t len = static_cast<unsigned char>(head[8]) | (static_cast<unsigned char>(head[9]) << 8);
  std::string dict(len, '\0');
  in.read(dict.data(), static_cast<std::streamsize>(len));
  static const std::regex kDict(
      R"(\{\s*'descr'\s*:\s*'<f8'\s*,\s*'fortran_order'\s*:\s*False\s*,\s*'shape'\s*:\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)\s*,?\s*\}\s*)");
  std::smatch m;
  if (!in || !std::regex_match(dict, m, kDict))
    throw InputError(file.string() + ": expected a 2-D '<f8' C-order array, header is " + dict);
  NpyArray a;
  // The shape must fit the bytes that follow the header (also guards against overflow).
  const double rows = std::stod(m[1].str()), cols = std::stod(m[2].str());
  const double available = static_cast<double>(bytes.size()) - 10.0 - static_cast<double>(len);
  if (rows * cols * sizeof(double) > available)
    throw InputError(file.string() + ": file is shorter than its header's shape (" + m[1].str() + ", " + m[2].str() +
                     ") says");
  a.rows = static_cast<std::size_t>(rows);
  a.cols = static_cast<std::size_t>(cols);
  a.values.resize(a.rows * a.cols);
  in.read(reinterpret_cast<char*>(a.values.data()), static_cast<std::streamsize>(a.values.size() * sizeof(double)));
  if (!in) throw InputError(file.string() + ": file is shorter than its header says");
  return a;
}

}  // namespace addsim
