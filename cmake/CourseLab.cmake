# course_add_lab(): builds one lab's tests against one or more implementations.
#
#   course_add_lab(<lab>                       e.g. lab01_conv2d (= the folder name under
#                                              exercises/ and solutions/)
#     DEVICE cpu|gpu                           gpu labs report "skipped" without a GPU
#     STUDENT_SOURCES <file>...                files the student edits, relative to the lab folder
#     TESTS <file>...                          test sources under grader/labs/<lab>/
#     PROXY_SOURCES <file>...                  test-program side of the calls (grader/rpc/proxy.hpp)
#     WORKER_SOURCES <file>...                 worker side: endpoints (grader/rpc/endpoints.hpp) and,
#                                              for GPU labs, the trusted harness
#     [USES <lab>...]                          earlier labs whose implementation (same variant)
#                                              this lab builds on, e.g. lab04 uses lab02, lab03
#     [LIBRARIES <target>...]                  extra libraries (CUDNN::cudnn, CUDA::cublas, ...)
#     [SANITIZE_TESTS <doctest filter>]        GPU labs: the test cases the grader runs again under
#     [SANITIZE_TOOLS memcheck racecheck ...]  compute-sanitizer (default tool: memcheck)
#     [TIMED_TESTS <doctest filter>])          GPU labs: the test cases that time the GPU (default
#                                              "speed:*"). The grader runs them one lab at a time
#                                              with nothing else running, and the lab's other
#                                              cases in parallel with other labs' (grader/README.md)
#
# Trust boundary: the student's code never runs in the test program. For every variant in
# COURSE_VARIANTS ("name=/path/to/folder", by default exercises= and solutions=) it creates
#   <lab>__<variant>_impl    static library of the student sources, built by the guarded
#                            compiler (time and memory limits, allowed #includes) and checked
#                            for the symbols it may define (its lab's namespace only) and call
#                            (check_symbols.py: an allow-list per lab)
#   <lab>__<variant>_worker  the worker: the student library + the endpoints (+ harness), written
#                            to <build>/labs/<variant>/<lab>.worker, stripped, run sandboxed
#   <lab>__<variant>         the test program: TESTS + the runner + the proxies, no student code,
#                            written to <build>/labs/<variant>/<lab>; it starts its worker
# Shared by all labs and compiled once per build folder: course_lab_main_obj (the runner's main()
# and doctest). Shared by all variants and compiled once: <lab>__tests_obj (tests, the lab's
# identity for the runner: lab_identity.cpp), <lab>__proxies_obj
# and <lab>__endpoints_obj (endpoints, harness); a lab that USES another links that lab's proxies
# and endpoints too.
# CTest tests:
#   solutions.<lab>          must pass
#   exercises.<lab>          the untouched skeleton must FAIL, saying "not implemented"
#
# The golden references in grader/reference/ are header-only and only on the tests' include path;
# the guarded build rejects a student file that includes anything outside its lab folder,
# common/include and the system's headers.

# The runner: main() with doctest's implementation (lab_main.cpp, compiled once per build folder in
# course_lab_main_obj) and the lab's identity (lab_identity.cpp, compiled with each lab's
# definitions COURSE_LAB_NAME, COURSE_LAB_DEVICE_IS_GPU, COURSE_SANITIZE_TESTS).
set(COURSE_LAB_RUNNER "${PROJECT_SOURCE_DIR}/grader/runner/lab_main.cpp")
set(COURSE_LAB_IDENTITY "${PROJECT_SOURCE_DIR}/grader/runner/lab_identity.cpp")
set(COURSE_GUARD_DIR "${PROJECT_SOURCE_DIR}/grader/build_guard")
# The sandbox program the guarded compiler runs every compile of student code in (grader/CMakeLists.txt).
set(COURSE_SANDBOX_PROGRAM "${PROJECT_BINARY_DIR}/grader/course_sandbox")
find_package(Python3 REQUIRED COMPONENTS Interpreter)

# main() and the seccomp filter of every worker: the same two files for every lab and variant,
# compiled once per build folder instead of once per worker (a batch of 60 submissions used to
# compile them 120 times). Objects, not a static library: the linker keeps every object given
# by name, so the filter's .preinit_array entry is always in the worker.
if(NOT TARGET course_worker_main_obj)
  add_library(course_worker_main_obj OBJECT
    ${PROJECT_SOURCE_DIR}/grader/rpc/worker_main.cpp ${PROJECT_SOURCE_DIR}/grader/rpc/worker_seccomp.cpp)
  target_include_directories(course_worker_main_obj PRIVATE "${PROJECT_SOURCE_DIR}/grader/rpc")
  target_link_libraries(course_worker_main_obj PRIVATE course::common course_rpc_frames course_warnings)
  course_worker_code(course_worker_main_obj)
