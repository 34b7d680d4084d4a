#include "testing/wire.h"

#include <boost/asio.hpp>

namespace kinference::testing {

std::string RawExchange(uint16_t port, const std::string& bytes, const std::string& until) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket s(io);
  s.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  boost::asio::write(s, boost::asio::buffer(bytes));
  return ReadUntil(s, until);
}

std::string ReadUntil(boost::asio::ip::tcp::socket& s, const std::string& until) {
  std::string got;
  char buf[4096];
  boost::system::error_code ec;
  while (true) {
    size_t n = s.read_some(boost::asio::buffer(buf), ec);
    if (ec) break;
    got.append(buf, n);
    if (!until.empty() && got.find(until) != std::string::npos) break;
  }
  return got;
}

std::vector<std::string> SseEvents(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    size_t end = body.find("\n\n", pos);
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  return out;
}

}  // namespace kinference::testing
