// The byte format of calls between a lab's test program (trusted) and its worker (student code).
//
// Every value is written as plain bytes in a fixed order; the reader checks every length against
// what is left in the message, so a hostile worker that sends garbage produces a ProtocolError,
// never an out-of-bounds read or a gigantic allocation.
//
// Supported: arithmetic types, enums, std::string, std::vector, std::optional, std::map,
// std::pair, course::Tensor, course::lenet::Weights, and plain structs registered with
//   COURSE_RPC_FIELDS(lab02::Conv2dParams, pad_top, pad_bottom, ...)
// at global namespace scope, in a header that both the test program and the worker include.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "course/lenet.hpp"
#include "course/tensor.hpp"

namespace grader::rpc {

/// A message that does not decode: the other side is broken or hostile.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Writer {
 public:
  void bytes(const void* data, std::size_t n) {
    if (n > 0) buffer_.append(static_cast<const char*>(data), n);
  }
  template <class T>
  void scalar(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&value, sizeof value);
  }
  void count(std::size_t n) { scalar<std::uint64_t>(n); }
  std::string& buffer() { return buffer_; }

 private:
  std::string buffer_;
};

class Reader {
 public:
  Reader(const char* data, std::size_t size) : pos_(data), end_(data + size) {}
  explicit Reader(const std::string& message) : Reader(message.data(), message.size()) {}

  void bytes(void* out, std::size_t n) {
    if (n > left()) throw ProtocolError("message ends early");
    if (n > 0) std::memcpy(out, pos_, n);
    pos_ += n;
  }
  template <class T>
  T scalar() {
    T value{};
    bytes(&value, sizeof value);
    return value;
  }
  /// An element count, checked against the bytes left (each element takes >= min_bytes).
  std::size_t count(std::size_t min_bytes_per_element) {
    const auto n = scalar<std::uint64_t>();
    if (min_bytes_per_element > 0 && n > left() / min_bytes_per_element) throw ProtocolError("count larger than message");
    return static_cast<std::size_t>(n);
  }
  std::size_t left() const { return static_cast<std::size_t>(end_ - pos_); }
  void expect_end() const {
    if (pos_ != end_) throw ProtocolError("unexpected bytes after the message");
  }

 private:
  const char* pos_;
  const char* end_;
};

template <class T, class Enable = void>
struct Codec;  // no codec for this type: register it with COURSE_RPC_FIELDS or add one here

template <class T>
void write(Writer& w, const T& value) {
  Codec<T>::write(w, value);
}
template <class T>
void read(Reader& r, T& value) {
  Codec<T>::read(r, value);
}

template <class T>
struct Codec<T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T>>> {
  static void write(Writer& w, const T& v) { w.scalar(v); }
  static void read(Reader& r, T& v) { v = r.scalar<T>(); }
};

template <>
struct Codec<std::string> {
  static void write(Writer& w, const std::string& s) {
    w.count(s.size());
    w.bytes(s.data(), s.size());
  }
  static void read(Reader& r, std::string& s) {
    s.resize(r.count(1));
    r.bytes(s.data(), s.size());
  }
};

template <class T>
struct Codec<std::vector<T>> {
  static void write(Writer& w, const std::vector<T>& v) {
    w.count(v.size());
    static_assert(!std::is_same_v<T, bool>, "std::vector<bool> has no codec: use std::vector<std::uint8_t>");
    if constexpr (std::is_arithmetic_v<T>) {
      w.bytes(v.data(), v.size() * sizeof(T));
    } else {
      for (const T& item : v) rpc::write(w, item);
    }
  }
  static void read(Reader& r, std::vector<T>& v) {
    if constexpr (std::is_arithmetic_v<T>) {
      v.resize(r.count(sizeof(T)));
      r.bytes(v.data(), v.size() * sizeof(T));
    } else {
      v.clear();
      const std::size_t n = r.count(1);
      v.resize(n);
      for (T& item : v) rpc::read(r, item);
    }
  }
};

template <class T>
struct Codec<std::optional<T>> {
  static void write(Writer& w, const std::optional<T>& v) {
    w.scalar<std::uint8_t>(v.has_value() ? 1 : 0);
    if (v) rpc::write(w, *v);
  }
  static void read(Reader& r, std::optional<T>& v) {
    const auto present = r.scalar<std::uint8_t>();
    if (present > 1) throw ProtocolError("bad optional flag");
    if (present == 0) {
      v.reset();
      return;
    }
    T value{};
    rpc::read(r, value);
    v = std::move(value);
  }
};

template <class A, class B>
struct Codec<std::pair<A, B>> {
  static void write(Writer& w, const std::pair<A, B>& v) {
    rpc::write(w, v.first);
    rpc::write(w, v.second);
  }
  static void read(Reader& r, std::pair<A, B>& v) {
    rpc::read(r, v.first);
    rpc::read(r, v.second);
  }
};

