// The host-only half of lab07_ladder (runner.cu): the command line, the data a check needs, the
// check of one batch against the golden logits, and the output (table and CSV). Kept apart so that
// runner.cu reads as "check, then time".
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "course/device.hpp"
#include "course/error.hpp"
#include "course/idx.hpp"
#include "course/lenet.hpp"
#include "course/speed/plausibility.hpp"
#include "course/tensor.hpp"
#include "labs/lab04_lenet_cpu.hpp"
#include "ladder.hpp"

namespace runner {

constexpr std::size_t kPixelsPerImage = 28 * 28;
constexpr int kClasses = 10;
constexpr int kCpuMaxBatch = 1000;   ///< the CPU's time per image is flat: larger batches only cost minutes
constexpr int kMaxBatch = 100000;    ///< keeps every rung's activations far below INT_MAX elements
constexpr double kLogitTolerance = 1e-3;

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

enum class Mode { device, graph, host };

inline const char* to_string(Mode m) {
  switch (m) {
    case Mode::device: return "device";
    case Mode::graph: return "graph";
    case Mode::host: return "host";
  }
  return "?";
}

struct Options {
  std::vector<std::string> versions{"all"};  ///< "all", rung numbers, "naive", "cudnn", "cpu"
  std::vector<int> batches{1, 10, 100, 1000, 10000};
  std::vector<Mode> modes{Mode::device, Mode::graph, Mode::host};
  int repetitions = 20;
  std::string csv;
  bool check = true, list = false, help = false;
};

inline std::string usage() {
  return "lab07_ladder: lab 07's optimization ladder (plus cuDNN and the CPU), checked against the golden\n"
         "CPU LeNet on the MNIST and Fashion-MNIST test splits, then timed with Fashion-MNIST.\n\n"
         "  --list                      the rungs and pseudo-versions in this build, then exit\n"
         "  --version N[,N...]|all      rung numbers, or naive (= rung 3), cudnn, cpu (default all)\n"
         "  --batch B[,B...]            batch sizes, 1.." + std::to_string(kMaxBatch) +
         " (default 1,10,100,1000,10000;\n"
         "                              the CPU is timed up to " + std::to_string(kCpuMaxBatch) +
         " images)\n"
         "  --mode M[,M...]             device (CUDA events around forward), graph (forward replayed\n"
         "                              as a CUDA graph; n/a for rungs that sync or allocate), host\n"
         "                              (pinned uint8 pixels -> labels on the host, wall clock);\n"
         "                              default device,graph,host. The CPU is always timed as host.\n"
         "  --repetitions R             timed runs per row, median reported (default 20; slow rows\n"
         "                              get fewer, at least 3)\n"
         "  --csv FILE                  append one row per measurement (header if the file is new):\n"
         "                              source,version,name,mode,batch,median_ms,min_ms,us_per_image,\n"
         "                              gflop_per_s,percent_fp32_peak,device   (n/a where not capturable)\n"
         "  --no-check                  skip the check against the golden network (timed labels are\n"
         "                              then compared with the pipeline's own device result)\n"
         "  --help                      this text\n\n"
         "Exit status: 0 all checked and timed, 1 a pipeline failed, 2 bad arguments, 77 no GPU.\n"
         "Fashion-MNIST is read from $COURSE_FASHION_MNIST_DIR or /usr/share/datasets/fashion-mnist.\n";
}

inline std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> items;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (item.empty()) throw course::Error(option + ": empty item in '" + text + "'");
    items.push_back(item);
    if (comma == std::string::npos) return items;
    begin = comma + 1;
  }
}

/// A decimal integer in [low, high] and nothing else ("10k", "1e4", "-3", "" are errors).
inline int parse_int(const std::string& text, int low, int high, const std::string& what) {
  const bool digits = !text.empty() && text.size() <= 9 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long value = digits ? std::strtol(text.c_str(), nullptr, 10) : -1;
  if (!digits || value < low || value > high)
    throw course::Error(what + ": expected a whole number from " + std::to_string(low) + " to " +
                        std::to_string(high) + ", got '" + text + "'");
  return static_cast<int>(value);
}

