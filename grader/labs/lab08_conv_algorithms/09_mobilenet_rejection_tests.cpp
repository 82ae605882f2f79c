// Lab 08 tests, part C3: bad arguments to inverted_residual_workspace, inverted_residual_block
// and MobileNetV2. Every one must throw course::Error naming the argument BEFORE anything is
// launched. Last in file order on purpose: a launcher that does not validate may run its kernel
// out of bounds here and spoil the GPU context for whatever runs after it.
#include <functional>
#include <string>
#include <vector>

#include "lab08_mobilenet_test_support.hpp"

namespace {

namespace mn = course::mobilenet;

void check_block_rejects(const std::string& function, const std::vector<int>& sizes, const std::string& part,
                         const std::string& null_argument = "") {
  std::string described = function + "(";
  for (std::size_t i = 0; i < sizes.size(); ++i) described += (i ? ", " : "") + std::to_string(sizes[i]);
  described += null_argument.empty() ? ")"
               : null_argument[0] == '+' ? ") with " + null_argument.substr(1) + " given although hidden == in"
                                         : ") with " + null_argument + " = nullptr";
  grader::check_rejects(
      described, [&] { lab08_harness::call_block_with_arguments(function, sizes, null_argument); }, part);
}

// N, in, hidden, out, H, W, stride (, short_by): block 1's shape on an 8x8 image, and a t = 1 block.
const std::vector<int> kBlock{2, 16, 96, 24, 8, 8, 2, 0};
const std::vector<int> kFlat{2, 16, 16, 16, 8, 8, 1, 0};
const std::vector<int> kWorkspace{2, 16, 96, 24, 8, 8, 2};

const lab08::FoldedMobileNet& small_net() {
  static const lab08::FoldedMobileNet net = [] {
    course::Rng rng = grader::case_rng("rejects: network");
    return golden::lab08_fold_mobilenet(lab08_c_tests::random_weights(rng));
  }();
  return net;
}

void check_net_rejects(const std::string& what, const lab08::FoldedMobileNet& net, int max_batch, int n,
                       const std::string& part, const std::string& null_argument = "") {
  grader::check_rejects(
      what, [&] { lab08_harness::call_mobilenet_with_arguments(net, max_batch, n, null_argument); }, part);
}

}  // namespace

TEST_CASE("rejects (part C): valid calls through the same paths succeed (so the rejections below mean something)") {
  lab08_harness::call_block_with_arguments("inverted_residual_workspace", kWorkspace, "");
  lab08_harness::call_block_with_arguments("inverted_residual_block", kBlock, "");
  lab08_harness::call_block_with_arguments("inverted_residual_block", kFlat, "");
  lab08_harness::call_mobilenet_with_arguments(small_net(), 4, 4, "");
  lab08_harness::call_mobilenet_with_arguments(small_net(), 4, 1, "");
}

TEST_CASE("rejects: inverted_residual_block -- null pointers, expand pointers for t = 1, sizes, stride") {
  for (const char* p : {"d_input", "d_output", "expand_weight", "expand_bias", "depthwise_weight", "depthwise_bias",
                        "project_weight", "project_bias"})
    check_block_rejects("inverted_residual_block", kBlock, p, p);
  for (const char* p : {"d_input", "d_output", "depthwise_weight", "depthwise_bias", "project_weight", "project_bias"})
    check_block_rejects("inverted_residual_block", kFlat, p, p);
  check_block_rejects("inverted_residual_block", kFlat, "expand_weight", "+expand_weight");
  check_block_rejects("inverted_residual_block", kFlat, "expand_bias", "+expand_bias");
  const char* names[] = {"N", "in", "hidden", "out", "H", "W"};
  for (int i = 0; i < 6; ++i) {
    std::vector<int> bad = kBlock, bad_query = kWorkspace;
    bad[static_cast<std::size_t>(i)] = bad_query[static_cast<std::size_t>(i)] = i % 2 == 0 ? 0 : -1;
    check_block_rejects("inverted_residual_block", bad, names[i]);
    check_block_rejects("inverted_residual_workspace", bad_query, names[i]);
  }
  for (int stride : {0, 3, -1}) {
    check_block_rejects("inverted_residual_block", {2, 16, 96, 24, 8, 8, stride, 0}, "stride");
    check_block_rejects("inverted_residual_workspace", {2, 16, 96, 24, 8, 8, stride}, "stride");
  }
}

TEST_CASE("rejects: inverted_residual_block -- a workspace one byte too small, or none (when one is needed)") {
  course::Rng rng = grader::case_rng("rejects: block workspace");
  const course::Tensor x = rng.tensor({2, 16, 8, 8});
  course::Tensor out = grader::poisoned({2, 24, 4, 4});
  std::uint64_t needed = 0;
  lab08_harness::inverted_residual_block(x, lab08_c_tests::random_block(rng, 16, 96, 24), 2, out, needed);
  if (needed == 0) {
    MESSAGE("inverted_residual_workspace asks for no workspace (a fully fused block): nothing to reject");
    return;
  }
  check_block_rejects("inverted_residual_block", {2, 16, 96, 24, 8, 8, 2, 1}, "workspace");
  check_block_rejects("inverted_residual_block", {2, 16, 96, 24, 8, 8, 2, 1 << 30}, "workspace");
  check_block_rejects("inverted_residual_block", kBlock, "d_workspace", "d_workspace");
}

