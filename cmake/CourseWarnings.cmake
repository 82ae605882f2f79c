# Warning flags for project code only (third-party headers come in as SYSTEM includes).
add_library(course_warnings INTERFACE)
target_compile_options(course_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
  # nvcc forwards host-compiler warnings with -Xcompiler; device-side diagnostics are on by default.
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
option(COURSE_WERROR "Treat warnings in project code as errors" OFF)
if(COURSE_WERROR)
  target_compile_options(course_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Werror> $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
endif()
