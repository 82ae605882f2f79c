// Lab 04 tests: the whole LeNet-5-BN (lecture section "The whole LeNet"), unfolded and folded,
// on the real test splits, plus predicted_classes and count_correct.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <future>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "lab04_test_support.hpp"
#include "lenet_reference.hpp"

using course::Shape;
using course::Tensor;
namespace ln = course::lenet;

namespace {

// The folded and unfolded networks round differently (a few float ulps per layer), and the
// golden reference keeps every activation in double; logits are at most ~25 in magnitude.
const course::Tolerance kLogitTolerance{1e-4, 0.0};
// Random untrained weights can give larger logits; there the bound is also relative.
const course::Tolerance kRandomLogitTolerance{1e-4, 1e-5};

/// Runs `forward(images_slice, logits_slice)` over the data set in batches of `batch` images,
/// reusing one logits buffer for all full batches (so a result cached from the previous call
/// would show), and gathers the logits of all images.
template <typename Forward>
Tensor logits_in_batches(const Tensor& images, std::int64_t batch, Forward forward) {
  const std::int64_t total = images.dim(0);
  Tensor all(Shape{total, ln::kNumClasses});
  Tensor reused = grader::poisoned({batch, ln::kNumClasses});
  for (std::int64_t begin = 0; begin < total; begin += batch) {
    const std::int64_t count = std::min(batch, total - begin);
    Tensor last = grader::poisoned({count, ln::kNumClasses});
    Tensor& logits = count == batch ? reused : last;
    forward(lab04_tests::image_slice(images, begin, count), logits);
    std::copy(logits.data(), logits.data() + logits.numel(), all.data() + begin * ln::kNumClasses);
  }
  return all;
}

/// The logits of rows [0, rows).
Tensor first_rows(const Tensor& logits, std::int64_t rows) {
  Tensor out(Shape{rows, logits.dim(1)});
  std::copy(logits.data(), logits.data() + out.numel(), out.data());
  return out;
}

/// Argmax of each row (first index on a tie), computed here so the comparison does not rely on
/// the student's predicted_classes.
std::vector<int> golden_predictions(const Tensor& logits) {
  const auto rows = static_cast<std::size_t>(logits.dim(0)), classes = static_cast<std::size_t>(logits.dim(1));
  std::vector<int> out(rows);
  for (std::size_t n = 0; n < rows; ++n) {
    const float* row = logits.data() + n * classes;
    out[n] = static_cast<int>(std::max_element(row, row + classes) - row);
  }
  return out;
}

/// How many rows of logits predict their label, counted by the test itself (golden_predictions).
std::int64_t correct_labels(const Tensor& logits, const std::vector<std::uint8_t>& labels) {
  const std::vector<int> predicted = golden_predictions(logits);
  REQUIRE(predicted.size() == labels.size());
  std::int64_t correct = 0;
  for (std::size_t n = 0; n < labels.size(); ++n)
    if (predicted[n] == static_cast<int>(labels[n])) ++correct;
  return correct;
}

/// The whole check for one trained model.
///  - The student's FOLDED network classifies the first `student_images` images (the full split
///    for MNIST) and, on a full split, must reproduce exactly the accuracy PyTorch recorded in the
///    weights file.
///  - The student's UNFOLDED network classifies the first `unfolded_images` of them: the two must
///    agree (relative L2 error < 1e-5), match golden (every logit within 1e-4, the same classes)
///    and PyTorch's logits of the first 100 images.
/// The golden reference's own exact accuracy on the full splits is checked once by the course's
/// test suite (grader/reference/tests), not every time a student grades.
/// For Fashion-MNIST the student's networks see a 1,000-image prefix: 10,000 images through a
/// plain seven-loop convolution would take most of the test program's time budget.
void check_model(const lab04_tests::Model& model, std::int64_t student_images, std::int64_t unfolded_images) {
  const std::string name = model.test.name;
  const Tensor& images = model.test.images;
  const std::int64_t total = images.dim(0);
  REQUIRE(student_images >= model.pytorch_logits.dim(0));
  REQUIRE(student_images <= total);
  REQUIRE(unfolded_images >= model.pytorch_logits.dim(0));
  REQUIRE(unfolded_images <= student_images);

  // One image through both networks first: a missing function fails here at once, before the
  // long golden pass has started (a pending std::async would have to finish before the throw).
  const Tensor first = lab04_tests::image_slice(images, 0, 1);
  Tensor probe = grader::poisoned({1, ln::kNumClasses});
  lab04::lenet_forward(model.weights, first, probe);
  const lab04::FoldedLeNet net = lab04::fold_lenet(model.weights);
  lab04::lenet_forward_folded(net, first, probe);

  const Tensor subset = student_images == total ? images : lab04_tests::image_slice(images, 0, student_images);
  const Tensor unfolded_subset = lab04_tests::image_slice(images, 0, unfolded_images);
  // The golden pass runs on a second thread while the student's networks run on this one (all
  // assertions stay on this thread): on an idle two-core machine the test takes the time of the
  // slower of the two instead of their sum.
  std::future<Tensor> golden_pass =
      std::async(std::launch::async, [&model, &unfolded_subset] { return golden::lenet_forward(model.weights, unfolded_subset); });

  const std::vector<std::uint8_t> labels(model.test.labels.begin(), model.test.labels.begin() + student_images);
  const std::string part = name + (student_images == total ? "" : " (first " + std::to_string(student_images) + " images)");

  const Tensor unfolded = logits_in_batches(unfolded_subset, 500, [&](const Tensor& x, Tensor& logits) {
    lab04::lenet_forward(model.weights, x, logits);
  });
  const Tensor folded = logits_in_batches(subset, 500, [&](const Tensor& x, Tensor& logits) {
    lab04::lenet_forward_folded(net, x, logits);
  });

  const Tensor golden_logits = golden_pass.get();
  const std::int64_t fixture_rows = model.pytorch_logits.dim(0);
  const Tensor folded_head = first_rows(folded, unfolded_images);
  const std::string head = name + " (first " + std::to_string(unfolded_images) + " images)";

  const double rel = course::relative_l2_error(folded_head.data(), unfolded.data(), unfolded.numel());
  CHECK_MESSAGE(rel < 1e-5, head << ": folded and unfolded logits differ, relative L2 error " << rel);
  grader::check_tensor(head + ": unfolded logits vs golden", unfolded, golden_logits, kLogitTolerance);
  grader::check_tensor(head + ": folded logits vs golden", folded_head, golden_logits, kLogitTolerance);
  grader::check_tensor(name + ": unfolded logits vs PyTorch (first 100 images)", first_rows(unfolded, fixture_rows),
                       model.pytorch_logits, kLogitTolerance);
  grader::check_tensor(name + ": folded logits vs PyTorch (first 100 images)", first_rows(folded, fixture_rows),
                       model.pytorch_logits, kLogitTolerance);

  const std::vector<int> golden_classes = golden_predictions(golden_logits);
  CHECK_MESSAGE(lab04::predicted_classes(unfolded) == golden_classes, head << ": unfolded predictions differ from golden");
  CHECK_MESSAGE(lab04::predicted_classes(folded_head) == golden_classes, head << ": folded predictions differ from golden");
  if (student_images == total) {
    // The accuracy is counted HERE, from the logits the student's network returned: never by the
    // student's count_correct (tested on its own below), which could simply return the number
    // recorded in the weights' metadata while the network skipped most of the images. The
    // recorded accuracy comes from the weights file, so nothing is hard-coded here.
    const std::int64_t correct = correct_labels(folded, labels);
    CHECK_MESSAGE(correct == model.recorded_correct,
                  part << ": " << correct << " of " << total << " correct labels counted by the test from the folded "
                       << "network's logits; PyTorch recorded " << model.recorded_correct);
  }
}

/// A LeNet with random (untrained) parameters and a chosen batch-norm epsilon. Weights are scaled
/// by 1/sqrt(fan-in) so activations stay near 1; variances are small enough (0.01 .. 0.5) that
/// using the wrong epsilon changes the logits far beyond the tolerance.
ln::Weights random_weights(course::Rng& rng, double bn_epsilon) {
  ln::Weights w;
  w.bn_epsilon = bn_epsilon;
  for (const ln::ParamSpec& p : ln::parameters()) {
    const bool batchnorm = p.name.rfind("bn", 0) == 0;
    Tensor t;
    if (batchnorm && p.name.find("running_var") != std::string::npos)
      t = rng.tensor(p.shape, 0.01f, 0.5f);
    else if (batchnorm && p.name.find(".weight") != std::string::npos)
      t = rng.tensor(p.shape, 0.5f, 1.5f);
    else if (batchnorm)
      t = rng.tensor(p.shape, -0.5f, 0.5f);
    else {
      // fan-in: everything but the first extent of a weight ([out, in] or [out, in, kh, kw]).
      const std::size_t fan_in = p.shape.size() > 1 ? course::shape_numel(p.shape) / static_cast<std::size_t>(p.shape[0]) : 1;
      const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
      t = rng.tensor(p.shape, -bound, bound);
    }
    w.tensors.emplace(p.name, std::move(t));
  }
  return w;
}

}  // namespace

