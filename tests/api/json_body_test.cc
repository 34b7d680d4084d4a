// SerializeWith: a body serialised with a few top-level fields set, as if assigned.
#include "api/json_body.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace kinference::api {
namespace {

namespace json = boost::json;

TEST(SerializeWith, SameBytesAsAssigningTheFields) {
  const json::object body =
      json::parse(R"({"model":"m","messages":[{"role":"user","content":"a\"b"}],"n":1})")
          .as_object();
  const json::value model = "provider-m";
  const json::value stream = true;
  json::object assigned = body;
  assigned["model"] = model;    // there: keeps its place
  assigned["stream"] = stream;  // new: appended
  EXPECT_EQ(SerializeWith(body, {{"model", model}, {"stream", stream}}), json::serialize(assigned));
  EXPECT_EQ(SerializeWith(body, {}), json::serialize(body));
  EXPECT_EQ(SerializeWith(json::object{}, {{"k\n", stream}}), R"({"k\n":true})");
}

}  // namespace
}  // namespace kinference::api
