// Which lab a test program is: read by main() (lab_main.cpp), defined per lab by lab_identity.cpp.
//
// lab_main.cpp holds doctest's implementation and the result channel, about 8 s of compiling; it
// is the same for every lab, so it is compiled once per build folder (course_lab_main_obj) and
// linked into every lab's program. What differs between labs -- its name, whether it needs a GPU,
// the sanitizer subset -- is this small file's business, compiled with the lab's definitions.
#pragma once

namespace course_lab_identity {
extern const char* const kName;           // COURSE_LAB_NAME, e.g. "lab01_conv2d"
extern const bool kIsGpu;                 // COURSE_LAB_DEVICE_IS_GPU: skipped (77) without a GPU
extern const char* const kSanitizeTests;  // COURSE_SANITIZE_TESTS: the doctest filter of a sanitizer run
}  // namespace course_lab_identity