TEST_CASE("lenet: the lecture's model facts (416,520 multiply-adds, 61,794 -> 61,706 parameters)") {
  CHECK(ln::multiply_adds_per_image() == 416520);
  std::int64_t conv_macs[2] = {0, 0}, fc_macs[3] = {0, 0, 0};
  int convs = 0, fcs = 0;
  for (const ln::LayerSpec& layer : ln::layers()) {
    if (layer.kind == ln::LayerKind::Conv)
      conv_macs[convs++] = static_cast<std::int64_t>(course::shape_numel(layer.output)) * layer.in_channels * layer.kernel * layer.kernel;
    if (layer.kind == ln::LayerKind::Linear) fc_macs[fcs++] = std::int64_t{layer.in_channels} * layer.out_channels;
  }
  CHECK(conv_macs[0] == 117600);
  CHECK(conv_macs[1] == 240000);
  CHECK(fc_macs[0] == 48000);
  CHECK(fc_macs[1] == 10080);
  CHECK(fc_macs[2] == 840);
  CHECK(static_cast<double>(conv_macs[1]) / 416520.0 == doctest::Approx(0.576).epsilon(1e-3));

  // Folding saves reading and writing every batch-norm output once: 50,432 bytes per image.
  std::size_t bn_values = 0;
  for (const ln::LayerSpec& layer : ln::layers())
    if (layer.kind == ln::LayerKind::BatchNorm) bn_values += course::shape_numel(layer.output);
  CHECK(bn_values == 4704 + 1600);
  CHECK(bn_values * 2 * sizeof(float) == 50432);

  const lab04_tests::Model& model = lab04_tests::mnist_model();
  std::size_t stored = 0;
  for (const auto& entry : model.weights.tensors) stored += entry.second.numel();
  CHECK(stored == 61794);

  const lab04::FoldedLeNet net = lab04::fold_lenet(model.weights);
  CHECK(net.conv1_weight.shape() == Shape{6, 1, 5, 5});
  CHECK(net.conv1_bias.shape() == Shape{6});
  CHECK(net.conv2_weight.shape() == Shape{16, 6, 5, 5});
  CHECK(net.conv2_bias.shape() == Shape{16});
  CHECK(net.fc1_weight.shape() == Shape{120, 400});
  CHECK(net.fc3_bias.shape() == Shape{10});
  const std::size_t folded = net.conv1_weight.numel() + net.conv1_bias.numel() + net.conv2_weight.numel() +
                             net.conv2_bias.numel() + net.fc1_weight.numel() + net.fc1_bias.numel() +
                             net.fc2_weight.numel() + net.fc2_bias.numel() + net.fc3_weight.numel() +
                             net.fc3_bias.numel();
  CHECK(folded == 61706);
}

