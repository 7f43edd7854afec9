# Seconds of the longest tests on an otherwise idle 2-core machine (docs/testing.md, "Test
# order"), read by CTest: "<test name> <Release s> <sanitized s>". Sanitized: every test of at
# least 10 s in the CI run of main at b5188d1 (its CTestCostData.txt, docs/fuzzing.md), those
# reduced since then at their measured reduced CPU seconds (docs/testing.md, fourth round), the
# bunny tests at their CPU seconds with the marker grid (fifth round; the three that only load
# the bunny task now take < 1 s and have no row), BallToPoint.StepShrink… at its 39 s scaled by
# its measured -O2 old/new ratio (sixth round: D only where it is used);
# Release: a run of 2026-11-27 under a load of 12, divided by 8.6 (its wall time over the idle
# CI run's, fuzz smoke runs aside), rows added later from that CI run's Release timings.
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
  "BallToPoint.StepShrinkShortensEveryTrialAfterARejection 1 23"
  "HybridGradients.RigidCubeSlidesThenSticksOnIncline 2 36"
  "SmoothedContactGradients.SoftBallThrowAllPenaltyModels 1 32"
  "TrajoptTasks.ShortSoftFeetWalkByGaussNewtonReachesItsTarget 3 31"
  "GradientCli.GradcheckBallToTargetSkipsContactEventStraddlingSteps 3 25"
  "TrajoptTasks.SheetGaussNewtonFirstFlipReachesItsTarget 2 23"
  "TimeGrid.EveryStartupDifferentiatesExactly 1 22"
  "TrajoptTasks.SheetFirstFlipMovesTheCornersToTheirTargets 2 20"
  "StepLinearization.HistoryProductsMatchMatricesWithStickRows 1 20"
  "FemValidation.RotationInvariantViscosityKeepsAngularMomentum 1 19"
  "BunnyThrowGradient.AdjointGradientOfThePoseTaskMatchesDirectAndFiniteDifferences 5 18"
  "GradientCli.TrackedBoundaryMeanGradcheck 1 17"
  "ThrowTasks.BallViaWallStartsAtTheGridsBestThrow 1 16"
  "BallToPoint.GaussNewtonReachesTheTargetOverABounceFromStartsAround 1 15"
  "HybridGradients.SoftBallThrow 1 14"
  "GmshGenerators.ThreeToriAreIdenticalInEveryProcess 7 13"
  "HybridGradients.RigidCubeReleasedCornersWithSmoothedNormalPenalty 2 13"
  "DirectJacobian.EqualsTheSingleParameterPassOnEveryScene 1 13"
  "ThrowTasks.BallToLineStartsWithTheStoppingBackSpin 1 12"
  "viewer_browser 6 11"
  "BunnyThrow.HitsFloorThenWallAndIsPushedBackWithoutInversion 2 11"
  "HybridCone.RigidCornersRestForEveryFrictionInsideTheCone 0 11"
  "ThrowTasks.BallToTargetGnStartsAtTheShippedThrowOnTheSmoothedProblem 1 10"
  "HybridGradients.RigidCubeDeceleratesOnCoulombReleaseAndSticks 0 10"
  "BadInputs.EveryCaseIsAOneLineInputErrorNamingTheFile 3 9"
  "OptimizeCli.ResumesARunKilledMidway 2 9"
  "InitialGuess.InadmissibleExtrapolationFallsBack 0 9"
  "GradientCli.GradcheckContactTolerance 0 8"
  "SmoothedContactGradients.RigidSphereThrow 0 8"
)
foreach(row IN LISTS addsim_test_costs)
  string(REPLACE " " ";" row "${row}")
  list(GET row 0 name)
  list(GET row ${ADDSIM_COST_COLUMN} cost)
  if(cost GREATER 0)
    set_tests_properties("${name}" PROPERTIES COST ${cost})
  endif()
endforeach()
