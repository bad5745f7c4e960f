// gradsync-nccl-raw: the baseline that `gradsync bench allreduce --backend
// nccl` is held against. It calls ncclAllReduce directly, with nothing of
// gradsync in between (no Communicator, no Work handles, no events, no
// deadline polling), and times it the way gradsync's bench does, so that
// the difference of the two tables is what gradsync's NCCL path adds:
//
//   out-of-place: --warmup calls, then --iters calls, each followed by
//                 cudaStreamSynchronize (gradsync waits for every call), the
//                 wall time over the iters divided by iters;
//   in-place:     the same on one buffer, without warmup (as gradsync).
//
// It also prints, as nccl-tests does, the time per call when the iters are
// enqueued back to back and synchronised once ("pipelined"): the floor that
// no per-call wait reaches. Every result is checked element by element
// (#wrong). One rank on one GPU (ncclCommInitAll over one device): on a
// one-GPU machine that is what `gradsync bench --ranks 1` runs too.
//
// The header says which NCCL and CUDA it ran with: the versions the
// libraries report and the files they were loaded from.
//
//   gradsync-nccl-raw -b 1M -e 256M -f 2 -n 50 -w 10 [--device 0]
//
// Exit status, as gradsync bench's: 0 all results right, 1 wrong elements
// or errors (each names the call that failed), 2 bad arguments.
#include <cuda_runtime.h>
#include <link.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/wire_version.h"  // a constant only: no gradsync library

#ifndef GRADSYNC_VERSION
#error "GRADSYNC_VERSION is set by deploy/gpu/CMakeLists.txt"
#endif

namespace {

struct Options {
  size_t min_bytes = 1 << 20;
  size_t max_bytes = 64 << 20;
  int factor = 2;
  int iters = 20;
  int warmup = 5;
  int device = 0;
  bool call_costs = false;
};

struct Pass {
  double time_us = 0;
  double pipelined_us = 0;
  long long wrong = 0;
};

// Prints what failed and returns false, so that callers can `return 1`.
bool CudaOk(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "gradsync-nccl-raw: %s: %s\n", what,
               cudaGetErrorString(e));
  return false;
}

bool NcclOk(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return true;
  std::fprintf(stderr, "gradsync-nccl-raw: %s: %s\n", what,
               ncclGetErrorString(r));
  return false;
}

// "4096", "64K", "1M", "2G" (binary multiples, as gradsync bench reads them).
bool ParseSize(const char* text, size_t* out) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text) return false;
  size_t scale = 1;
  if (*end == 'K') scale = size_t{1} << 10;
  if (*end == 'M') scale = size_t{1} << 20;
  if (*end == 'G') scale = size_t{1} << 30;
  if (scale != 1) ++end;
  if (*end != '\0') return false;
  *out = static_cast<size_t>(value) * scale;
  return true;
}

bool ParseInt(const char* text, int lowest, int* out) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < lowest || value > 1000000) {
    return false;
  }
  *out = static_cast<int>(value);
  return true;
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "gradsync-nccl-raw: %s\nusage: gradsync-nccl-raw [-b MIN] "
               "[-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [--device N]"
               "\n",
               why);
  return 2;
}

// -1: go on; otherwise the exit status.
int ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--version") {
      std::printf("gradsync-nccl-raw %s (wire version %d)\n", GRADSYNC_VERSION,
                  static_cast<int>(gradsync::kWireVersion));
      return 0;
    }
    if (flag == "--help" || flag == "-h") {
      std::printf(
          "usage: gradsync-nccl-raw [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] "
          "[-w WARMUP] [--device N] [--call-costs]\n"
          "raw ncclAllReduce (fp32 sum), timed as `gradsync bench allreduce "
          "--backend nccl` times it; sizes take K/M/G (K = 1024)\n"
          "--call-costs: instead, the host time of each CUDA and NCCL call "
          "that gradsync's NCCL path makes around a collective\n");
      return 0;
    }
    if (flag == "--call-costs") {
      o->call_costs = true;
      continue;
    }
    if (i + 1 >= argc) return Usage(("no value after " + flag).c_str());
    const char* value = argv[++i];
    bool ok = false;
    if (flag == "-b") ok = ParseSize(value, &o->min_bytes);
    if (flag == "-e") ok = ParseSize(value, &o->max_bytes);
    if (flag == "-f") ok = ParseInt(value, 2, &o->factor);
    if (flag == "-n") ok = ParseInt(value, 1, &o->iters);
    if (flag == "-w") ok = ParseInt(value, 0, &o->warmup);
    if (flag == "--device") ok = ParseInt(value, 0, &o->device);
    if (!ok) return Usage((flag + " " + value + " is not understood").c_str());
  }
  if (o->min_bytes < sizeof(float) || o->min_bytes > o->max_bytes) {
    return Usage("need 4 <= -b <= -e");
  }
  return -1;
}