TEST_CASE("lenet: wrong image and logits shapes are rejected") {
  const lab04_tests::Model& model = lab04_tests::mnist_model();
  const Tensor images(Shape{2, 1, 28, 28}, 0.5f);
  struct BadImages {
    const char* what;
    Shape shape;
  };
  const std::vector<BadImages> bad_images = {{"3-D images", {2, 28, 28}},
                                             {"3 channels", {2, 3, 28, 28}},
                                             {"32x32 images", {2, 1, 32, 32}},
                                             {"empty batch", {0, 1, 28, 28}}};
  const std::vector<Shape> bad_logits = {{2, 9}, {3, 10}, {20}};

  for (const BadImages& bad : bad_images) {
    Tensor out(Shape{bad.shape[0], 10});
    grader::check_rejects(std::string("unfolded: ") + bad.what,
                          [&] { lab04::lenet_forward(model.weights, Tensor(bad.shape), out); }, "images");
  }
  for (const Shape& wrong : bad_logits) {
    Tensor out(wrong);
    grader::check_rejects("unfolded: logits " + course::shape_to_string(wrong),
                          [&] { lab04::lenet_forward(model.weights, images, out); }, "logits");
  }
  ln::Weights missing = model.weights;
  missing.tensors.erase("bn2.running_mean");
  Tensor logits(Shape{2, 10});
  grader::check_rejects("weights without bn2.running_mean", [&] { lab04::lenet_forward(missing, images, logits); },
                        "bn2.running_mean");

  const lab04::FoldedLeNet net = lab04::fold_lenet(model.weights);
  for (const BadImages& bad : bad_images) {
    Tensor out(Shape{bad.shape[0], 10});
    grader::check_rejects(std::string("folded: ") + bad.what,
                          [&] { lab04::lenet_forward_folded(net, Tensor(bad.shape), out); }, "images");
  }
  for (const Shape& wrong : bad_logits) {
    Tensor out(wrong);
    grader::check_rejects("folded: logits " + course::shape_to_string(wrong),
                          [&] { lab04::lenet_forward_folded(net, images, out); }, "logits");
  }
}

