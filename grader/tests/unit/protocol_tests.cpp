// The signed result channel: the tag function, the chain, and the grader's reader.
#include <doctest/doctest.h>

#include "channel_protocol.hpp"
#include "channel_reader.hpp"

using course_channel::Key;

namespace {
Key sequential_key() {
  Key key{};
  for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<std::uint8_t>(i);
  return key;
}
std::string bytes_0_to(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<char>(i);
  return s;
}
}  // namespace

TEST_SUITE("unit") {

TEST_CASE("protocol: SipHash-2-4 matches the reference test vectors") {
  const Key key = sequential_key();
  CHECK(course_channel::siphash24(key, "") == 0x726fdb47dd0e0e31ULL);
  CHECK(course_channel::siphash24(key, bytes_0_to(8)) == 0x93f5f5799a932462ULL);
  CHECK(course_channel::siphash24(key, bytes_0_to(15)) == 0xa129ca6149be45e5ULL);
}

TEST_CASE("protocol: key hex round trip and rejection of bad hex") {
  const Key key = sequential_key();
  const std::string hex = course_channel::key_to_hex(key);
  CHECK(hex == "000102030405060708090a0b0c0d0e0f");
  Key back{};
  CHECK(course_channel::key_from_hex(hex, back));
  CHECK(back == key);
  CHECK_FALSE(course_channel::key_from_hex(hex.substr(1), back));
  CHECK_FALSE(course_channel::key_from_hex(std::string(31, '0') + "g", back));
}

TEST_CASE("protocol: the verifier accepts the signer's lines in order and nothing else") {
  const Key key = sequential_key();
  course_channel::Signer signer;
  signer.key = key;
  const std::string a = signer.sign("{\"type\":\"hello\"}");
  const std::string b = signer.sign("{\"type\":\"end\"}");
  auto strip = [](const std::string& line) { return line.substr(0, line.size() - 1); };
  std::string payload, error;

  SUBCASE("in order") {
    course_channel::Verifier v(key);
    CHECK(v.accept(strip(a), payload, error));
    CHECK(payload == "{\"type\":\"hello\"}");
    CHECK(v.accept(strip(b), payload, error));
  }
  SUBCASE("a dropped line breaks the chain") {
    course_channel::Verifier v(key);
    CHECK_FALSE(v.accept(strip(b), payload, error));
    CHECK(error.find("sequence") != std::string::npos);
  }
  SUBCASE("a replayed line is rejected") {
    course_channel::Verifier v(key);
    CHECK(v.accept(strip(a), payload, error));
    CHECK_FALSE(v.accept(strip(a), payload, error));
  }
  SUBCASE("a changed payload is rejected") {
    course_channel::Verifier v(key);
    std::string changed = strip(a);
    changed.replace(changed.find("hello"), 5, "HELLO");
    CHECK_FALSE(v.accept(changed, payload, error));
    CHECK(error.find("tag") != std::string::npos);
  }
  SUBCASE("another key's lines are rejected") {
    Key other = key;
    other[0] ^= 1;
    course_channel::Verifier v(other);
    CHECK_FALSE(v.accept(strip(a), payload, error));
  }
  SUBCASE("garbage is rejected") {
    course_channel::Verifier v(key);
    CHECK_FALSE(v.accept("PASSED", payload, error));
    CHECK_FALSE(v.accept("", payload, error));
  }
}

TEST_CASE("protocol: the reader reassembles lines split across reads and stops trusting at the first bad one") {
  const Key key = sequential_key();
  course_channel::Signer signer;
  signer.key = key;
  std::string stream = signer.sign(R"({"type":"hello","lab":"x"})");
  stream += signer.sign(R"({"type":"start","case":"c"})");
  course_grader::ChannelReader reader(key);
  for (char c : stream) reader.feed(&c, 1);  // one byte at a time
  reader.finish(false);
  CHECK(reader.error().empty());
  REQUIRE(reader.records().size() == 2);
  CHECK(reader.records()[1]["case"] == "c");

  course_grader::ChannelReader tampered(key);
  const std::string forged = "2 0123456789abcdef {\"type\":\"end\"}\n";
  const std::string all = stream + forged + signer.sign(R"({"type":"end"})");
  tampered.feed(all.data(), all.size());
  tampered.finish(false);
  CHECK_FALSE(tampered.error().empty());
  CHECK(tampered.records().size() == 2);  // nothing after the forged line is believed
}

TEST_CASE("protocol: an unterminated last record is an error unless the process died mid-write") {
  const Key key = sequential_key();
  course_channel::Signer signer;
  signer.key = key;
  std::string line = signer.sign(R"({"type":"hello"})");
  line.pop_back();
  course_grader::ChannelReader alive(key), died(key);
  alive.feed(line.data(), line.size());
  died.feed(line.data(), line.size());
  alive.finish(false);
  died.finish(true);
  CHECK_FALSE(alive.error().empty());
  CHECK(died.error().empty());
}

TEST_CASE("protocol: a flood of channel data is cut off") {
  course_grader::ChannelReader reader(sequential_key(), 1024);
  const std::string junk(2048, 'x');
  reader.feed(junk.data(), junk.size());
  CHECK(reader.error().find("MiB") != std::string::npos);
}

}  // TEST_SUITE
