// minidb's TCP front end (net.cpp) and the wire format it shares with minidb-client
// (client.cpp): fixed-size little-endian messages, one request in flight per connection.
// docs/minidb.md, "Over TCP"; docs/multihost.md for the two-host demo.
#ifndef MINIDB_NET_HPP
#define MINIDB_NET_HPP

#include <netinet/in.h>

#include <cstdint>
#include <string>

namespace minidb {

// A request: the client's interval id (the server attaches to it; it is also the message
// key of the request and its reply) and the request's sequence number, from which the
// server draws the transaction (type and parameters) with the server's seed.
struct WireRequest {
  std::uint64_t interval;
  std::uint64_t seq;
};
// The reply: the request's interval id and whether the transaction committed.
struct WireReply {
  std::uint64_t interval;
  std::uint64_t status; // 0 = committed
};
static_assert(sizeof(WireRequest) == 16 && sizeof(WireReply) == 16, "wire sizes");

// Parses "a.b.c.d:port" into `out`; false if it is not an IPv4 address and port.
bool parse_ipv4_endpoint(const std::string &text, sockaddr_in &out);
// Reads or writes exactly n bytes (retrying on EINTR); false at end of stream or error.
bool read_full(int fd, void *buf, std::size_t n);
bool write_full(int fd, const void *buf, std::size_t n);

// The planted cause of --plant-us: stalls 0, 1, 2 or 6 x unit_us, drawn from `seq`.
void planted_stall(std::uint64_t seq, int unit_us);

// `minidb --listen ADDR:PORT [...]`: serves transactions over TCP until the expected
// clients have come and gone (net.cpp prints its flags with --listen --help). Returns the
// exit status.
int serve_tcp(int argc, char **argv);

} // namespace minidb

#endif // MINIDB_NET_HPP