TEST_CASE("classes: argmax per row, the first index wins a tie (the lecture's example)") {
  const Tensor logits(Shape{3, 4}, {0.1f, 2.0f, 2.0f, -1.0f,    // tie between classes 1 and 2 -> 1
                                    -5.0f, -4.0f, -3.0f, -2.5f,  // all negative -> 3
                                    9.0f, 1.0f, 1.0f, 1.0f});    // first column -> 0
  const std::vector<int> predicted = lab04::predicted_classes(logits);
  CHECK(predicted == std::vector<int>{1, 3, 0});

  // Reusing the function on another batch gives that batch's answer, not the previous one.
  const Tensor other(Shape{2, 4}, {0.0f, 0.0f, 0.0f, 0.5f, -1.0f, 3.0f, -1.0f, -1.0f});
  CHECK(lab04::predicted_classes(other) == std::vector<int>{3, 1});
}

TEST_CASE("classes: count_correct compares the argmax with the labels") {
  const Tensor logits(Shape{3, 4}, {0.1f, 2.0f, 2.0f, -1.0f, -5.0f, -4.0f, -3.0f, -2.5f, 9.0f, 1.0f, 1.0f, 1.0f});
  CHECK(lab04::count_correct(logits, {1, 3, 0}) == 3);
  CHECK(lab04::count_correct(logits, {2, 3, 1}) == 1);  // class 2 ties with 1 and loses
  CHECK(lab04::count_correct(logits, {0, 0, 2}) == 0);
  CHECK(lab04::count_correct(Tensor(Shape{1, 10}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 1}), {9}) == 1);

  // Random logits and labels, as many rows as a test split (1,996 like MNIST's) and a few other
  // sizes: the answer is counted here, so a count_correct that recognises the split's size and
  // returns a remembered number fails.
  course::Rng rng = grader::case_rng("classes: count_correct random");
  for (std::int64_t rows : {1996, 1000, 37}) {
    const Tensor random_logits = rng.tensor({rows, 10}, -10.0f, 10.0f);
    std::vector<std::uint8_t> labels(static_cast<std::size_t>(rows));
    for (auto& label : labels) label = static_cast<std::uint8_t>(rng.integer(0, 9));
    CHECK_MESSAGE(lab04::count_correct(random_logits, labels) == correct_labels(random_logits, labels),
                  rows << " random rows");
  }
}

