#include <doctest/doctest.h>

#include "bounded_capture.hpp"

using course_grader::BoundedCapture;

TEST_SUITE("unit") {

TEST_CASE("capture: short output is kept whole") {
  BoundedCapture c(8, 8);
  c.append("hello ");
  c.append("world");
  CHECK_FALSE(c.truncated());
  CHECK(c.text() == "hello world");
}

TEST_CASE("capture: long output keeps the head and the tail and says how much is missing") {
  BoundedCapture c(4, 6);
  std::string all;
  for (int i = 0; i < 1000; ++i) {
    const std::string piece = std::to_string(i) + ",";
    all += piece;
    c.append(piece);
  }
  CHECK(c.truncated());
  CHECK(c.total_bytes() == all.size());
  const std::string text = c.text();
  CHECK(text.rfind(all.substr(0, 4), 0) == 0);
  CHECK(text.substr(text.size() - 6) == all.substr(all.size() - 6));
  CHECK(text.find("[... " + std::to_string(all.size() - 10) + " bytes of output omitted ...]") != std::string::npos);
}

}  // TEST_SUITE
