# course_add_lab(): builds one lab's tests against one or more implementations.
#
#   course_add_lab(<lab>                       e.g. lab01_conv2d (= the folder name under
#                                              exercises/ and solutions/)
#     DEVICE cpu|gpu                           gpu labs report "skipped" without a GPU
#     STUDENT_SOURCES <file>...                files the student edits, relative to the lab folder
#     TESTS <file>...                          test sources under grader/labs/<lab>/
#     [USES <lab>...]                          earlier labs whose implementation (same variant)
#                                              this lab builds on, e.g. lab04 uses lab02, lab03
#     [LIBRARIES <target>...])                 extra libraries (CUDNN::cudnn, CUDA::cublas, ...)
#
# For every variant in COURSE_VARIANTS ("name=/path/to/folder", by default exercises= and
# solutions=) it creates
#   <lab>__tests_obj         the tests + runner, compiled once for all variants
#   <lab>__<variant>_impl    static library of the student sources (+ the labs it USES)
#   <lab>__<variant>         test executable: TESTS + the grader's runner + the impl library,
#                            written to <build>/labs/<variant>/<lab>
# and registers CTest tests:
#   solutions.<lab>          must pass
#   exercises.<lab>          the untouched skeleton must FAIL, saying "not implemented"
#
# The golden references in grader/reference/ are header-only with internal linkage and are only
# on the tests' include path, so student code can neither call nor replace them.

set(COURSE_LAB_RUNNER "${PROJECT_SOURCE_DIR}/grader/runner/lab_main.cpp")

function(course_add_lab lab)
  cmake_parse_arguments(ARG "" "DEVICE" "STUDENT_SOURCES;TESTS;USES;LIBRARIES" ${ARGN})
  if(NOT ARG_DEVICE MATCHES "^(cpu|gpu)$")
    message(FATAL_ERROR "course_add_lab(${lab}): DEVICE must be cpu or gpu")
  endif()
  set_property(GLOBAL APPEND PROPERTY COURSE_LABS ${lab})
  set_property(GLOBAL PROPERTY COURSE_LAB_DEVICE_${lab} ${ARG_DEVICE})
  set_property(GLOBAL PROPERTY COURSE_LAB_SOURCES_${lab} "${ARG_STUDENT_SOURCES}")

  # The tests and the runner are compiled once and linked into every variant's program: grading
  # many submissions in one build compiles only each student's own files.
  set(tests_obj ${lab}__tests_obj)
  add_library(${tests_obj} OBJECT ${ARG_TESTS} ${COURSE_LAB_RUNNER})
  target_include_directories(${tests_obj} PRIVATE "${PROJECT_SOURCE_DIR}/grader/reference" "${PROJECT_SOURCE_DIR}/grader/testkit")
  target_link_libraries(${tests_obj} PRIVATE course::common course_testkit course_warnings doctest::doctest ${ARG_LIBRARIES})
  target_compile_definitions(${tests_obj} PRIVATE
    COURSE_LAB_NAME="${lab}" COURSE_LAB_DEVICE_IS_GPU=$<STREQUAL:${ARG_DEVICE},gpu>
    COURSE_DATA_DIR="${COURSE_DATA_DIR}" COURSE_FIXTURE_DIR="${PROJECT_SOURCE_DIR}/grader/fixtures")

  foreach(variant_entry IN LISTS COURSE_VARIANTS)
    string(REPLACE "=" ";" pair "${variant_entry}")
    list(GET pair 0 variant)
    list(GET pair 1 root)
    set(impl ${lab}__${variant}_impl)
    set(lab_dir "${root}/${lab}")

    set(sources "")
    set(missing "")
    foreach(src IN LISTS ARG_STUDENT_SOURCES)
      if(EXISTS "${lab_dir}/${src}")
        list(APPEND sources "${lab_dir}/${src}")
      else()
        list(APPEND missing "${lab_dir}/${src}")
      endif()
    endforeach()
    if(missing)
      # Not a configure error: the grader reports the lab as "not built" and grades the others.
      message(WARNING "${lab} (${variant}): missing ${missing}; this lab is not built")
      continue()
    endif()

    add_library(${impl} STATIC ${sources})
    target_include_directories(${impl} PRIVATE "${lab_dir}")
    target_link_libraries(${impl} PUBLIC course::common ${ARG_LIBRARIES} PRIVATE course_warnings)
    foreach(dep IN LISTS ARG_USES)
      target_link_libraries(${impl} PUBLIC ${dep}__${variant}_impl)
    endforeach()

    set(exe ${lab}__${variant})
    add_executable(${exe} $<TARGET_OBJECTS:${tests_obj}>)
    target_link_libraries(${exe} PRIVATE ${impl} course_testkit doctest::doctest)
    set_target_properties(${exe} PROPERTIES
      OUTPUT_NAME ${lab}
      RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/labs/${variant}")

    if(variant STREQUAL "solutions")
      add_test(NAME solutions.${lab} COMMAND ${exe})
      set_tests_properties(solutions.${lab} PROPERTIES SKIP_RETURN_CODE 77 LABELS "lab;${ARG_DEVICE}")
    elseif(variant STREQUAL "exercises")
      # The skeleton must fail, and fail for the right reason.
      add_test(NAME exercises.${lab}.fails_not_implemented COMMAND ${exe})
      set_tests_properties(exercises.${lab}.fails_not_implemented PROPERTIES
        WILL_FAIL FALSE PASS_REGULAR_EXPRESSION "not implemented: " SKIP_RETURN_CODE 77
        LABELS "lab;${ARG_DEVICE}")
    endif()
  endforeach()
endfunction()
