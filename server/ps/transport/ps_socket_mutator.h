// TCP congestion control on the parameter server's gRPC connections, by the
// policy the TCP ring uses for its own (common/tcp_congestion.h): with
// "auto", reno between processes of one host.
//
// Why: BBR, this host's default, paces loopback traffic too. With reno on
// both ends, gradsync-ps-bench's 4 x 64 MiB push/pull through one local
// server moved 3.12-3.27 GB/s against 2.34-2.73 under BBR (3 interleaved
// pairs; docs/performance/ps-transport.md).
//
// gRPC 1.51 has no channel option for it, only a socket mutator, an
// interface of its core that it does not install a header for; the .cc
// repeats that header's layout (checked against 1.51.1's source). Built
// against another gRPC version, these add nothing and connections keep the
// system's default (SocketMutatorSupported() says which).
//
// gRPC calls a client's mutator before it connects, so a client decides by
// the target's host (HostIsLocal); the server decides per accepted
// connection by its peer, setting it itself as it accepts (any gRPC). Setting
// the algorithm is best effort with "auto", and a named algorithm must pass
// CheckCongestionControl first: a mutator that failed would make gRPC drop the
// connection.
#ifndef GRADSYNC_SERVER_PS_TRANSPORT_PS_SOCKET_MUTATOR_H_
#define GRADSYNC_SERVER_PS_TRANSPORT_PS_SOCKET_MUTATOR_H_

#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>

#include <memory>
#include <string>

namespace gradsync {

// Whether this build can set socket options on gRPC's connections.
bool SocketMutatorSupported();

// Makes the connections of channels built from `args` to `target`
// ("host:port" or "[v6]:port") run the algorithm
// that `policy` gives a peer on that host; nothing for "default".
void SetClientCongestionControl(grpc::ChannelArguments* args,
                                const std::string& policy,
                                const std::string& target);

// Gives `fd`, a connection the server accepted (GrpcListener's on_accept:
// the server accepts its own, security/grpc_listener.h, so no mutator is
// involved), the algorithm that `policy` gives its peer; nothing for
// "default". Best effort, as above.
void SetAcceptedCongestionControl(int fd, const std::string& policy);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_TRANSPORT_PS_SOCKET_MUTATOR_H_
