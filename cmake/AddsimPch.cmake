# Settings of every target that builds or reuses a precompiled header (ADDSIM_TEST_PCH in
# tests/CMakeLists.txt; docs/testing.md, "Build time").
#
# addsim_pch_settings(TARGET):
# - with ccache as the compiler launcher, ccache caches a compile that uses a precompiled
#   header only under its pch_defines and time_macros sloppiness: set here for these targets'
#   compiles alone (the environment of the launcher), not in the user's ccache configuration;
# - with clang, the PCH leaves out the header files' modification times, so a PCH that ccache
#   restores from another checkout of the same sources is accepted (clang rejects it otherwise).
function(addsim_pch_settings target)
  if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache$")
    set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER
                          "env;CCACHE_SLOPPINESS=pch_defines,time_macros;${CMAKE_CXX_COMPILER_LAUNCHER}")
  endif()
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE "SHELL:-Xclang -fno-pch-timestamp")
  endif()
endfunction()