inline Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const bool takes_value =
        arg.rfind("--version", 0) == 0 || arg.rfind("--batch", 0) == 0 || arg.rfind("--mode", 0) == 0 ||
        arg.rfind("--repetitions", 0) == 0 || arg.rfind("--csv", 0) == 0;
    const std::size_t eq = arg.find('=');
    if (takes_value) {
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        throw course::Error(arg + " needs a value");
      }
    } else if (eq != std::string::npos) {
      throw course::Error(arg.substr(0, eq) + " takes no value");
    }
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--list") {
      o.list = true;
    } else if (arg == "--no-check") {
      o.check = false;
    } else if (arg == "--version") {
      o.versions = split_list(value, arg);
      for (const std::string& v : o.versions) {
        if (v == "all" || v == "naive" || v == "cudnn" || v == "cpu") continue;
        (void)parse_int(v, 1, 99, "--version");
      }
      if (o.versions.size() > 1 && std::count(o.versions.begin(), o.versions.end(), "all") > 0)
        throw course::Error("--version: 'all' cannot be combined with other versions");
    } else if (arg == "--batch") {
      o.batches.clear();
      for (const std::string& b : split_list(value, arg)) o.batches.push_back(parse_int(b, 1, kMaxBatch, "--batch"));
    } else if (arg == "--mode") {
      o.modes.clear();
      for (const std::string& m : split_list(value, arg)) {
        if (m == "device") o.modes.push_back(Mode::device);
        else if (m == "graph") o.modes.push_back(Mode::graph);
        else if (m == "host") o.modes.push_back(Mode::host);
        else throw course::Error("--mode: expected device, graph or host, got '" + m + "'");
      }
    } else if (arg == "--repetitions") {
      o.repetitions = parse_int(value, 1, 100000, "--repetitions");
    } else if (arg == "--csv") {
      if (value.empty()) throw course::Error("--csv needs a file name");
      o.csv = value;
    } else {
      throw course::Error("unknown argument '" + std::string(argv[i]) + "'");
    }
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// Pipelines
// ---------------------------------------------------------------------------------------------

enum class Source { ladder, cudnn, cpu };

inline const char* to_string(Source s) {
  switch (s) {
    case Source::ladder: return "ladder";
    case Source::cudnn: return "cudnn";
    case Source::cpu: return "cpu";
  }
  return "?";
}

/// One thing to check and time: a registered rung, or a pseudo-version (cuDNN, the CPU).
struct Pipeline {
  Source source = Source::ladder;
  int number = 0;  ///< the rung's number; 0 for a pseudo-version
  std::string name, reason;
  std::function<std::unique_ptr<ladder::Rung>()> make;  ///< empty for the CPU
};

inline std::string describe(const Pipeline& p) {
  if (p.source != Source::ladder) return p.name;
  char number[16];
  std::snprintf(number, sizeof number, "%02d", p.number);
  return "rung " + std::string(number) + " " + p.name;
}

/// The pipelines the --version items name, in the ladder's order (rungs, cudnn, cpu), each once.
/// Throws course::Error for a rung number or a pseudo-version that this build does not have.
inline std::vector<Pipeline> select_pipelines(const std::vector<Pipeline>& available,
                                              const std::vector<std::string>& versions) {
  if (versions.size() == 1 && versions[0] == "all") return available;
  std::vector<bool> chosen(available.size(), false);
  for (const std::string& v : versions) {
    const bool pseudo = v == "cudnn" || v == "cpu";
    const int number = pseudo ? 0 : v == "naive" ? 3 : std::atoi(v.c_str());
    bool found = false;
    for (std::size_t i = 0; i < available.size(); ++i) {
      const Pipeline& p = available[i];
      if (pseudo ? p.name == v : (p.source == Source::ladder && p.number == number)) chosen[i] = found = true;
    }
    if (!found) {
      std::string have;
      for (const Pipeline& p : available) have += " " + (p.source == Source::ladder ? std::to_string(p.number) : p.name);
      throw course::Error("--version: '" + v + "' is not in this build (" +
                          (v == "cudnn" ? std::string("built without cuDNN; ") : std::string()) + "it has:" + have + ")");
    }
  }
  std::vector<Pipeline> selected;
  for (std::size_t i = 0; i < available.size(); ++i)
    if (chosen[i]) selected.push_back(available[i]);
  return selected;
}

inline void print_list(const std::vector<Pipeline>& available) {
  std::printf("version  name                      what it changes\n");
  for (const Pipeline& p : available)
    std::printf("%-8s %-25s %s\n", p.source == Source::ladder ? std::to_string(p.number).c_str() : p.name.c_str(),
                p.name.c_str(), p.reason.c_str());
}

// ---------------------------------------------------------------------------------------------
// Data and the check of one batch
// ---------------------------------------------------------------------------------------------

/// One test split with the network trained on it.
struct Split {
  std::string name;
  course::lenet::Weights weights;
  lab04::FoldedLeNet net;
  course::Dataset data;               ///< images as float [N,1,28,28] = pixel / 255, and labels
  std::vector<std::uint8_t> pixels;   ///< the same images as bytes [N,28,28]
  course::Tensor golden;              ///< golden logits [N,10] (empty with --no-check)
  std::vector<int> golden_labels;     ///< their argmax
  double golden_accuracy = 0;         ///< percent
};

