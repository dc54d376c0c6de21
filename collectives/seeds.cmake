# Seed-paper algorithms (issue 7): grid/Min3 allgather (seed 000), Sparbit (001),
# Patarasuk-Yuan ring allreduce (002), Clairvoyant reduce (003). Part of bgl::collectives.
target_sources(bgl_collectives PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/src/wide_area/host_network.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/wide_area/pool_tree.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/wide_area/transfer_model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/wide_area/min3.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/wide_area/grid_baselines.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/arrival_aware/clairvoyant.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/topology_aware/sparbit.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/topology_aware/logical_ring.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/topology_aware/ring_allreduce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/arrival_aware/clairvoyant_reduce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/topology_aware/grid_allgather.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/arrival_aware/arrival.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/arrival_aware/timed_replay.cpp)

if(BGL_BUILD_TESTS)
  add_executable(coll_seeds_tests
    ${CMAKE_CURRENT_LIST_DIR}/tests/grid_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tests/clairvoyant_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tests/sparbit_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tests/ring_allreduce_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tests/arrival_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/tests/timed_replay_test.cpp)
  target_link_libraries(coll_seeds_tests PRIVATE bgl::collectives GTest::gmock GTest::gtest_main)
  gtest_discover_tests(coll_seeds_tests TEST_PREFIX "coll_seeds." DISCOVERY_TIMEOUT 60
                       PROPERTIES TIMEOUT 120 LABELS unit)
endif()
if(BGL_BUILD_TESTS)
  target_include_directories(coll_seeds_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/src ${CMAKE_CURRENT_LIST_DIR}/tests)
endif()
target_link_libraries(bgl_collectives PUBLIC Threads::Threads)
