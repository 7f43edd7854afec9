#include "addsim/io/npy.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "test_util.h"

namespace addsim {
namespace {

std::vector<VecX> sample_rows() {
  std::vector<VecX> rows;
  for (int i = 0; i < 4; ++i) {
    VecX r(5);
    for (int c = 0; c < 5; ++c) r[c] = 0.5 * i - 1.25 * c + 1e-3 * i * c;
    rows.push_back(r);
  }
  return rows;
}

TEST(Npy, WritesAPaddedV1HeaderAndReadsBack) {
  const auto dir = test::fresh_temp_dir("npy");
  const auto file = dir / "a.npy";
  const std::vector<VecX> rows = sample_rows();
  write_npy(file, rows, 5);
  // Header: magic, version 1.0, length; total header size a multiple of 64 ending in '\n'.
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(bytes[6], 1);
  EXPECT_EQ(bytes[7], 0);
  const std::size_t len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + len) % 64, 0u);
  EXPECT_EQ(bytes[10 + len - 1], '\n');
  EXPECT_EQ(bytes.size(), 10 + len + 4 * 5 * sizeof(double));
  EXPECT_NE(bytes.find("'shape': (4, 5)"), std::string::npos);

  const NpyArray a = read_npy(file);
  ASSERT_EQ(a.rows, 4u);
  ASSERT_EQ(a.cols, 5u);
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < 5; ++c) EXPECT_EQ(a.values[i * 5 + c], rows[i][c]);
}

TEST(Npy, NumpyLoadsItWithTheRightShape) {
  if (!std::ifstream(ADDSIM_PYTHON)) GTEST_SKIP() << ADDSIM_PYTHON << " not found";
  const auto dir = test::fresh_temp_dir("numpy");
  const auto file = dir / "a.npy";
  write_npy(file, sample_rows(), 5);
  const std::string cmd = std::string(ADDSIM_PYTHON) +
                          " -c \"import sys\ntry:\n import numpy\nexcept ImportError:\n sys.exit(77)\n"
                          "a = numpy.load(sys.argv[1])\nassert a.shape == (4, 5) and a.dtype == numpy.float64\n"
                          "assert abs(a[3, 4] - (1.5 - 5.0 + 0.012)) < 1e-15\" " +
                          file.string();
  const int rc = std::system(cmd.c_str());
  ASSERT_NE(rc, -1);
  if (WEXITSTATUS(rc) == 77) GTEST_SKIP() << "numpy not installed";
  EXPECT_EQ(WEXITSTATUS(rc), 0);
}

// The streamed writer: after each flush the file is a valid array of the rows so far, both
// for read_npy and numpy (which ignore rows appended since the last flush).
TEST(Npy, RowWriterLeavesAValidArrayAfterEveryFlush) {
  const auto dir = test::fresh_temp_dir("rows");
  const auto file = dir / "s.npy";
  const std::vector<VecX> rows = sample_rows();
  {
    NpyRowWriter w(file, 5);
    EXPECT_EQ(read_npy(file).rows, 0u);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      w.append(rows[i]);
      // Appended, not yet flushed: still the rows of the last flush.
      EXPECT_EQ(read_npy(file).rows, i);
      w.flush();
      const NpyArray a = read_npy(file);
      ASSERT_EQ(a.rows, i + 1);
      EXPECT_EQ(a.cols, 5u);
      EXPECT_EQ(a.values[i * 5 + 4], rows[i][4]);
    }
    w.append(rows[0]);  // flushed by the destructor
  }
  EXPECT_EQ(read_npy(file).rows, rows.size() + 1);
  EXPECT_EQ(std::filesystem::file_size(file), 128u + (rows.size() + 1) * 5 * 8);
  if (!std::ifstream(ADDSIM_PYTHON)) GTEST_SKIP() << ADDSIM_PYTHON << " not found";
  const std::string cmd = std::string(ADDSIM_PYTHON) +
                          " -c \"import sys\ntry:\n import numpy\nexcept ImportError:\n sys.exit(77)\n"
                          "a = numpy.load(sys.argv[1])\nassert a.shape == (5, 5), a.shape\n"
                          "assert a[4, 4] == a[0, 4]\" " +
                          file.string();
  const int rc = std::system(cmd.c_str());
  ASSERT_NE(rc, -1);
  if (WEXITSTATUS(rc) == 77) GTEST_SKIP() << "numpy not installed";
  EXPECT_EQ(WEXITSTATUS(rc), 0);
}

TEST(Npy, ReadingAMissingOrForeignFileIsAnInputError) {
  const auto dir = test::fresh_temp_dir("bad");
  EXPECT_THROW(read_npy(dir / "missing.npy"), InputError);
  std::ofstream(dir / "text.npy") << "hello";
  EXPECT_THROW(read_npy(dir / "text.npy"), InputError);
}

}  // namespace
}  // namespace addsim
