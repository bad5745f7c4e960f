// Writes the binary seeds of the committed fuzz corpus (tests/fuzz/corpus)
// with the real encoders, so that they can be made again after a format
// change:  build/tests/fuzz/fuzz_make_corpus tests/fuzz/corpus
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "collectives/tcp/wire.h"
#include "proto/coordinator.pb.h"
#include "proto/ps.pb.h"
#include "server/ps/tensor_codec.h"
#include "worker/train/checkpoint.h"

namespace {

void Save(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
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
  std::vector<grpc::Slice> slices;
  if (!encoded.Dump(&slices).ok()) return 1;
  std::string push_bytes;
  for (const grpc::Slice& s : slices) {
    push_bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  Save(dir + "/tensor_codec_fuzz/push", push_bytes);
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
  return 0;
}
