// A stand-in for libFuzzer's main, so that the fuzz targets run in every
// build (GCC, with AddressSanitizer and UndefinedBehaviorSanitizer) as a
// ctest: it replays the committed corpus, then feeds mutations of it
// (bit flips, byte changes, inserts, cuts, splices of two entries) from a
// fixed seed until --runs inputs or --seconds have passed. A finding
// aborts the process (the sanitizers, or the target's own abort), which
// fails the test; the input is written to ./crash-<n> first for replay.
//
//   job_spec_fuzz CORPUS_DIR [--runs N] [--seconds S] [--seed K]
//
// The offline runs with the real libFuzzer (millions of inputs) are
// scripts/fuzz.sh's.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The input being run, for the crash file.
std::string* g_current = nullptr;  // NOLINT: the signal handler reads it

void SaveCurrent(int signal_number) {
  if (g_current != nullptr) {
    std::ofstream("crash-input", std::ios::binary)
        .write(g_current->data(),
               static_cast<std::streamsize>(g_current->size()));
  }
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

void Run(std::string* input) {
  g_current = input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input->data()),
                         input->size());
}

std::string Mutate(const std::vector<std::string>& corpus,
                   std::mt19937_64& rng) {
  std::string s = corpus[rng() % corpus.size()];
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t at = s.empty() ? 0 : rng() % s.size();
    switch (rng() % 6) {
      case 0:  // flip a bit
        if (!s.empty()) s[at] = static_cast<char>(s[at] ^ (1 << (rng() % 8)));
        break;
      case 1:  // a random or an interesting byte
        if (!s.empty()) {
          static const char kInteresting[] = {
              0, 1, 0x7f, '\x80', '\xff', '"', '{', '}', '[', ']', ':', ','};
          s[at] = rng() % 2 ? static_cast<char>(rng())
                            : kInteresting[rng() % sizeof(kInteresting)];
        }
        break;
      case 2:  // insert bytes
        s.insert(at, std::string(1 + rng() % 8, static_cast<char>(rng())));
        break;
      case 3:  // cut
        if (!s.empty())
          s.erase(at, 1 + rng() % std::min<size_t>(s.size() - at, 16));
        break;
      case 4: {  // splice with another entry
        const std::string& other = corpus[rng() % corpus.size()];
        const size_t from = other.empty() ? 0 : rng() % other.size();
        s = s.substr(0, at) + other.substr(from);
        break;
      }
      default:  // truncate
        s.resize(at);
        break;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string corpus_dir;
  int64_t runs = 100000;
  double seconds = 10;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc) {
      runs = std::atoll(argv[++i]);
    } else if (arg == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      corpus_dir = arg;
    }
  }
  std::vector<std::string> corpus;
  if (!corpus_dir.empty()) {
    for (const auto& entry : std::filesystem::directory_iterator(corpus_dir)) {
      std::ifstream in(entry.path(), std::ios::binary);
      corpus.emplace_back(std::istreambuf_iterator<char>(in),
                          std::istreambuf_iterator<char>());
    }
  }
  if (corpus.empty()) corpus.emplace_back();
  std::signal(SIGABRT, SaveCurrent);
  std::signal(SIGSEGV, SaveCurrent);
  int64_t done = 0;
  for (std::string& input : corpus) {
    std::string copy = input;
    Run(&copy);
    ++done;
  }
  std::mt19937_64 rng(seed);
  const absl::Time until = absl::Now() + absl::Seconds(seconds);
  while (done < runs && absl::Now() < until) {
    std::string input = Mutate(corpus, rng);
    Run(&input);
    ++done;
  }
  std::printf("%s: %lld inputs (%zu from the corpus), no crash\n", argv[0],
              static_cast<long long>(done), corpus.size());
  return 0;
}
