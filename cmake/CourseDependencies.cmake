# Third-party dependencies: all from Debian packages (./course installs them), none vendored.
if(COURSE_HAS_CUDA)
  find_package(CUDAToolkit REQUIRED)  # the toolkit of the nvcc that the top-level file found
endif()
find_package(doctest REQUIRED)           # Debian: doctest-dev
find_package(nlohmann_json 3 REQUIRED)   # Debian: nlohmann-json3-dev
find_package(ZLIB REQUIRED)              # Debian: zlib1g-dev (gzip-compressed IDX files)
find_package(Threads REQUIRED)

# cuDNN 9 lives under the CUDA toolkit on some machines (/usr/local/cuda) and in the system
# paths on others (Debian/Ubuntu packages: /usr/include, /usr/lib/x86_64-linux-gnu). Only looked
# for with CUDA: without it no GPU lab is built.
if(COURSE_HAS_CUDA)
  find_package(CUDNN)
  if(CUDNN_FOUND)
    message(STATUS "cuDNN ${CUDNN_VERSION}: ${CUDNN_LIBRARY} (headers in ${CUDNN_INCLUDE_DIR})")
  else()
    message(STATUS "cuDNN 9 NOT found: the cuDNN lab (05) is left out of this build. "
                   "Install cuDNN 9 (e.g. Debian/Ubuntu package libcudnn9-dev-cuda-13) or pass "
                   "-DCUDNN_ROOT=/path/to/cudnn, then re-run cmake.")
  endif()
endif()
