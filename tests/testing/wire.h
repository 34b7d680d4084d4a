// Test helpers for bytes on the wire (tests/testing/wire.h): RawExchange sends what no
// well-behaved client would send, on a fresh loopback connection, and returns what came
// back; SseEvents splits an SSE body into the data payloads of its events.
//
// Thread-safety: free functions; RawExchange blocks the calling thread on its own
// io_context, so it may be called while the server under test runs on another thread.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace kinference::testing {

// Sends `bytes` on a fresh connection to 127.0.0.1:`port`, then reads until the server
// closes it (or the read fails) or `until` appears in what was read.
std::string RawExchange(uint16_t port, const std::string& bytes, const std::string& until = {});

// Reads from a connected socket until the peer closes it (or the read fails) or `until`
// appears in what was read; returns all that was read.
std::string ReadUntil(boost::asio::ip::tcp::socket& s, const std::string& until = {});

// The data payloads of the events of an SSE body, in order: the text after each "data: "
// up to the blank line that ends its event.
std::vector<std::string> SseEvents(const std::string& body);

}  // namespace kinference::testing
