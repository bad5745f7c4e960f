/*
 * MPI_Allreduce bandwidth (fp32 sum), measured the way `gradsync bench
 * allreduce` measures it, for side-by-side comparisons
 * (scripts/bench/compare.sh builds it with mpicc).
 *
 * At each size S (bytes): -w untimed calls, a barrier, -n timed calls; the
 * time is the maximum over ranks of each rank's average, algbw = S / time,
 * busbw = algbw * 2(N-1)/N (nccl-tests' definitions). Out-of-place
 * (sendbuf != recvbuf) then in-place (MPI_IN_PLACE). Inputs are
 * verifiable as in gradsync: rank r's element i is (r+1) * P(i), P(i) in
 * [1, 16]; a final call per pass is checked element by element (#wrong).
 *
 *   mpicc -O2 -o mpi_allreduce scripts/bench/mpi_allreduce.c
 *   mpirun --oversubscribe -np 4 --mca btl self,tcp --mca pml ob1 \
 *     --mca btl_tcp_if_include lo ./mpi_allreduce -b 1M -e 256M [--json]
 *
 * Exit status, as gradsync bench's: 0 when every element was right, 1 on
 * wrong elements or an allocation failure, 2 on a bad command line.
 */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct options {
  size_t min_bytes, max_bytes;
  int factor, iters, warmup, check, json;
};

struct pass {
  double time_us, algbw, busbw;
  long long wrong; /* -1: unchecked */
};

static int parse_size(const char *text, size_t *out) {
  char *end = NULL;
  unsigned long long value = strtoull(text, &end, 10);
  if (end == text || text[0] == '-') return 0;
  switch (*end) {
    case 'K':
    case 'k':
      value <<= 10;
      ++end;
      break;
    case 'M':
    case 'm':
      value <<= 20;
      ++end;
      break;
    case 'G':
    case 'g':
      value <<= 30;
      ++end;
      break;
    default:
      break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return 0;
  *out = (size_t)value;
  return 1;
}

static int parse_args(int argc, char **argv, struct options *o) {
  o->min_bytes = 1 << 20;
  o->max_bytes = 64 << 20;
  o->factor = 2;
  o->iters = 20;
  o->warmup = 5;
  o->check = 1;
  o->json = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--json") == 0) {
      o->json = 1;
      continue;
    }
    if (v == NULL) return 0;
    ++i;
    if (strcmp(a, "-b") == 0) {
      if (!parse_size(v, &o->min_bytes)) return 0;
    } else if (strcmp(a, "-e") == 0) {
      if (!parse_size(v, &o->max_bytes)) return 0;
    } else if (strcmp(a, "-f") == 0) {
      o->factor = atoi(v);
    } else if (strcmp(a, "-n") == 0) {
      o->iters = atoi(v);
    } else if (strcmp(a, "-w") == 0) {
      o->warmup = atoi(v);
    } else if (strcmp(a, "-c") == 0) {
      o->check = atoi(v);
    } else {
      return 0;
    }
  }
  return o->min_bytes >= 4 && o->min_bytes <= o->max_bytes &&
         o->max_bytes / 4 <= (size_t)INT_MAX && o->factor >= 2 &&
         o->iters >= 1 && o->warmup >= 0;
}

static float pattern(size_t i) {
  return (float)(1u + ((uint32_t)(i * 2654435761u) >> 28));
}

static void fill(float *buf, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) buf[i] = (float)(rank + 1) * pattern(i);
}

static long long count_wrong(const float *buf, size_t count, int world) {
  const float sum = (float)world * (float)(world + 1) / 2.0f;
  long long wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (buf[i] != pattern(i) * sum) ++wrong;
  }
  return wrong;
}