TEST_CASE("classes: softmax is not needed, argmax of the logits is the class") {
  course::Rng rng = grader::case_rng("classes: random");
  const Tensor logits = rng.tensor({50, 10}, -10.0f, 10.0f);
  const std::vector<int> predicted = lab04::predicted_classes(logits);
  REQUIRE(predicted.size() == 50);
  for (std::size_t n = 0; n < 50; ++n) {
    int best = 0;
    for (int k = 1; k < 10; ++k)
      if (logits[n * 10 + static_cast<std::size_t>(k)] > logits[n * 10 + static_cast<std::size_t>(best)]) best = k;
    CHECK_MESSAGE(predicted[n] == best, "row " << n);
  }
}

TEST_CASE("classes: NaN logits, wrong shapes and label counts are rejected") {
  Tensor nan_row(Shape{2, 3}, {0.0f, 1.0f, 2.0f, 1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f});
  grader::check_rejects("a NaN logit", [&] { lab04::predicted_classes(nan_row); }, "row 1");
  Tensor nan_first(Shape{1, 3}, {std::numeric_limits<float>::quiet_NaN(), 1.0f, 2.0f});
  grader::check_rejects("a NaN in the first column", [&] { lab04::predicted_classes(nan_first); }, "logits");
  grader::check_rejects("1-D logits", [&] { lab04::predicted_classes(Tensor(Shape{10}, 0.0f)); }, "logits");
  grader::check_rejects("zero classes", [&] { lab04::predicted_classes(Tensor(Shape{3, 0})); }, "logits");
  grader::check_rejects("too few labels", [&] { lab04::count_correct(Tensor(Shape{3, 10}, 0.0f), {1, 2}); }, "labels");
}

TEST_CASE("classes: every small shape (N <= 3, K <= 6), with ties") {
  // Logits drawn from {0, 1, 2}: ties are everywhere, and the first largest index must win.
  course::Rng rng = grader::case_rng("classes sweep");
  grader::Sweep sweep("predicted_classes over every small shape");
  for (std::int64_t n = 1; n <= 3 && sweep.running(); ++n)
    for (std::int64_t k = 1; k <= 6 && sweep.running(); ++k) {
      Tensor logits(Shape{n, k});
      for (float& v : logits.values()) v = static_cast<float>(rng.integer(0, 2));
      sweep.run("logits " + course::shape_to_string(logits.shape()), [&]() -> std::string {
        const std::vector<int> got = lab04::predicted_classes(logits), want = golden_predictions(logits);
        for (std::size_t row = 0; row < want.size(); ++row)
          if (row >= got.size() || got[row] != want[row])
            return "row " + std::to_string(row) + ": expected class " + std::to_string(want[row]) + ", got " +
                   (row < got.size() ? std::to_string(got[row]) : std::string("no row"));
        return got.size() == want.size() ? "" : std::to_string(got.size()) + " predictions for " + std::to_string(want.size()) + " rows";
      });
    }
  sweep.finish(18);
}

