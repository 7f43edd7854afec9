#include "addsim/io/npy.h"

#include <algorithm>
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

// The header of a (rows × cols) '<f8' array, padded with spaces to `size` bytes or to the
// next multiple of kAlign, whichever is larger.
std::string npy_header(std::size_t rows, std::size_t cols, std::size_t size) {
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                     std::to_string(cols) + "), }";
  // magic (6) + version (2) + header length (2) + dict + padding + '\n'.
  const std::size_t unpadded = kMagicSize + 2 + 2 + dict.size() + 1;
  const std::size_t total = std::max(size, unpadded + (kAlign - unpadded % kAlign) % kAlign);
  dict.append(total - unpadded, ' ');
  dict += '\n';
  std::string head(kMagic, kMagicSize);
  head += '\x01';
  head += '\x00';
  const std::uint16_t len = static_cast<std::uint16_t>(dict.size());
  head += static_cast<char>(len & 0xff);
  head += static_cast<char>(len >> 8);
  return head + dict;
}
// Size of a streamed header: the longest dict ("shape": two 20-digit numbers) fits.
constexpr std::size_t kStreamHeaderSize = 2 * kAlign;
}  // namespace

NpyRowWriter::NpyRowWriter(const std::filesystem::path& file, std::size_t cols) : file_(file), cols_(cols) {
  f_ = std::fopen(file.c_str(), "wb");
  if (!f_) throw InputError(file.string() + ": cannot open for writing");
  flush();
}

NpyRowWriter::~NpyRowWriter() {
  try {
    flush();
  } catch (const InputError&) {
  }
  std::fclose(f_);
}

void NpyRowWriter::flush() {
  const std::string head = npy_header(rows_, cols_, kStreamHeaderSize);
  ADDSIM_CHECK(head.size() == kStreamHeaderSize, "npy header outgrew its fixed size");
  // fseek writes the buffered rows before the header that counts them is written.
  if (std::fseek(f_, 0, SEEK_SET) != 0 || std::fwrite(head.data(), 1, head.size(), f_) != head.size() ||
      std::fseek(f_, 0, SEEK_END) != 0 || std::fflush(f_) != 0)
    throw InputError(file_.string() + ": write failed");
}

void NpyRowWriter::append(const VecX& row) {
  ADDSIM_CHECK(static_cast<std::size_t>(row.size()) == cols_, "npy rows differ in length");
  if (std::fwrite(row.data(), sizeof(double), cols_, f_) != cols_) throw InputError(file_.string() + ": write failed");
  ++rows_;
}

void write_npy(const std::filesystem::path& file, const std::vector<VecX>& rows, std::size_t cols) {
  for (const VecX& r : rows) ADDSIM_CHECK(static_cast<std::size_t>(r.size()) == cols, "npy rows differ in length");
  const std::string head = npy_header(rows.size(), cols, 0);
  std::ofstream out(file, std::ios::binary);
  if (!out) throw InputError(file.string() + ": cannot open for writing");
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
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