// The files the dynamic loader mapped whose names mention NCCL or CUDA.
int ListLibrary(dl_phdr_info* info, size_t, void* out) {
  const std::string name = info->dlpi_name ? info->dlpi_name : "";
  if (name.find("nccl") != std::string::npos ||
      name.find("libcuda") != std::string::npos) {
    static_cast<std::vector<std::string>*>(out)->push_back(name);
  }
  return 0;
}

// One pass at one size: `send` may equal `recv` (in place).
bool RunPass(ncclComm_t comm, cudaStream_t stream, const float* send,
             float* recv, size_t count, int warmup, int iters,
             const std::vector<float>& input, std::vector<float>* host,
             Pass* pass) {
  const size_t bytes = count * sizeof(float);
  if (!CudaOk(cudaMemcpy(const_cast<float*>(send), input.data(), bytes,
                         cudaMemcpyHostToDevice),
              "cudaMemcpy (input)")) {
    return false;
  }
  auto call = [&]() {
    return NcclOk(
        ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream),
        "ncclAllReduce");
  };
  auto sync = [&]() {
    return CudaOk(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  };
  for (int i = 0; i < warmup; ++i) {
    if (!call() || !sync()) return false;
  }
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    if (!call() || !sync()) return false;
  }
  pass->time_us =
      std::chrono::duration<double, std::micro>(Clock::now() - start).count() /
      iters;
  start = Clock::now();
  for (int i = 0; i < iters; ++i) {
    if (!call()) return false;
  }
  if (!sync()) return false;
  pass->pipelined_us =
      std::chrono::duration<double, std::micro>(Clock::now() - start).count() /
      iters;
  // One more call from a fresh input into a poisoned output, checked: with
  // one rank the sum is the input itself, bit for bit.
  if (send != recv &&
      !CudaOk(cudaMemset(recv, 0xff, bytes), "cudaMemset (output)")) {
    return false;
  }
  if (!CudaOk(cudaMemcpy(const_cast<float*>(send), input.data(), bytes,
                         cudaMemcpyHostToDevice),
              "cudaMemcpy (input)") ||
      !call() || !sync() ||
      !CudaOk(cudaMemcpy(host->data(), recv, bytes, cudaMemcpyDeviceToHost),
              "cudaMemcpy (output)")) {
    return false;
  }
  pass->wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(&(*host)[i], &input[i], sizeof(float)) != 0) ++pass->wrong;
  }
  return true;
}

// The median host time of `call` over 2000 calls, in microseconds.
template <typename Call>
double MedianMicros(Call call) {
  std::vector<double> us(2000);
  for (double& t : us) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    t = std::chrono::duration<double, std::micro>(
            std::chrono::steady_clock::now() - t0)
            .count();
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

// --call-costs: what each call that gradsync's NCCL path adds to a
// collective (validation, device guard, timing events, completion polls)
// costs on this host, next to an in-place one-rank ncclAllReduce with
// cudaStreamSynchronize: where the bench's per-call overhead goes.
int PrintCallCosts(ncclComm_t comm, cudaStream_t stream, float* buffer) {
  cudaEvent_t timed = nullptr, untimed = nullptr;
  if (!CudaOk(cudaEventCreate(&timed), "cudaEventCreate") ||
      !CudaOk(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming),
              "cudaEventCreateWithFlags")) {
    return 1;
  }
  struct Row {
    const char* what;
    double us;
  };
  int device = 0;
  cudaPointerAttributes attributes{};
  ncclResult_t async = ncclSuccess;
  const Row rows[] = {
      {"ncclAllReduce 1 KiB in place + cudaStreamSynchronize",
       MedianMicros([&] {
         ncclAllReduce(buffer, buffer, 256, ncclFloat32, ncclSum, comm, stream);
         cudaStreamSynchronize(stream);
       })},
      {"cudaPointerGetAttributes",
       MedianMicros([&] { cudaPointerGetAttributes(&attributes, buffer); })},
      {"cudaGetDevice", MedianMicros([&] { cudaGetDevice(&device); })},
      {"cudaEventCreate + cudaEventDestroy", MedianMicros([&] {
         cudaEvent_t e = nullptr;
         cudaEventCreate(&e);
         cudaEventDestroy(e);
       })},
      {"cudaEventRecord (timing event)",
       MedianMicros([&] { cudaEventRecord(timed, stream); })},
      {"cudaEventRecord (cudaEventDisableTiming)",
       MedianMicros([&] { cudaEventRecord(untimed, stream); })},
      {"cudaEventQuery (done)", MedianMicros([&] {
         cudaStreamSynchronize(stream);
         cudaEventQuery(timed);
       })},
      {"cudaStreamSynchronize (idle)",
       MedianMicros([&] { cudaStreamSynchronize(stream); })},
      {"ncclCommGetAsyncError",
       MedianMicros([&] { ncclCommGetAsyncError(comm, &async); })},
  };
  std::printf("# host time per call, median of 2000 (us)\n");
  for (const Row& row : rows) std::printf("%10.2f  %s\n", row.us, row.what);
  cudaEventDestroy(timed);
  cudaEventDestroy(untimed);
  return CudaOk(cudaStreamSynchronize(stream), "cudaStreamSynchronize") ? 0 : 1;
}