template <class K, class V>
struct Codec<std::map<K, V>> {
  static void write(Writer& w, const std::map<K, V>& m) {
    w.count(m.size());
    for (const auto& [key, value] : m) {
      rpc::write(w, key);
      rpc::write(w, value);
    }
  }
  static void read(Reader& r, std::map<K, V>& m) {
    m.clear();
    const std::size_t n = r.count(1);
    for (std::size_t i = 0; i < n; ++i) {
      K key{};
      V value{};
      rpc::read(r, key);
      rpc::read(r, value);
      m.emplace(std::move(key), std::move(value));
    }
  }
};

/// A tensor travels as its shape and its values; the reader rebuilds it through the Tensor
/// constructor, which checks that the two agree.
template <>
struct Codec<course::Tensor> {
  static void write(Writer& w, const course::Tensor& t) {
    rpc::write(w, t.shape());
    rpc::write(w, t.values());
  }
  static void read(Reader& r, course::Tensor& t) {
    course::Shape shape;
    std::vector<float> values;
    rpc::read(r, shape);
    rpc::read(r, values);
    if (shape.empty() && values.empty()) {
      t = course::Tensor();
      return;
    }
    std::size_t expected = 1;
    for (const std::int64_t d : shape) {
      if (d < 0) throw ProtocolError("tensor with a negative dimension");
      if (__builtin_mul_overflow(expected, static_cast<std::size_t>(d), &expected))
        throw ProtocolError("tensor shape overflows");
    }
    if (expected != values.size()) throw ProtocolError("tensor shape does not match its data");
    t = course::Tensor(std::move(shape), std::move(values));
  }
};

}  // namespace grader::rpc

// --- COURSE_RPC_FIELDS(Type, field, ...): a codec for a plain struct, field by field ------------
#define COURSE_RPC_EXPAND(x) x
#define COURSE_RPC_GET_17TH(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, N, ...) N
#define COURSE_RPC_EACH_1(F, x) F(x)
#define COURSE_RPC_EACH_2(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_1(F, __VA_ARGS__))
#define COURSE_RPC_EACH_3(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_2(F, __VA_ARGS__))
#define COURSE_RPC_EACH_4(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_3(F, __VA_ARGS__))
#define COURSE_RPC_EACH_5(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_4(F, __VA_ARGS__))
#define COURSE_RPC_EACH_6(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_5(F, __VA_ARGS__))
#define COURSE_RPC_EACH_7(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_6(F, __VA_ARGS__))
#define COURSE_RPC_EACH_8(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_7(F, __VA_ARGS__))
#define COURSE_RPC_EACH_9(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_8(F, __VA_ARGS__))
#define COURSE_RPC_EACH_10(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_9(F, __VA_ARGS__))
#define COURSE_RPC_EACH_11(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_10(F, __VA_ARGS__))
#define COURSE_RPC_EACH_12(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_11(F, __VA_ARGS__))
#define COURSE_RPC_EACH_13(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_12(F, __VA_ARGS__))
#define COURSE_RPC_EACH_14(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_13(F, __VA_ARGS__))
#define COURSE_RPC_EACH_15(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_14(F, __VA_ARGS__))
#define COURSE_RPC_EACH_16(F, x, ...) F(x) COURSE_RPC_EXPAND(COURSE_RPC_EACH_15(F, __VA_ARGS__))
#define COURSE_RPC_FOR_EACH(F, ...)                                                                  \
  COURSE_RPC_EXPAND(COURSE_RPC_GET_17TH(__VA_ARGS__, COURSE_RPC_EACH_16, COURSE_RPC_EACH_15,         \
                                        COURSE_RPC_EACH_14, COURSE_RPC_EACH_13, COURSE_RPC_EACH_12,  \
                                        COURSE_RPC_EACH_11, COURSE_RPC_EACH_10, COURSE_RPC_EACH_9,   \
                                        COURSE_RPC_EACH_8, COURSE_RPC_EACH_7, COURSE_RPC_EACH_6,     \
                                        COURSE_RPC_EACH_5, COURSE_RPC_EACH_4, COURSE_RPC_EACH_3,     \
                                        COURSE_RPC_EACH_2, COURSE_RPC_EACH_1)(F, __VA_ARGS__))
#define COURSE_RPC_WRITE_FIELD(field) ::grader::rpc::write(w, v.field);
#define COURSE_RPC_READ_FIELD(field) ::grader::rpc::read(r, v.field);

#define COURSE_RPC_FIELDS(Type, ...)                                                    \
  template <>                                                                           \
  struct grader::rpc::Codec<Type> {                                                     \
    static void write(Writer& w, const Type& v) {                                       \
      COURSE_RPC_FOR_EACH(COURSE_RPC_WRITE_FIELD, __VA_ARGS__)                          \
    }                                                                                   \
    static void read(Reader& r, Type& v) { COURSE_RPC_FOR_EACH(COURSE_RPC_READ_FIELD, __VA_ARGS__) } \
  };

COURSE_RPC_FIELDS(course::lenet::Weights, tensors, metadata, bn_epsilon)
