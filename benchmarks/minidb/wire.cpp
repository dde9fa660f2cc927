// The wire helpers shared by minidb's TCP front end (net.cpp) and minidb-client
// (client.cpp): endpoint parsing and whole-message reads and writes.
#include "net.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace minidb {

bool parse_ipv4_endpoint(const std::string &text, sockaddr_in &out) {
  std::size_t colon = text.rfind(':');
  if (colon == std::string::npos)
    return false;
  std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  char *end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end || p < 1 || p > 65535)
    return false;
  std::memset(&out, 0, sizeof out);
  out.sin_family = AF_INET;
  out.sin_port = htons(static_cast<std::uint16_t>(p));
  return inet_pton(AF_INET, host.c_str(), &out.sin_addr) == 1;
}

bool read_full(int fd, void *buf, std::size_t n) {
  auto *p = static_cast<char *>(buf);
  while (n > 0) {
    ssize_t k = read(fd, p, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k;
    n -= std::size_t(k);
  }
  return true;
}

bool write_full(int fd, const void *buf, std::size_t n) {
  const auto *p = static_cast<const char *>(buf);
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k;
    n -= std::size_t(k);
  }
  return true;
}

} // namespace minidb
