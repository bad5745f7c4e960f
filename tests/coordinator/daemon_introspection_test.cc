// Every gradsync daemon's gRPC server answers gRPC's standard health check
// (grpc.health.v1.Health/Check: SERVING) and server reflection
// (grpc.reflection.v1alpha: its services listed), as Kubernetes probes,
// grpc_health_probe, grpcurl and grpc_cli expect; so does the plaintext
// probe port (--health-listen, observability/health_server.h), with readiness.
// The calls are made with raw bytes, as those tools send them: the tests
// link no generated code for either protocol.
#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/sync_stream.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "observability/health_server.h"
#include "server/coordinator/coordinator_server.h"
#include "server/ps/daemon/ps_server.h"
#include "server/store/store_server.h"
#include "tests/util/health_check.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::HealthStatusOf;
using ::gradsync::testing::IsOkAndHolds;
using ::gradsync::testing::kHealthNotServing;
using ::gradsync::testing::kHealthServing;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kHealthCheck[] = "/grpc.health.v1.Health/Check";
constexpr char kReflection[] =
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

std::string Bytes(const grpc::ByteBuffer& buffer) {
  return testing::HealthBytes(buffer);
}

grpc::ByteBuffer Buffer(const std::string& bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  return context;
}

// HealthCheckResponse's bytes for the whole server (service "").
std::string HealthOf(const std::string& address) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::ByteBuffer response;
  std::unique_ptr<grpc::ClientContext> context = Context();
  const grpc::Status status =
      grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
          channel.get(),
          grpc::internal::RpcMethod(kHealthCheck,
                                    grpc::internal::RpcMethod::NORMAL_RPC),
          context.get(), Buffer(""), &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return Bytes(response);
}

using ReflectionStream =
    grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

// A reflection stream to `channel` under `context`; sends `request` (a raw
// ServerReflectionRequest) and closes the writing side.
std::unique_ptr<ReflectionStream> Reflect(grpc::Channel* channel,
                                          grpc::ClientContext* context,
                                          const std::string& request) {
  std::unique_ptr<ReflectionStream> stream(
      grpc::internal::
          ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
              channel,
              grpc::internal::RpcMethod(
                  kReflection, grpc::internal::RpcMethod::BIDI_STREAMING),
              context));
  (void)stream->Write(Buffer(request));
  stream->WritesDone();
  return stream;
}

// The raw ServerReflectionResponse to list_services.
std::string ServicesOf(const std::string& address) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  std::unique_ptr<grpc::ClientContext> context = Context();
  // ServerReflectionRequest{list_services: ""}: field 7, length 0.
  std::unique_ptr<ReflectionStream> stream =
      Reflect(channel.get(), context.get(), std::string("\x3a\x00", 2));
  grpc::ByteBuffer response;
  std::string out;
  while (stream->Read(&response)) out += Bytes(response);
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  return out;
}

// How a reflection call for `symbol`'s file ends (field 4,
// file_containing_symbol).
absl::StatusCode ReflectionCodeOf(const std::string& address,
                                  const std::string& symbol) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  std::unique_ptr<grpc::ClientContext> context = Context();
  std::string request("\x22", 1);
  request += static_cast<char>(symbol.size());
  request += symbol;
  std::unique_ptr<ReflectionStream> stream =
      Reflect(channel.get(), context.get(), request);
  grpc::ByteBuffer response;
  while (stream->Read(&response)) {
  }
  return static_cast<absl::StatusCode>(stream->Finish().error_code());
}

// HealthCheckResponse{status: SERVING}: field 1, value 1.
const std::string kServing("\x08\x01", 2);

TEST(DaemonIntrospectionTest, Coordinator_ServingAndReflected) {
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
      CoordinatorServer::Start("127.0.0.1:0", CoordinatorConfig());
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(HealthOf((*server)->address()), kServing);
  EXPECT_THAT(ServicesOf((*server)->address()),
              HasSubstr("gradsync.Coordinator"));
  EXPECT_EQ(ReflectionCodeOf((*server)->address(), "gradsync.Coordinator"),
            absl::StatusCode::kOk);
}

TEST(DaemonIntrospectionTest, ParameterServer_ServingAndReflected) {
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(HealthOf((*server)->address()), kServing);
  EXPECT_THAT(ServicesOf((*server)->address()),
              HasSubstr("gradsync.ps.ParameterServer"));
}

TEST(DaemonIntrospectionTest, Store_ServingAndReflected) {
  absl::StatusOr<std::unique_ptr<StoreServer>> server =
      StoreServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(HealthOf((*server)->address()), kServing);
  EXPECT_THAT(ServicesOf((*server)->address()),
              HasSubstr("gradsync.store.StoreService"));
}

TEST(HealthServerTest, LiveAtOnce_ReadyWhenSaid_NotServingAtShutdown) {
  absl::StatusOr<std::unique_ptr<HealthServer>> health =
      HealthServer::Start("127.0.0.1:0", "test-daemon");
  ASSERT_TRUE(health.ok()) << health.status();
  const std::string address = (*health)->address();
  EXPECT_THAT(HealthStatusOf(address), IsOkAndHolds(kHealthServing));
  EXPECT_THAT(HealthStatusOf(address, kReadyService),
              IsOkAndHolds(kHealthNotServing));
  (*health)->SetReady(true);
  EXPECT_THAT(HealthStatusOf(address, kReadyService),
              IsOkAndHolds(kHealthServing));
  (*health)->SetReady(false);
  EXPECT_THAT(HealthStatusOf(address, kReadyService),
              IsOkAndHolds(kHealthNotServing));
  // Nothing but health on the probe port: no reflection, which would hand
  // anyone the API's descriptors (the daemons' own ports keep it, under
  // TLS; the positive control is DaemonIntrospectionTest above).
  EXPECT_THAT(HealthStatusOf(address, "gradsync.Coordinator"),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(ReflectionCodeOf(address, "gradsync.Coordinator"),
            absl::StatusCode::kUnimplemented);
  (*health)->Shutdown();
  (*health)->Shutdown();      // idempotent
  (*health)->SetReady(true);  // ignored
  EXPECT_FALSE(HealthStatusOf(address).ok());
}

TEST(HealthServerTest, BadOrTakenAddress_ClearErrorNothingServed) {
  EXPECT_THAT(HealthServer::Start("no-port", "test-daemon").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--health-listen 'no-port' is not "
                                 "HOST:PORT")));
  absl::StatusOr<std::unique_ptr<HealthServer>> first =
      HealthServer::Start("127.0.0.1:0", "test-daemon");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(HealthServer::Start((*first)->address(), "test-daemon").status(),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("test-daemon: cannot serve health checks on "
                                 "--health-listen")));
  // The first one is untouched.
  EXPECT_THAT(HealthStatusOf((*first)->address()),
              IsOkAndHolds(kHealthServing));
  absl::StatusOr<std::unique_ptr<HealthServer>> none =
      ServeDaemonHealth("", "test-daemon");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, nullptr);
}

}  // namespace
}  // namespace gradsync
