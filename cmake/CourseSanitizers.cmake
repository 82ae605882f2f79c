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
