// libFuzzer target: the gzip path of course::read_idx. The input is an IDX file that this
// harness compresses before the reader sees it, so mutations reach the header checks behind the
// streaming decompression (random bytes rarely survive gzip's own checks). Differential check:
// reading the compressed file must give exactly what reading the raw bytes gives.
#include <zlib.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "course/error.hpp"
#include "course/idx.hpp"
#include "fuzz_input.hpp"
#include "idx_invariants.hpp"

namespace {

std::vector<std::uint8_t> gzip(const std::uint8_t* data, std::size_t size) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::vector<std::uint8_t> out(deflateBound(&zs, static_cast<uLong>(size)));
  zs.next_in = const_cast<Bytef*>(data);
  zs.avail_in = static_cast<uInt>(size);
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::optional<course::IdxArray> try_read(const std::string& path) {
  try {
    course::IdxArray a = course::read_idx(path);
    course_fuzz::check_idx(a);
    return a;
  } catch (const course::Error&) {
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> compressed = gzip(data, size);
  const auto from_gzip = try_read(course_fuzz::ScratchFile("idx-gz", compressed.data(), compressed.size()).path());
  // Raw bytes that start with the gzip magic are themselves read as gzip: no common ground.
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) return 0;
  const auto from_raw = try_read(course_fuzz::ScratchFile("idx-raw", data, size).path());
  course_fuzz::require(from_gzip.has_value() == from_raw.has_value(), "gzip and raw accept the same files");
  if (from_gzip)
    course_fuzz::require(from_gzip->dims == from_raw->dims && from_gzip->values == from_raw->values,
                         "gzip and raw read the same values");
  return 0;
}
