# Seconds of the longest tests on an otherwise idle 2-core machine (docs/testing.md, "Test
# order"), read by CTest: "<test name> <Release s> <sanitized s>". Sanitized: the CI runs of
# docs/fuzzing.md and the reduced sizes of docs/testing.md; Release: a run of 2026-11-27 under
# a load of 12, divided by 8.6 (its wall time over the idle CI run's, fuzz smoke runs aside).
# python_pytest (python/CMakeLists.txt, read by CTest after this file) has its own COST.
# Parameterised tests are left out: CTest names them with their parameter bytes and spaces.
# A test missing here keeps COST 0 on a fresh machine (CTest starts it after these); a name
# that no longer exists is ignored. Only the order depends on these numbers, so they need
# updating only when a test becomes one of the longest.
set(addsim_test_costs
  "fuzz_smoke_scene 32 0"
  "fuzz_smoke_task 32 0"
  "fuzz_smoke_msh 32 0"
  "fuzz_smoke_tetgen 32 0"
  "fuzz_smoke_obj 32 0"
  "fuzz_smoke_markers 32 0"
  "GmshGenerators.ThreeToriAreIdenticalInEveryProcess 7 15"
  "viewer_browser 6 15"
  "BunnyThrowGradient.AdjointGradientOfThePoseTaskMatchesDirectAndFiniteDifferences 5 34"
  "GradientCli.GradcheckBallToTargetSkipsContactEventStraddlingSteps 3 26"
  "TrajoptTasks.ShortSoftFeetWalkByGaussNewtonReachesItsTarget 3 10"
  "BadInputs.EveryCaseIsAOneLineInputErrorNamingTheFile 3 11"
  "OptimizeCli.ResumesARunKilledMidway 2 10"
  "HybridGradients.RigidCubeReleasedCornersWithSmoothedNormalPenalty 2 13"
  "HybridGradients.RigidCubeSlidesThenSticksOnIncline 2 37"
  "TrajoptTasks.SheetGaussNewtonFirstFlipReachesItsTarget 2 33"
  "TrajoptTasks.SheetFirstFlipMovesTheCornersToTheirTargets 2 33"
  "BunnyThrow.HitsFloorThenWallAndIsPushedBackWithoutInversion 2 22"
  "ThrowTasks.BallViaWallStartsAtTheGridsBestThrow 1 40"
  "ThrowTasks.BallToLineStartsWithTheStoppingBackSpin 1 27"
  "ThrowTasks.BallToTargetGnStartsAtTheShippedThrowOnTheSmoothedProblem 1 27"
  "SmoothedContactGradients.SoftBallThrowAllPenaltyModels 1 33"
  "TimeGrid.EveryStartupDifferentiatesExactly 1 23"
  "StepLinearization.HistoryProductsMatchMatricesWithStickRows 1 20"
  "GradientCli.TrackedBoundaryMeanGradcheck 1 19"
  "BallToPoint.GaussNewtonReachesTheTargetOverABounceFromStartsAround 1 16"
  "HybridGradients.SoftBallThrow 1 16"
  "DirectJacobian.EqualsTheSingleParameterPassOnEveryScene 1 16"
)
foreach(row IN LISTS addsim_test_costs)
  string(REPLACE " " ";" row "${row}")
  list(GET row 0 name)
  list(GET row ${ADDSIM_COST_COLUMN} cost)
  if(cost GREATER 0)
    set_tests_properties("${name}" PROPERTIES COST ${cost})
  endif()
endforeach()
