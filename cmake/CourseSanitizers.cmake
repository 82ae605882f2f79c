# COURSE_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer on all C++ code of this build
# (the host compiler's code only: CUDA sources, compiled by nvcc, are left as they are). Any
# undefined behaviour stops the program (-fno-sanitize-recover), so a test cannot pass over it.
#
# The CTest test sanitize.cpu (label "slow", registered in common/CMakeLists.txt) configures such a
# build under the main build tree and runs the CPU tests in it; see cmake/sanitize_cpu.sh.
option(COURSE_SANITIZE "Build C++ code with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
if(COURSE_SANITIZE)
  set(course_sanitizer_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${course_sanitizer_flags}>")
  # A program that links sanitized objects needs the sanitizer runtimes: C++-linked programs get
  # them from the compiler driver; nvcc-linked ones through -Xcompiler.
  add_link_options("$<$<LINK_LANGUAGE:CXX>:${course_sanitizer_flags}>"
                   "$<$<LINK_LANGUAGE:CUDA>:-Xcompiler=-fsanitize=address$<COMMA>undefined>")
  # Code that must behave differently under ASan (it reserves terabytes of address space, so a
  # process limited with RLIMIT_AS cannot start) can test this definition.
  add_compile_definitions(COURSE_SANITIZE=1)
  message(STATUS "COURSE_SANITIZE: C++ code built with -fsanitize=address,undefined")
endif()

# COURSE_SANITIZE_WORKER_OPTIMIZATION (e.g. -O1): an optimisation level for the code that runs
# inside a lab's worker -- the implementations, the endpoints, the worker's main() and the course
# library -- over the build type's. sanitize.cpu builds everything else (the tests, the runner,
# doctest, the proxies) at -O0, which compiles in about 60% of -O1's time and instruments every
# access (-O1 may remove some): the worker's calls keep -O1's speed, so a slow call under ASan stays
# far from the 30 s per-call limit (lab 04's LeNet over the MNIST split). Each target of worker code
# says so where it is created, with course_worker_code(<target>...).
set(COURSE_SANITIZE_WORKER_OPTIMIZATION "" CACHE STRING
    "COURSE_SANITIZE builds: extra compile flags for the code that runs in the workers (e.g. -O1)")
if(COURSE_SANITIZE AND COURSE_SANITIZE_WORKER_OPTIMIZATION)
  message(STATUS "COURSE_SANITIZE: the workers' code compiled with ${COURSE_SANITIZE_WORKER_OPTIMIZATION}")
endif()
function(course_worker_code)
  if(COURSE_SANITIZE AND COURSE_SANITIZE_WORKER_OPTIMIZATION)
    foreach(target IN LISTS ARGN)
      target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${COURSE_SANITIZE_WORKER_OPTIMIZATION}>")
    endforeach()
  endif()
endfunction()