/// argmax of each row of logits [n,10]; the lowest index wins a tie (like torch.argmax).
inline std::vector<int> argmax_rows(const float* logits, std::size_t n) {
  std::vector<int> labels(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float* row = logits + i * kClasses;
    int best = 0;
    for (int j = 1; j < kClasses; ++j)
      if (row[j] > row[best]) best = j;
    labels[i] = best;
  }
  return labels;
}

inline double accuracy_percent(const std::vector<int>& predicted, const std::vector<std::uint8_t>& truth) {
  std::size_t right = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) right += predicted[i] == static_cast<int>(truth[i]);
  return 100.0 * static_cast<double>(right) / static_cast<double>(truth.size());
}

inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

struct BatchVerdict {
  bool ok = true;
  double max_logit_error = 0;       ///< over the first n images (NaN/Inf count as infinite)
  std::size_t label_mismatches = 0;  ///< against the golden labels
  std::string problem;              ///< "" or "; "-separated descriptions
};

/// Judges the outputs of forward() on the first n images of `split` (buffers poisoned before: NaN
/// logits, labels -1). FP32: every label the golden one and every logit within 1e-3. Reduced
/// precision: finite logits, labels 0..9, and, given `own_labels`, the same labels as those (the
/// pipeline's result for the same images in a full batch). Either way nothing past image n written.
inline BatchVerdict judge_batch(const std::vector<float>& logits, const std::vector<int>& labels, const Split& split,
                                std::size_t n, bool fp32, const std::vector<int>* own_labels) {
  BatchVerdict v;
  std::size_t nonfinite = 0, out_of_range = 0, own_mismatch = 0, written_past = 0;
  for (std::size_t i = 0; i < n * kClasses; ++i) {
    if (!std::isfinite(logits[i])) {
      ++nonfinite;
      v.max_logit_error = INFINITY;
      continue;
    }
    v.max_logit_error = std::max(v.max_logit_error, std::fabs(double(logits[i]) - double(split.golden[i])));
  }
  for (std::size_t i = 0; i < n; ++i) {
    v.label_mismatches += labels[i] != split.golden_labels[i];
    out_of_range += labels[i] < 0 || labels[i] >= kClasses;
    if (own_labels != nullptr) own_mismatch += labels[i] != (*own_labels)[i];
  }
  for (std::size_t i = n * kClasses; i < logits.size(); ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &logits[i], sizeof bits);
    written_past += bits != 0xFFFFFFFFu;
  }
  for (std::size_t i = n; i < labels.size(); ++i) written_past += labels[i] != -1;

  const auto fail = [&v](const std::string& what) {
    v.ok = false;
    v.problem += " " + what + ";";
  };
  if (nonfinite > 0) fail(std::to_string(nonfinite) + " logits NaN/Inf (unwritten?)");
  if (out_of_range > 0) fail(std::to_string(out_of_range) + " labels outside 0..9 (unwritten?)");
  if (written_past > 0) fail(std::to_string(written_past) + " values written past image n");
  if (fp32 && v.label_mismatches > 0) fail(std::to_string(v.label_mismatches) + " labels differ from the golden ones");
  if (fp32 && !(v.max_logit_error <= kLogitTolerance)) fail("a logit differs from the golden one by more than 1e-3");
  if (own_mismatch > 0) fail(std::to_string(own_mismatch) + " labels differ from the same images in the full batch");
  return v;
}

// ---------------------------------------------------------------------------------------------
// Output: rows, the CSV and the table
// ---------------------------------------------------------------------------------------------

/// One measurement. median_ms < 0 means "n/a" (the mode does not apply, e.g. a graph of a rung
/// that synchronises).
struct Row {
  Source source = Source::ladder;
  int version = 0;
  std::string name, mode;
  int batch = 0;
  double median_ms = -1, min_ms = -1, us_per_image = 0, gflop_per_s = 0, percent_peak = 0;
  std::string device;
  bool available() const { return median_ms >= 0; }
};

inline Row make_row(const Pipeline& p, const std::string& mode, int batch, double median_ms, double min_ms,
                    double peak_flops_per_s, const std::string& device) {
  Row r;
  r.source = p.source;
  r.version = p.source == Source::ladder ? p.number : 0;
  r.name = p.name;
  r.mode = mode;
  r.batch = batch;
  r.median_ms = median_ms;
  r.min_ms = min_ms;
  r.device = device;
  if (r.available() && median_ms > 0) {
    const double flops = 2.0 * static_cast<double>(course::lenet::multiply_adds_per_image()) * batch;
    r.us_per_image = 1000.0 * median_ms / batch;
    r.gflop_per_s = flops / (median_ms / 1000.0) / 1e9;
    r.percent_peak = peak_flops_per_s > 0 ? 100.0 * r.gflop_per_s * 1e9 / peak_flops_per_s : 0.0;
  }
  return r;
}