endif()

# main() of every lab's test program (grader/runner/lab_main.cpp): the same for every lab, so
# compiled once here instead of once per lab (8 s each, mostly doctest's implementation).
if(NOT TARGET course_lab_main_obj)
  add_library(course_lab_main_obj OBJECT ${COURSE_LAB_RUNNER})
  target_link_libraries(course_lab_main_obj PRIVATE course::common course_testkit course_rpc course_warnings doctest::doctest)
  target_compile_definitions(course_lab_main_obj PRIVATE
    COURSE_LAB_USES_WORKER=1 COURSE_FIXTURE_DIR="${PROJECT_SOURCE_DIR}/grader/fixtures")
endif()

function(course_add_lab lab)
  cmake_parse_arguments(ARG "" "DEVICE;SANITIZE_TESTS;TIMED_TESTS" "STUDENT_SOURCES;TESTS;PROXY_SOURCES;WORKER_SOURCES;USES;LIBRARIES;SANITIZE_TOOLS" ${ARGN})
  if(ARG_DEVICE STREQUAL "gpu" AND NOT ARG_SANITIZE_TOOLS)
    set(ARG_SANITIZE_TOOLS memcheck)
  endif()
  if(NOT ARG_SANITIZE_TESTS)
    set(ARG_SANITIZE_TESTS "*")
  endif()
  if(ARG_DEVICE STREQUAL "gpu" AND NOT ARG_TIMED_TESTS)
    set(ARG_TIMED_TESTS "speed:*")
  endif()
  if(NOT ARG_DEVICE MATCHES "^(cpu|gpu)$")
    message(FATAL_ERROR "course_add_lab(${lab}): DEVICE must be cpu or gpu")
  endif()
  if(NOT ARG_PROXY_SOURCES OR NOT ARG_WORKER_SOURCES)
    message(FATAL_ERROR "course_add_lab(${lab}): PROXY_SOURCES and WORKER_SOURCES are required: student code "
                        "runs only in the worker")
  endif()
  if(ARG_DEVICE STREQUAL "gpu" AND NOT TARGET course_worker_gpu_obj)
    add_library(course_worker_gpu_obj OBJECT ${PROJECT_SOURCE_DIR}/grader/rpc/worker_gpu_start.cpp)
    target_link_libraries(course_worker_gpu_obj PRIVATE CUDA::cudart_static course_warnings)
  endif()
  string(REGEX MATCH "^lab[0-9]+" lab_namespace "${lab}")
  # What the student's library may call besides the C/C++ runtime and the course library
  # (check_symbols.py --allow): the CUDA runtime in GPU labs, cuDNN and cuBLAS where the lab links them.
  set(symbol_allow "")
  if(ARG_DEVICE STREQUAL "gpu")
    list(APPEND symbol_allow --allow cuda)
  endif()
  if("CUDNN::cudnn" IN_LIST ARG_LIBRARIES)
    list(APPEND symbol_allow --allow cudnn)
  endif()
  if("CUDA::cublas" IN_LIST ARG_LIBRARIES OR "CUDA::cublas_static" IN_LIST ARG_LIBRARIES)
    list(APPEND symbol_allow --allow cublas)
  endif()
  if(COURSE_SANITIZE)  # the course's own ASan/UBSan build of the solutions: its runtime's hooks
    list(APPEND symbol_allow --allow sanitizer)
  endif()
  set_property(GLOBAL APPEND PROPERTY COURSE_LABS ${lab})
  set_property(GLOBAL PROPERTY COURSE_LAB_DEVICE_${lab} ${ARG_DEVICE})
  set_property(GLOBAL PROPERTY COURSE_LAB_SOURCES_${lab} "${ARG_STUDENT_SOURCES}")
  set_property(GLOBAL PROPERTY COURSE_LAB_SANITIZE_TOOLS_${lab} "${ARG_SANITIZE_TOOLS}")
  set_property(GLOBAL PROPERTY COURSE_LAB_TIMED_TESTS_${lab} "${ARG_TIMED_TESTS}")
  set(lab_test_dirs "${PROJECT_SOURCE_DIR}/grader" "${PROJECT_SOURCE_DIR}/grader/labs" "${CMAKE_CURRENT_SOURCE_DIR}")

  # The tests, the runner and the proxies are compiled once and linked into every variant's
  # test program: grading many submissions in one build compiles only each student's own files.
  set(tests_obj ${lab}__tests_obj)
  add_library(${tests_obj} OBJECT ${ARG_TESTS} ${COURSE_LAB_IDENTITY})
  target_include_directories(${tests_obj} PRIVATE "${PROJECT_SOURCE_DIR}/grader/reference" "${PROJECT_SOURCE_DIR}/grader/testkit" ${lab_test_dirs})
  target_link_libraries(${tests_obj} PRIVATE course::common course_testkit course_gpu_speed course_rpc course_warnings doctest::doctest ${ARG_LIBRARIES})
  target_compile_definitions(${tests_obj} PRIVATE
    COURSE_LAB_NAME="${lab}" COURSE_LAB_DEVICE_IS_GPU=$<STREQUAL:${ARG_DEVICE},gpu>
    COURSE_DATA_DIR="${COURSE_DATA_DIR}"
    COURSE_SANITIZE_TESTS="${ARG_SANITIZE_TESTS}")
  set(proxies_obj ${lab}__proxies_obj)
  add_library(${proxies_obj} OBJECT ${ARG_PROXY_SOURCES})
  target_include_directories(${proxies_obj} PRIVATE ${lab_test_dirs})
  target_link_libraries(${proxies_obj} PRIVATE course::common course_rpc course_warnings ${ARG_LIBRARIES})

  # The worker's trusted part: endpoints (and a GPU lab's harness), compiled once.
  set(endpoints_obj ${lab}__endpoints_obj)
  add_library(${endpoints_obj} OBJECT ${ARG_WORKER_SOURCES})
  target_include_directories(${endpoints_obj} PRIVATE ${lab_test_dirs})
  target_link_libraries(${endpoints_obj} PRIVATE course::common course_warnings ${ARG_LIBRARIES})
  course_worker_code(${endpoints_obj})

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
    course_worker_code(${impl})
    # The guarded compiler: time and memory limits, and only the lab folder, common/include and
    # system headers may be included (checked on the compiler's dependency output). The compile
    # itself runs fenced in course_sandbox on staged copies of the lab folder and common/include:
    # nothing else of the course, the build or other submissions is visible to it.
    set(guard "${Python3_EXECUTABLE}" "${COURSE_GUARD_DIR}/guard_compile.py"
        --allow "${lab_dir}" --allow "${PROJECT_SOURCE_DIR}/common/include" --sources "${lab_dir}"
        --sandbox "${COURSE_SANDBOX_PROGRAM}" --)
    set_target_properties(${impl} PROPERTIES CXX_COMPILER_LAUNCHER "${guard}" CUDA_COMPILER_LAUNCHER "${guard}")
    add_dependencies(${impl} course_sandbox)  # the fence exists before any student file is compiled
    # The student's objects (checked every build): they define only their lab's namespace, call
    # only what the lab needs (symbol_allow), and carry no early constructors or raw system calls.
    add_custom_target(${impl}__symbols
      COMMAND "${Python3_EXECUTABLE}" "${COURSE_GUARD_DIR}/check_symbols.py" --namespace ${lab_namespace}
              --lab-dir "${lab_dir}" ${symbol_allow} --trusted "$<TARGET_FILE:course_common>" "$<TARGET_FILE:${impl}>"
      DEPENDS ${impl} course_common VERBATIM)
    add_dependencies(${impl}__symbols ${impl} course_common)
    set(worker_objects "")
    set(proxy_objects "")
    foreach(dep IN LISTS ARG_USES)
      target_link_libraries(${impl} PUBLIC ${dep}__${variant}_impl)
      list(APPEND worker_objects $<TARGET_OBJECTS:${dep}__endpoints_obj>)
      list(APPEND proxy_objects $<TARGET_OBJECTS:${dep}__proxies_obj>)
    endforeach()

    set(worker ${lab}__${variant}_worker)
    # worker_main.cpp and worker_seccomp.cpp (which installs the seccomp filter from .preinit_array,
    # before any student code runs) come compiled once, from course_worker_main_obj (above).
    if(ARG_DEVICE STREQUAL "gpu")
      # A GPU worker reaches the GPU as it starts under compute-sanitizer (worker_gpu_start.cpp).
      list(APPEND worker_objects $<TARGET_OBJECTS:course_worker_gpu_obj>)
    endif()
    add_executable(${worker} $<TARGET_OBJECTS:course_worker_main_obj> $<TARGET_OBJECTS:${endpoints_obj}> ${worker_objects})
    target_link_libraries(${worker} PRIVATE ${impl} course_rpc_frames course_warnings)
    if(ARG_DEVICE STREQUAL "gpu")
      target_link_libraries(${worker} PRIVATE CUDA::cudart_static)
    endif()
    target_link_options(${worker} PRIVATE -s)
    set_target_properties(${worker} PROPERTIES
      OUTPUT_NAME ${lab}.worker
      RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/labs/${variant}"
      CXX_LINKER_LAUNCHER "${Python3_EXECUTABLE};${COURSE_GUARD_DIR}/guard_compile.py;--link-only;--"
      CUDA_LINKER_LAUNCHER "${Python3_EXECUTABLE};${COURSE_GUARD_DIR}/guard_compile.py;--link-only;--")
    add_dependencies(${worker} ${impl}__symbols)

    set(exe ${lab}__${variant})
    add_executable(${exe} $<TARGET_OBJECTS:course_lab_main_obj> $<TARGET_OBJECTS:${tests_obj}> $<TARGET_OBJECTS:${proxies_obj}> ${proxy_objects})
    target_link_libraries(${exe} PRIVATE course_testkit course_gpu_speed course_rpc course::common doctest::doctest ${ARG_LIBRARIES})
    target_link_options(${exe} PRIVATE -s)
    set_target_properties(${exe} PROPERTIES
      OUTPUT_NAME ${lab}
      RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/labs/${variant}")
    add_dependencies(${exe} ${worker})

    if(variant STREQUAL "solutions")
      add_test(NAME solutions.${lab} COMMAND ${exe})
      set_tests_properties(solutions.${lab} PROPERTIES SKIP_RETURN_CODE 77 LABELS "lab;${ARG_DEVICE}")
      if(ARG_DEVICE STREQUAL "gpu")
        set_tests_properties(solutions.${lab} PROPERTIES ${COURSE_GPU_LOCK})
      endif()
    elseif(variant STREQUAL "exercises")
      # The skeleton must fail, and fail for the right reason.
      add_test(NAME exercises.${lab}.fails_not_implemented COMMAND ${exe})
      set_tests_properties(exercises.${lab}.fails_not_implemented PROPERTIES
        WILL_FAIL FALSE PASS_REGULAR_EXPRESSION "not implemented: " SKIP_RETURN_CODE 77
        LABELS "lab;${ARG_DEVICE}")
      if(ARG_DEVICE STREQUAL "gpu")
        set_tests_properties(exercises.${lab}.fails_not_implemented PROPERTIES ${COURSE_GPU_LOCK})
      endif()
    endif()
  endforeach()
endfunction()

# course_add_lab_bench(<name> <lab> <source> [DATA]): a GPU lab's benchmark program, one per
# variant that was built (build/labs/<variant>/<name>), linked with that variant's implementation
# (the student's own program: it calls the student's code in-process, and the grader never runs it).
# The benchmark's source is the same for every variant -- it sees the lab's interface header, never
# the variant's folder -- so it is compiled once (nvcc, seconds per file) into <name>__obj, and only
# the link differs. DATA: the program reads COURSE_DATA_DIR.
function(course_add_lab_bench name lab source)
  cmake_parse_arguments(ARG "DATA" "" "" ${ARGN})
  set(obj ${name}__obj)
  foreach(variant_entry IN LISTS COURSE_VARIANTS)
    string(REPLACE "=" ";" pair "${variant_entry}")
    list(GET pair 0 variant)
    set(impl ${lab}__${variant}_impl)
    if(NOT TARGET ${impl})
      continue()
    endif()
    if(NOT TARGET ${obj})
      add_library(${obj} OBJECT ${source})
      # What the implementation passes on to its users (course::common and the lab's LIBRARIES, the
      # CUDA runtime), named here rather than through a variant's implementation: the object must
      # not wait for, or fail with, one student's build.
      target_link_libraries(${obj} PRIVATE course::common CUDA::cudart_static course_warnings)
      target_include_directories(${obj} PRIVATE "${PROJECT_SOURCE_DIR}/grader/reference" "${PROJECT_SOURCE_DIR}/grader/labs")
      if(ARG_DATA)
        target_compile_definitions(${obj} PRIVATE COURSE_DATA_DIR="${COURSE_DATA_DIR}")
      endif()
    endif()
    add_executable(${name}__${variant} $<TARGET_OBJECTS:${obj}>)
    target_link_libraries(${name}__${variant} PRIVATE ${impl} course::common course_warnings)
    # Only objects: CMake cannot tell the language to link with; the source was CUDA (as before,
    # nvcc links, with the CUDA runtime).
    set_target_properties(${name}__${variant} PROPERTIES LINKER_LANGUAGE CUDA
      OUTPUT_NAME ${name} RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/labs/${variant}")
  endforeach()
endfunction()
