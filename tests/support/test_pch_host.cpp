// The target that compiles tests/support/test_pch.h once for every test binary
// (tests/CMakeLists.txt, ADDSIM_TEST_PCH). It defines no tests; GoogleTest's main links it.
