// The result channel between a lab's test runner (grader/runner/lab_main.cpp) and the grader.
//
// Why it exists: a lab program's stdout, exit code and files are all under the control of the
// student code it links, so none of them can decide a verdict. Instead the grader opens two pipes
// before it starts the program:
//   * a nonce pipe: the grader writes a fresh random 128-bit key into it and closes its end. The
//     runner reads the key in a constructor that runs before every ordinary static initializer,
//     closes the pipe and removes the environment variable that named it, so student code never
//     gets to see the key;
//   * a result pipe: the runner writes one line per event (test case started/ended, totals, ...).
// Every line carries a SipHash-2-4 tag keyed with the nonce over (sequence number, previous tag,
// payload). A line written by anyone without the key, a replayed line, a dropped line or a line
// out of order breaks the chain, and the grader fails the lab.
//
// Line format:  <seq> <tag: 16 hex digits> <payload: one-line JSON>\n
// This header is shared by both sides and depends on the standard library only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace course_channel {

/// Environment variable that tells the runner the two descriptors: "<nonce fd>,<result fd>".
inline constexpr const char* kEnvVar = "COURSE_GRADER_CHANNEL";
/// Descriptor numbers the grader uses in the child (fixed; the tag, not secrecy, protects them).
inline constexpr int kNonceFd = 3;
inline constexpr int kResultFd = 4;

using Key = std::array<std::uint8_t, 16>;

namespace detail {
inline std::uint64_t rotl(std::uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }
inline std::uint64_t load_le64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
}  // namespace detail

/// SipHash-2-4 (Aumasson & Bernstein): a keyed 64-bit tag, cheap and well studied.
inline std::uint64_t siphash24(const Key& key, const std::string& message) {
  using detail::rotl;
  const std::uint64_t k0 = detail::load_le64(key.data());
  const std::uint64_t k1 = detail::load_le64(key.data() + 8);
  std::uint64_t v0 = 0x736f6d6570736575ULL ^ k0;
  std::uint64_t v1 = 0x646f72616e646f6dULL ^ k1;
  std::uint64_t v2 = 0x6c7967656e657261ULL ^ k0;
  std::uint64_t v3 = 0x7465646279746573ULL ^ k1;
  auto sip_round = [&] {
    v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
    v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
  };
  const auto* bytes = reinterpret_cast<const unsigned char*>(message.data());
  const std::size_t length = message.size();
  const std::size_t whole = length - length % 8;
  for (std::size_t i = 0; i < whole; i += 8) {
    const std::uint64_t m = detail::load_le64(bytes + i);
    v3 ^= m;
    sip_round();
    sip_round();
    v0 ^= m;
  }
  std::uint64_t last = static_cast<std::uint64_t>(length & 0xff) << 56;
  for (std::size_t j = 0; j < length - whole; ++j) last |= static_cast<std::uint64_t>(bytes[whole + j]) << (8 * j);
  v3 ^= last;
  sip_round();
  sip_round();
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) sip_round();
  return v0 ^ v1 ^ v2 ^ v3;
}

inline std::string to_hex(std::uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<std::size_t>(i)] = digits[value & 0xf];
  return out;
}

inline std::string key_to_hex(const Key& key) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (std::uint8_t b : key) {
    out += digits[b >> 4];
    out += digits[b & 0xf];
  }
  return out;
}

/// Parses 32 hex digits; returns false on anything else.
inline bool key_from_hex(const std::string& hex, Key& key) {
  if (hex.size() != 32) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < 16; ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    key[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return true;
}

/// What the tag of record `seq` covers: its position, the previous tag (the chain) and the payload.
inline std::string tagged_text(std::uint64_t seq, std::uint64_t previous_tag, const std::string& payload) {
  return std::to_string(seq) + ' ' + to_hex(previous_tag) + ' ' + payload;
}

/// Runner side: turns payloads into tagged lines. Constant-initialisable on purpose, so that the
/// runner can use it from a constructor that runs before ordinary static initialisation.
struct Signer {
  Key key{};
  std::uint64_t previous_tag = 0;
  std::uint64_t seq = 0;

  std::string sign(const std::string& payload) {
    const std::uint64_t tag = siphash24(key, tagged_text(seq, previous_tag, payload));
    std::string line = std::to_string(seq) + ' ' + to_hex(tag) + ' ' + payload + '\n';
    previous_tag = tag;
    ++seq;
    return line;
  }
};

/// Grader side: checks lines in order; the first bad line poisons the rest of the stream.
class Verifier {
 public:
  explicit Verifier(const Key& key) : key_(key) {}

  /// Checks one line (without its '\n'). On success stores the payload and returns true; on
  /// failure stores a reason in `error` and returns false.
  bool accept(const std::string& line, std::string& payload, std::string& error) {
    const std::size_t first = line.find(' ');
    const std::size_t second = first == std::string::npos ? first : line.find(' ', first + 1);
    if (second == std::string::npos || second - first != 17) {
      error = "record " + std::to_string(seq_) + " is not in the runner's format";
      return false;
    }
    if (line.compare(0, first, std::to_string(seq_)) != 0) {
      error = "record " + std::to_string(seq_) + " is out of sequence";
      return false;
    }
    payload = line.substr(second + 1);
    const std::uint64_t expected = siphash24(key_, tagged_text(seq_, previous_tag_, payload));
    if (line.compare(first + 1, 16, to_hex(expected)) != 0) {
      error = "record " + std::to_string(seq_) + " has a wrong tag";
      return false;
    }
    previous_tag_ = expected;
    ++seq_;
    return true;
  }

 private:
  Key key_;
  std::uint64_t previous_tag_ = 0;
  std::uint64_t seq_ = 0;
};

}  // namespace course_channel