void PrintHeader(const Options& o, int nccl_version, int runtime, int driver,
                 const cudaDeviceProp& prop,
                 const std::vector<std::string>& libraries) {
  std::printf("# gradsync-nccl-raw allreduce: raw ncclAllReduce, 1 ranks\n");
  std::printf(
      "# NCCL %d.%d.%d, CUDA runtime %d, driver API %d, device %d: %s\n",
      nccl_version / 10000, nccl_version / 100 % 100, nccl_version % 100,
      runtime, driver, o.device, prop.name);
  for (const std::string& lib : libraries)
    std::printf("# loaded %s\n", lib.c_str());
  std::printf(
      "# nThread 1 nRanks 1 minBytes %zu maxBytes %zu step: %d(factor) "
      "warmup iters: %d iters: %d validation: 1\n#\n",
      o.min_bytes, o.max_bytes, o.factor, o.warmup, o.iters);
  std::printf("#%51s%s%s\n", "", "           out-of-place           ",
              "             in-place            ");
  std::printf(
      "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
      "%6s  %10s  %10s\n",
      "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
      "#wrong", "time", "algbw", "busbw", "#wrong", "pipe-oop", "pipe-ip");
  std::printf(
      "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
      "%6s  %10s  %10s\n",
      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
      "(GB/s)", "(GB/s)", "", "(us)", "(us)");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const int done = ParseOptions(argc, argv, &o); done >= 0) return done;

  int nccl_version = 0, runtime = 0, driver = 0;
  cudaDeviceProp prop{};
  if (!NcclOk(ncclGetVersion(&nccl_version), "ncclGetVersion") ||
      !CudaOk(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion") ||
      !CudaOk(cudaDriverGetVersion(&driver), "cudaDriverGetVersion") ||
      !CudaOk(cudaSetDevice(o.device), "cudaSetDevice") ||
      !CudaOk(cudaGetDeviceProperties(&prop, o.device),
              "cudaGetDeviceProperties")) {
    return 1;
  }
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
  const size_t max_count = o.max_bytes / sizeof(float);
  if (!NcclOk(ncclCommInitAll(&comm, 1, &o.device), "ncclCommInitAll") ||
      !CudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
              "cudaStreamCreate") ||
      !CudaOk(cudaMalloc(&send, max_count * sizeof(float)), "cudaMalloc") ||
      !CudaOk(cudaMalloc(&recv, max_count * sizeof(float)), "cudaMalloc")) {
    return 1;
  }
  std::vector<std::string> libraries;
  dl_iterate_phdr(ListLibrary, &libraries);
  PrintHeader(o, nccl_version, runtime, driver, prop, libraries);
  if (o.call_costs) return PrintCallCosts(comm, stream, send);

  // Small integers: every sum is exact, so the check is bitwise.
  std::vector<float> input(max_count), host(max_count);
  for (size_t i = 0; i < max_count; ++i) input[i] = static_cast<float>(i % 251);
  long long wrong = 0;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const size_t count = bytes / sizeof(float);
    Pass oop, ip;
    if (!RunPass(comm, stream, send, recv, count, o.warmup, o.iters, input,
                 &host, &oop) ||
        !RunPass(comm, stream, recv, recv, count, 0, o.iters, input, &host,
                 &ip)) {
      return 1;
    }
    wrong += oop.wrong + ip.wrong;
    const double size = static_cast<double>(count * sizeof(float));
    const double oop_bw = size / oop.time_us / 1e3;
    const double ip_bw = size / ip.time_us / 1e3;
    // busbw = algbw * 2(N-1)/N: 0 with one rank, as nccl-tests prints.
    std::printf(
        "%12zu  %12zu  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %6lld  "
        "%7.2f  %6.2f  %6.2f  %6lld  %10.2f  %10.2f\n",
        count * sizeof(float), count, "float", "sum", -1, oop.time_us, oop_bw,
        0.0, oop.wrong, ip.time_us, ip_bw, 0.0, ip.wrong, oop.pipelined_us,
        ip.pipelined_us);
    std::fflush(stdout);
    if (bytes > o.max_bytes / o.factor) break;
  }
  std::printf("# Out of bounds values : %lld %s\n#\n", wrong,
              wrong == 0 ? "OK" : "FAILED");
  cudaFree(send);
  cudaFree(recv);
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  return wrong == 0 ? 0 : 1;
}
