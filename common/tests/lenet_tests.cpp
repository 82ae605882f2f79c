#include <doctest/doctest.h>

#include <cstdlib>

#include "course/lenet.hpp"
#include "course/safetensors.hpp"
#include "expect_error.hpp"
#include "temp_dir.hpp"

using namespace course;
using course::testing::expect_error;
using course::testing::TempDir;

namespace {
const std::string kMnistWeights = std::string(COURSE_DATA_DIR) + "/weights/lenet_mnist.safetensors";
const std::string kFashionWeights = std::string(COURSE_DATA_DIR) + "/weights/lenet_fashion_mnist.safetensors";
}  // namespace

TEST_CASE("lenet: the layer list chains shapes from 1x28x28 to 10 logits") {
  const auto& L = lenet::layers();
  REQUIRE(L.size() == 14);
  CHECK(L.front().name == "conv1");
  CHECK(L.front().output == Shape{6, 28, 28});
  CHECK(L[3].output == Shape{6, 14, 14});
  CHECK(L[4].output == Shape{16, 10, 10});
  CHECK(L[7].output == Shape{16, 5, 5});
  CHECK(L[8].output == Shape{400});
  CHECK(L.back().output == Shape{10});
  // conv1 1->6 (28*28*6*25) + conv2 6->16 (10*10*16*150) + fc 400*120 + 120*84 + 84*10 = 416,520
  CHECK(lenet::multiply_adds_per_image() == 416520);
}

TEST_CASE("lenet: parameter list matches PyTorch's state_dict names") {
  const auto& P = lenet::parameters();
  REQUIRE(P.size() == 18);
  CHECK(P[0].name == "conv1.weight");
  CHECK(P[0].shape == Shape{6, 1, 5, 5});
  CHECK(P[5].name == "bn1.running_var");
  CHECK(P[6].shape == Shape{16, 6, 5, 5});
  CHECK(P[12].name == "fc1.weight");
  CHECK(P[12].shape == Shape{120, 400});
  CHECK(P[17].name == "fc3.bias");
}

TEST_CASE("lenet: committed weights load, validate and carry their recorded accuracy") {
  for (const auto& [path, minimum] : {std::pair{kMnistWeights, 0.97}, std::pair{kFashionWeights, 0.88}}) {
    CAPTURE(path);
    lenet::Weights w = lenet::load_weights(path);
    CHECK(w.tensors.size() == 18);
    CHECK(w.bn_epsilon == doctest::Approx(1e-5));
    REQUIRE(w.metadata.count("test_accuracy") == 1);
    CHECK(std::atof(w.metadata.at("test_accuracy").c_str()) >= minimum);
  }
}

TEST_CASE("lenet: a weights file with a wrong, missing or extra tensor is rejected by name") {
  TempDir dir;
  TensorFile file = read_safetensors(kMnistWeights);
  const std::string p = dir.file("w.safetensors");

  SUBCASE("wrong shape") {
    file.tensors["fc1.weight"] = Tensor(Shape{400, 120});
    write_safetensors(p, file);
    expect_error([&] { lenet::load_weights(p); }, {p, "'fc1.weight'", "[400, 120]", "expected [120, 400]"});
  }
  SUBCASE("missing tensor") {
    file.tensors.erase("bn2.running_mean");
    write_safetensors(p, file);
    expect_error([&] { lenet::load_weights(p); }, {p, "missing", "'bn2.running_mean'"});
  }
  SUBCASE("extra tensor") {
    file.tensors["fc4.weight"] = Tensor(Shape{1});
    write_safetensors(p, file);
    expect_error([&] { lenet::load_weights(p); }, {p, "unexpected tensor 'fc4.weight'"});
  }
  SUBCASE("negative variance") {
    file.tensors["bn1.running_var"][0] = -1.0f;
    write_safetensors(p, file);
    expect_error([&] { lenet::load_weights(p); }, {p, "bn1.running_var", "negative"});
  }
  SUBCASE("bad epsilon") {
    file.metadata["bn_eps"] = "zero";
    write_safetensors(p, file);
    expect_error([&] { lenet::load_weights(p); }, {p, "bn_eps"});
  }
}