TEST_CASE("lenet: fold_lenet folds both batch-norms with the file's epsilon") {
  const lab04_tests::Model& model = lab04_tests::mnist_model();
  const ln::Weights& w = model.weights;
  const lab04::FoldedLeNet net = lab04::fold_lenet(w);
  const lab04::FoldedLeNet expected = golden::lab04_fold_lenet(w);
  grader::check_tensor("folded conv1 weight", net.conv1_weight, expected.conv1_weight, lab04_tests::kLayerTolerance);
  grader::check_tensor("folded conv1 bias", net.conv1_bias, expected.conv1_bias, lab04_tests::kLayerTolerance);
  grader::check_tensor("folded conv2 weight", net.conv2_weight, expected.conv2_weight, lab04_tests::kLayerTolerance);
  grader::check_tensor("folded conv2 bias", net.conv2_bias, expected.conv2_bias, lab04_tests::kLayerTolerance);
  grader::check_tensor("fc1 weight (unchanged)", net.fc1_weight, w.at("fc1.weight"), {0.0, 0.0});
  grader::check_tensor("fc2 bias (unchanged)", net.fc2_bias, w.at("fc2.bias"), {0.0, 0.0});
  grader::check_tensor("fc3 weight (unchanged)", net.fc3_weight, w.at("fc3.weight"), {0.0, 0.0});
}

TEST_CASE("lenet: random weights, a non-default batch-norm epsilon and small batches") {
  course::Rng rng = grader::case_rng("lenet: random weights");
  for (double eps : {1e-3, 0.02}) {
    const ln::Weights w = random_weights(rng, eps);
    const std::string label = "random weights, eps " + std::to_string(eps);
    // The folded forward pass alone first, with parameters folded by the reference.
    const lab04::FoldedLeNet reference_net = golden::lab04_fold_lenet(w);
    const Tensor images = rng.tensor({3, 1, 28, 28}, 0.0f, 1.0f);
    const Tensor expected = golden::lenet_forward(w, images);
    Tensor logits = grader::poisoned({3, ln::kNumClasses});
    lab04::lenet_forward_folded(reference_net, images, logits);
    grader::check_tensor("folded pass with the reference's folded parameters, " + label, logits, expected,
                         kRandomLogitTolerance);

    const lab04::FoldedLeNet net = lab04::fold_lenet(w);
    for (std::int64_t n : {1, 3}) {
      const Tensor x = n == 3 ? images : rng.tensor({n, 1, 28, 28}, 0.0f, 1.0f);
      const Tensor want = n == 3 ? expected : golden::lenet_forward(w, x);
      Tensor unfolded = grader::poisoned({n, ln::kNumClasses});
      lab04::lenet_forward(w, x, unfolded);
      grader::check_tensor("unfolded, " + label + ", N=" + std::to_string(n), unfolded, want, kRandomLogitTolerance);
      Tensor folded = grader::poisoned({n, ln::kNumClasses});
      lab04::lenet_forward_folded(net, x, folded);
      grader::check_tensor("folded, " + label + ", N=" + std::to_string(n), folded, want, kRandomLogitTolerance);
    }
    // One logits buffer, two different batches: a result cached from the first call would fail.
    const Tensor a = rng.tensor({2, 1, 28, 28}, 0.0f, 1.0f), b = rng.tensor({2, 1, 28, 28}, 0.0f, 1.0f);
    const Tensor expected_b = golden::lenet_forward(w, b);
    Tensor reused = grader::poisoned({2, ln::kNumClasses});
    lab04::lenet_forward(w, a, reused);
    lab04::lenet_forward(w, b, reused);
    grader::check_tensor("unfolded, second batch on the same logits buffer, " + label, reused, expected_b,
                         kRandomLogitTolerance);
    lab04::lenet_forward_folded(net, a, reused);
    lab04::lenet_forward_folded(net, b, reused);
    grader::check_tensor("folded, second batch on the same logits buffer, " + label, reused, expected_b,
                         kRandomLogitTolerance);
  }
}

TEST_CASE("lenet: MNIST test split (folded: exact accuracy; unfolded == folded == golden == PyTorch)") {
  check_model(lab04_tests::mnist_model(), lab04_tests::mnist_model().test.images.dim(0), 500);
}

TEST_CASE("lenet: Fashion-MNIST (first 1,000 images: unfolded == folded == golden == PyTorch)") {
  check_model(lab04_tests::fashion_model(), 1000, 300);
}
