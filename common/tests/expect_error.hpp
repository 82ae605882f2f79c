// expect_error(call, {"part", ...}): the call must throw course::Error whose message contains
// every listed part -- a clear error is part of the contract, so tests check its words too.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "course/error.hpp"

namespace course::testing {

inline void expect_error(const std::function<void()>& call, std::initializer_list<std::string> parts) {
  std::string message;
  bool threw = false;
  try {
    call();
  } catch (const course::Error& e) {
    threw = true;
    message = e.what();
  }
  INFO("error message: " << message);
  REQUIRE_MESSAGE(threw, "expected a course::Error");
  for (const auto& part : parts) CHECK_MESSAGE(message.find(part) != std::string::npos, "missing \"" << part << "\"");
}

}  // namespace course::testing