TEST_CASE("rejects: inverted_residual_block -- tensors too large for int indexing (checked before any launch)") {
  // The input: 2^32 elements.
  check_block_rejects("inverted_residual_block", {1, 1, 2, 1, 65536, 65536, 1, 0}, "too large");
  check_block_rejects("inverted_residual_workspace", {1, 1, 2, 1, 65536, 65536, 1}, "too large");
  // The expanded tensor only: 8 x 8192^2 = 2^29 inputs, 48 x 8192^2 = 3.2e9 expanded values.
  check_block_rejects("inverted_residual_block", {1, 8, 48, 8, 8192, 8192, 1, 0}, "too large");
  check_block_rejects("inverted_residual_workspace", {1, 8, 48, 8, 8192, 8192, 1}, "too large");
  // The output only: 64 x 8192^2 = 2^32 outputs from 2^26 inputs.
  check_block_rejects("inverted_residual_block", {1, 1, 2, 64, 8192, 8192, 1, 0}, "too large");
  // The expand weight only: 65,537 x 65,536 on a 1x1 image.
  check_block_rejects("inverted_residual_block", {1, 65536, 65537, 1, 1, 1, 1, 0}, "too large");
  // The project weight only: 65,536 x 65,537.
  check_block_rejects("inverted_residual_block", {1, 1, 65537, 65536, 1, 1, 1, 0}, "too large");
}

TEST_CASE("rejects: MobileNetV2 -- every wrong tensor of the folded network, named") {
  const lab08::FoldedMobileNet& good = small_net();
  const auto expect_named = [&](const std::string& name, const std::function<void(lab08::FoldedMobileNet&)>& spoil) {
    lab08::FoldedMobileNet bad = good;
    spoil(bad);
    check_net_rejects("MobileNetV2 with a wrong " + name, bad, 2, 1, name);
  };
  const auto wrong = [](course::Tensor& t) { t = course::Tensor(course::Shape{t.numel() > 1 ? t.dim(0) + 1 : 3}); };
  expect_named("stem_weight", [&](lab08::FoldedMobileNet& n) { wrong(n.stem_weight); });
  expect_named("stem_bias", [&](lab08::FoldedMobileNet& n) { wrong(n.stem_bias); });
  expect_named("head_weight", [&](lab08::FoldedMobileNet& n) { n.head_weight = course::Tensor(course::Shape{256, 64, 1, 1}); });
  expect_named("head_bias", [&](lab08::FoldedMobileNet& n) { wrong(n.head_bias); });
  expect_named("classifier_weight", [&](lab08::FoldedMobileNet& n) { n.classifier_weight = course::Tensor(course::Shape{256, 10}); });
  expect_named("classifier_bias", [&](lab08::FoldedMobileNet& n) { wrong(n.classifier_bias); });
  expect_named("blocks", [&](lab08::FoldedMobileNet& n) { n.blocks.pop_back(); });
  for (std::size_t i = 0; i < good.blocks.size(); ++i) {
    const std::string prefix = "blocks[" + std::to_string(i) + "].";
    const bool expands = mn::blocks()[i].expand();
    if (expands) {
      expect_named(prefix + "expand_weight", [&](lab08::FoldedMobileNet& n) { wrong(n.blocks[i].expand_weight); });
      expect_named(prefix + "expand_bias", [&](lab08::FoldedMobileNet& n) { wrong(n.blocks[i].expand_bias); });
    } else {  // a t = 1 block given an expansion anyway
      expect_named(prefix + "expand_weight", [&](lab08::FoldedMobileNet& n) {
        n.blocks[i].expand_weight = course::Tensor(course::Shape{16, 16});
      });
    }
    expect_named(prefix + "depthwise_weight", [&](lab08::FoldedMobileNet& n) { wrong(n.blocks[i].depthwise_weight); });
    expect_named(prefix + "depthwise_bias", [&](lab08::FoldedMobileNet& n) { wrong(n.blocks[i].depthwise_bias); });
    expect_named(prefix + "project_weight", [&](lab08::FoldedMobileNet& n) {
      // the transpose [hidden, out] instead of [out, hidden] (block 0 is square: one column more)
      const auto& w = n.blocks[i].project_weight;
      n.blocks[i].project_weight = course::Tensor(w.dim(0) == w.dim(1) ? course::Shape{w.dim(0), w.dim(1) + 1}
                                                                        : course::Shape{w.dim(1), w.dim(0)});
    });
    expect_named(prefix + "project_bias", [&](lab08::FoldedMobileNet& n) { wrong(n.blocks[i].project_bias); });
  }
}

TEST_CASE("rejects: MobileNetV2 -- max_batch, n, null pointers") {
  const lab08::FoldedMobileNet& net = small_net();
  check_net_rejects("max_batch 0", net, 0, 1, "max_batch");
  check_net_rejects("max_batch -3", net, -3, 1, "max_batch");
  // 100,000 images: block 1's expanded tensor [N,96,28,28] would hold 7.5e9 elements.
  check_net_rejects("max_batch 100,000", net, 100000, 1, "max_batch");
  check_net_rejects("n 0", net, 4, 0, "n");
  check_net_rejects("n -1", net, 4, -1, "n");
  check_net_rejects("n 5 > max_batch 4", net, 4, 5, "max_batch");
  check_net_rejects("d_images null", net, 4, 2, "d_images", "d_images");
  check_net_rejects("d_logits null", net, 4, 2, "d_logits", "d_logits");
}