/* One pass at one size: in place when send == NULL. */
static struct pass run_pass(float *send, float *recv, size_t count, int rank,
                            int world, const struct options *o) {
  struct pass p;
  const void *sendbuf = send != NULL ? (const void *)send : MPI_IN_PLACE;
  fill(send != NULL ? send : recv, count, rank);
  for (int i = 0; i < o->warmup; ++i) {
    MPI_Allreduce(sendbuf, recv, (int)count, MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < o->iters; ++i) {
    MPI_Allreduce(sendbuf, recv, (int)count, MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  }
  double local = (MPI_Wtime() - start) / o->iters, seconds = 0;
  MPI_Allreduce(&local, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  p.time_us = seconds * 1e6;
  p.algbw = seconds > 0 ? (double)(count * 4) / 1e9 / seconds : 0;
  p.busbw = p.algbw * 2.0 * (world - 1) / world;
  p.wrong = -1;
  if (o->check) {
    if (send == NULL) {
      fill(recv, count, rank);
    } else {
      for (size_t i = 0; i < count; ++i) recv[i] = -1.0f;
    }
    MPI_Allreduce(sendbuf, recv, (int)count, MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
    long long mine = count_wrong(recv, count, world);
    MPI_Allreduce(&mine, &p.wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  }
  return p;
}

static void print_pass_json(const char *name, const struct pass *p) {
  printf("\"%s\":{\"time_us\":%.6g,\"algbw\":%.6g,\"busbw\":%.6g,\"wrong\":",
         name, p->time_us, p->algbw, p->busbw);
  if (p->wrong < 0) {
    printf("null}");
  } else {
    printf("%lld}", p->wrong);
  }
}

static void print_pass_text(const struct pass *p) {
  char wrong[32];
  if (p->wrong < 0) {
    snprintf(wrong, sizeof(wrong), "N/A");
  } else {
    snprintf(wrong, sizeof(wrong), "%lld", p->wrong);
  }
  printf("  %7.1f  %6.2f  %6.2f  %6s", p->time_us, p->algbw, p->busbw, wrong);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  struct options o;
  if (!parse_args(argc, argv, &o)) {
    if (rank == 0) {
      fprintf(stderr,
              "usage: mpi_allreduce [-b SIZE] [-e SIZE] [-f N] [-n N] "
              "[-w N] [-c 0|1] [--json]\n");
    }
    MPI_Finalize();
    return 2;
  }
  const size_t max_count = o.max_bytes / 4;
  float *send = malloc(max_count * sizeof(float) + 4);
  float *recv = malloc(max_count * sizeof(float) + 4);
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "mpi_allreduce: rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0 && !o.json) {
    printf("# MPI_Allreduce (%s): %d ranks, warmup iters: %d iters: %d\n",
           "float sum", world, o.warmup, o.iters);
    printf("#%51s%22s%33s\n", "", "out-of-place", "in-place");
    printf(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s"
        "  %6s\n",
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
        "#wrong", "time", "algbw", "busbw", "#wrong");
  }
  long long total_wrong = 0;
  double busbw_sum = 0;
  int passes = 0;
  for (size_t size = o.min_bytes; size <= o.max_bytes; size *= o.factor) {
    const size_t count = size / 4;
    struct pass oop = run_pass(send, recv, count, rank, world, &o);
    struct pass ip = run_pass(NULL, recv, count, rank, world, &o);
    total_wrong +=
        (oop.wrong > 0 ? oop.wrong : 0) + (ip.wrong > 0 ? ip.wrong : 0);
    busbw_sum += oop.busbw + ip.busbw;
    passes += 2;
    if (rank != 0) continue;
    if (o.json) {
      printf(
          "{\"collective\":\"allreduce\",\"backend\":\"mpi\",\"algo\":"
          "\"ompi-tcp\",\"ranks\":%d,\"size\":%zu,\"count\":%zu,\"type\":"
          "\"float\",\"redop\":\"sum\",\"root\":-1,",
          world, count * 4, count);
      print_pass_json("out_of_place", &oop);
      printf(",");
      print_pass_json("in_place", &ip);
      printf("}\n");
    } else {
      printf("%12zu  %12zu  %8s  %6s  %6d", count * 4, count, "float", "sum",
             -1);
      print_pass_text(&oop);
      print_pass_text(&ip);
      printf("\n");
    }
    fflush(stdout);
  }
  if (rank == 0 && !o.json) {
    printf("# Out of bounds values : %lld %s\n", total_wrong,
           total_wrong == 0 ? "OK" : "FAILED");
    printf("# Avg bus bandwidth : %g\n", passes ? busbw_sum / passes : 0.0);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return total_wrong == 0 ? 0 : 1;
}
