# Measured seconds of the longest tests (docs/testing.md, "Test order"), read by CTest:
# "<test name> <Release s> <sanitized s>". A test missing here keeps COST 0 on a fresh machine
# (CTest starts it after these); a name that no longer exists is ignored. Only the order
# depends on these numbers, so they need updating only when a test becomes one of the longest.
set(addsim_test_costs
  "fuzz_smoke_scene 32 0"
  "fuzz_smoke_task 32 0"
  "fuzz_smoke_msh 32 0"
  "fuzz_smoke_tetgen 32 0"
  "fuzz_smoke_obj 32 0"
  "fuzz_smoke_markers 32 0"
)
foreach(row IN LISTS addsim_test_costs)
  string(REPLACE " " ";" row "${row}")
  list(GET row 0 name)
  list(GET row ${ADDSIM_COST_COLUMN} cost)
  if(cost GREATER 0)
    set_tests_properties("${name}" PROPERTIES COST ${cost})
  endif()
endforeach()
