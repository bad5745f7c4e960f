// Writes the binary seeds of the committed fuzz corpus (tests/fuzz/corpus)
// with the real encoders, so that they can be made again after a format
// change:  build/tests/fuzz/fuzz_make_corpus tests/fuzz/corpus
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "collectives/algorithms/collective_header.h"
#include "collectives/transports/tcp/wire.h"
#include "common/wire_version.h"
#include "proto/coordinator.pb.h"
#include "proto/ps.pb.h"
#include "server/ps/transport/tensor_codec.h"
#include "worker/train/checkpoint.h"

namespace {

void Save(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A gRPC message's bytes ("" if it cannot be read).
std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

// The checkpoint at `path`, written by WriteCheckpoint ("" if unreadable).
std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  // A handshake of rank 1 for rank 0 and a proof, a collective header.
  const gradsync::Handshake hs = gradsync::MakeHandshake("job-7/1", 1, 0, 4);
  std::string handshake(reinterpret_cast<const char*>(&hs), sizeof(hs));
  handshake.append(gradsync::kProofBytes, '\x5a');
  Save(dir + "/ring_wire_fuzz/handshake", handshake);
  gradsync::CollectiveHeader header{};
  header.magic = gradsync::kHeaderMagic;
  header.seq = 1;
  header.count = 1024;
  Save(dir + "/ring_wire_fuzz/header",
       std::string(reinterpret_cast<const char*>(&header), sizeof(header)));
  // A push: header, tensor, offset and 16 floats.
  gradsync::ps::PushHeader push;
  push.set_job_id("job-1");
  push.set_rank(1);
  push.set_step(3);
  push.set_chunk_bytes(64);
  push.set_token(std::string(32, 't'));
  const std::vector<float> grads(16, 0.5f);
  const grpc::ByteBuffer encoded = gradsync::EncodeTensorMessage(
      &push, 0, 16, gradsync::AsBytes(absl::MakeConstSpan(grads)), nullptr);
  const std::string push_bytes = Flatten(encoded);
  if (push_bytes.empty()) return 1;
  Save(dir + "/tensor_codec_fuzz/push", push_bytes);
  // The other tensor messages a PS peer reads: a push's next chunk (no
  // header), its trailer of late scalars (a header alone), a SeedShard's
  // first message and a state buffer's chunk (server side); a pull reply
  // and a fetched state's first message (client side).
  Save(dir + "/tensor_codec_fuzz/push_chunk",
       Flatten(gradsync::EncodeTensorMessage(
           nullptr, 0, 16, gradsync::AsBytes(absl::MakeConstSpan(grads)),
           nullptr)));
  gradsync::ps::PushHeader trailer;
  trailer.add_scalars(2.5);
  trailer.add_scalars(64);
  Save(dir + "/tensor_codec_fuzz/trailer",
       Flatten(gradsync::EncodeTensorMessage(&trailer, 0, 0, {}, nullptr)));
  gradsync::ps::SeedShardHeader seed;
  seed.set_job_id("job-1");
  seed.set_shard(1);
  seed.set_step(40);
  seed.set_optimizer("adam");
  seed.set_optimizer_step(40);
  seed.set_num_state_buffers(2);
  seed.set_token(std::string(32, 't'));
  Save(dir + "/tensor_codec_fuzz/seed_shard",
       Flatten(gradsync::EncodeTensorMessage(
           &seed, 0, 0, gradsync::AsBytes(absl::MakeConstSpan(grads)),
           nullptr)));
  Save(dir + "/tensor_codec_fuzz/seed_shard_buffer",
       Flatten(gradsync::EncodeTensorMessage(
           nullptr, 2, 8, gradsync::AsBytes(absl::MakeConstSpan(grads)),
           nullptr)));
  gradsync::ps::PullHeader pull;
  pull.set_version(4);
  pull.set_begin(16);
  pull.set_end(32);
  pull.add_scalar_sums(10.0);
  Save(dir + "/tensor_codec_fuzz/pull_reply",
       Flatten(gradsync::EncodeTensorMessage(
           &pull, 0, 0, gradsync::AsBytes(absl::MakeConstSpan(grads)),
           nullptr)));
  gradsync::ps::FetchStateHeader state;
  state.set_step(40);
  state.set_begin(16);
  state.set_end(32);
  state.set_optimizer("momentum");
  state.set_optimizer_step(40);
  state.set_num_state_buffers(1);
  Save(dir + "/tensor_codec_fuzz/fetch_state",
       Flatten(gradsync::EncodeTensorMessage(
           &state, 0, 0, gradsync::AsBytes(absl::MakeConstSpan(grads)),
           nullptr)));
  // A checkpoint of 16 parameters with Adam's two buffers.
  gradsync::OptimizerState adam;
  adam.kind = gradsync::OptimizerKind::kAdam;
  adam.step = 5;
  adam.size = 16;
  adam.buffers = {std::vector<float>(16, 0.25f), std::vector<float>(16, 2.0f)};
  const std::string ckpt = dir + "/checkpoint_fuzz/adam-16";
  std::remove(ckpt.c_str());
  if (!gradsync::WriteCheckpoint(ckpt, 5, std::vector<float>(16, 1.0f), adam)
           .ok()) {
    return 1;
  }
  // Plain SGD (no state buffers) and momentum (one), and a version-1 file
  // (magic GSCKPT01, no checksum trailer), which still loads.
  gradsync::OptimizerState sgd;
  sgd.kind = gradsync::OptimizerKind::kSgd;
  sgd.size = 16;
  gradsync::OptimizerState momentum;
  momentum.kind = gradsync::OptimizerKind::kMomentum;
  momentum.step = 3;
  momentum.size = 16;
  momentum.buffers = {std::vector<float>(16, -0.5f)};
  for (const auto& [name, state] :
       {std::pair<std::string, const gradsync::OptimizerState*>{"sgd-16", &sgd},
        {"momentum-16", &momentum}}) {
    const std::string path = dir + "/checkpoint_fuzz/" + name;
    std::remove(path.c_str());
    if (!gradsync::WriteCheckpoint(path, 3, std::vector<float>(16, 2.0f),
                                   *state)
             .ok()) {
      return 1;
    }
  }
  std::string v1 = ReadAll(dir + "/checkpoint_fuzz/sgd-16");
  if (v1.size() < 16) return 1;
  v1[7] = '1';
  v1.resize(v1.size() - sizeof(uint64_t));  // the checksum
  Save(dir + "/checkpoint_fuzz/sgd-16-v1", v1);
  // Coordinator requests: the selector byte, then the message.
  gradsync::SubmitJobRequest submit;
  gradsync::JobSpec* spec = submit.mutable_spec();
  spec->set_num_workers(1);
  spec->mutable_model()->set_kind("synthetic");
  spec->mutable_model()->set_synthetic_floats(64);
  spec->mutable_dataset()->set_name("synthetic");
  spec->mutable_optimizer()->set_name("sgd");
  spec->mutable_optimizer()->set_learning_rate(0.1);
  spec->set_batch_size(8);
  spec->set_steps(4);
  Save(dir + "/coordinator_request_fuzz/submit",
       std::string(1, '\0') + submit.SerializeAsString());
  gradsync::ReportRankRequest report;
  report.set_worker_id("w-1");
  report.set_job_id("job-1");
  report.set_state(gradsync::RANK_STATE_FAILED);
  Save(dir + "/coordinator_request_fuzz/forged_report",
       std::string(1, '\1') + report.SerializeAsString());
  gradsync::StoreSetRequest set;
  set.mutable_scope()->set_worker_id("w-1");
  set.mutable_scope()->set_job_id("job-1");
  set.mutable_scope()->set_generation(1);
  set.set_key("tcp/addr/0");
  set.set_value("10.0.0.66:1");
  Save(dir + "/coordinator_request_fuzz/forged_store_set",
       std::string(1, '\3') + set.SerializeAsString());
  // The other calls, by selector: 2 ReportMetrics, 4 StoreGet, 5
  // SwitchJob, 6 RegisterParameterServer, 7 Heartbeat.
  gradsync::ReportMetricsRequest metrics;
  metrics.set_worker_id("w-1");
  metrics.set_job_id("job-1");
  metrics.set_credential(std::string(32, 'c'));
  gradsync::StepMetrics* step = metrics.add_metrics();
  step->set_rank(0);
  step->set_step(2);
  step->set_loss(0.75);
  step->set_compute_s(0.01);
  step->set_comm_s(0.002);
  step->set_step_s(0.013);
  step->set_bytes_sent(256);
  step->set_samples(8);
  step->set_mode(gradsync::SYNC_MODE_RING);
  Save(dir + "/coordinator_request_fuzz/forged_metrics",
       std::string(1, '\2') + metrics.SerializeAsString());
  gradsync::StoreGetRequest get;
  *get.mutable_scope() = set.scope();
  get.set_key("tcp/addr/1");
  get.set_timeout_ms(1);
  Save(dir + "/coordinator_request_fuzz/forged_store_get",
       std::string(1, '\4') + get.SerializeAsString());
  gradsync::SwitchJobRequest to_ps;
  to_ps.set_job_id("job-1");
  to_ps.set_mode(gradsync::SYNC_MODE_PS);
  Save(dir + "/coordinator_request_fuzz/switch",
       std::string(1, '\5') + to_ps.SerializeAsString());
  gradsync::RegisterParameterServerRequest ps;
  ps.set_host("host-b");
  ps.set_address("127.0.0.1:7000");
  ps.set_pid(4242);
  ps.set_wire_version(gradsync::kWireVersion);
  Save(dir + "/coordinator_request_fuzz/register_ps",
       std::string(1, '\6') + ps.SerializeAsString());
  gradsync::HeartbeatRequest beat;
  beat.set_worker_id("w-1");
  beat.set_wait_ms(0);
  beat.set_credential(std::string(32, 'c'));
  Save(dir + "/coordinator_request_fuzz/forged_heartbeat",
       std::string(1, '\7') + beat.SerializeAsString());
  return 0;
}