inline const char* kCsvHeader =
    "source,version,name,mode,batch,median_ms,min_ms,us_per_image,gflop_per_s,percent_fp32_peak,device";

/// Appends rows to the --csv file as they are measured (a run cut short keeps what it measured).
class CsvWriter {
 public:
  explicit CsvWriter(const std::string& path) : path_(path) {
    if (path.empty()) return;
    std::ifstream existing(path, std::ios::binary | std::ios::ate);
    const bool is_new = !existing || existing.tellg() <= 0;
    out_.open(path, std::ios::app);
    if (!out_) throw course::Error("--csv: cannot open '" + path + "' for appending");
    if (is_new) out_ << kCsvHeader << '\n' << std::flush;
  }

  void write(const Row& r) {
    if (path_.empty()) return;
    const auto number = [&r](double value, const char* format) {
      if (!r.available()) return std::string("n/a");
      char text[64];
      std::snprintf(text, sizeof text, format, value);
      return std::string(text);
    };
    out_ << to_string(r.source) << ',' << (r.version > 0 ? std::to_string(r.version) : "") << ',' << quoted(r.name)
         << ',' << r.mode << ',' << r.batch << ',' << number(r.median_ms, "%.6f") << ',' << number(r.min_ms, "%.6f")
         << ',' << number(r.us_per_image, "%.4f") << ',' << number(r.gflop_per_s, "%.2f") << ','
         << number(r.percent_peak, "%.3f") << ',' << quoted(r.device) << '\n'
         << std::flush;
    if (!out_) throw course::Error("--csv: writing to '" + path_ + "' failed");
  }

 private:
  static std::string quoted(const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string q = "\"";
    for (const char c : text) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  }
  std::string path_;
  std::ofstream out_;
};

/// The readable table: grouped by mode and batch, with speed-ups over the previous rung timed at
/// the same mode and batch and over rung 03 (the lab 06 naive solution).
inline void print_table(const std::vector<Row>& rows, const course::DeviceInfo& device,
                        const course::speed::MachinePeak& peak) {
  std::printf("\n%s, FP32 peak %.1f TFLOP/s; FLOPs = 2 x %lld x batch\n", device.name.c_str(), peak.flops_per_s / 1e12,
              static_cast<long long>(course::lenet::multiply_adds_per_image()));
  std::printf("| ver | name                   | mode   |  batch |  median ms |  us/image |  GFLOP/s | %% FP32 peak | x prev | x rung 03 |\n");
  std::printf("|----:|------------------------|--------|-------:|-----------:|----------:|---------:|------------:|-------:|----------:|\n");
  std::vector<std::string> modes;
  std::vector<int> batches;
  for (const Row& r : rows) {
    if (std::find(modes.begin(), modes.end(), r.mode) == modes.end()) modes.push_back(r.mode);
    if (std::find(batches.begin(), batches.end(), r.batch) == batches.end()) batches.push_back(r.batch);
  }
  std::sort(batches.begin(), batches.end());
  const auto ratio = [](const Row* base, const Row& r) {
    if (base == nullptr || !base->available() || !r.available() || r.median_ms <= 0) return std::string("");
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", base->median_ms / r.median_ms);
    return std::string(text);
  };
  for (const std::string& mode : modes)
    for (const int batch : batches) {
      const Row* naive = nullptr;
      for (const Row& r : rows)
        if (r.mode == mode && r.batch == batch && r.source == Source::ladder && r.version == 3) naive = &r;
      const Row* previous = nullptr;
      for (const Row& r : rows) {
        if (r.mode != mode || r.batch != batch) continue;
        const std::string version = r.source == Source::ladder ? std::to_string(r.version) : "";
        if (!r.available()) {
          std::printf("| %3s | %-22s | %-6s | %6d |        n/a |           |          |             |        |           |\n",
                      version.c_str(), r.name.c_str(), mode.c_str(), batch);
        } else {
          std::printf("| %3s | %-22s | %-6s | %6d | %10.4f | %9.3f | %8.1f | %11.2f | %6s | %9s |\n", version.c_str(),
                      r.name.c_str(), mode.c_str(), batch, r.median_ms, r.us_per_image, r.gflop_per_s, r.percent_peak,
                      r.source == Source::ladder ? ratio(previous, r).c_str() : "", ratio(naive, r).c_str());
        }
        if (r.source == Source::ladder) previous = &r;
      }
    }
}

}  // namespace runner
