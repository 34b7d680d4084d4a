// The in-process tokenizer against real vLLM 0.32's /tokenize: the chat messages of
// tests/kv/fixtures/vllm032_requests.json (unicode, tools, a long prompt), rendered with
// the tiny model's chat template and tokenized with its tokenizer.json
// (fixtures/tiny-qwen2, made by scripts/vllm-env.sh), give vLLM's token ids exactly.
#include "tokenizer/bpe.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "tokenizer/chat_template.h"

namespace kinference::tokenizer {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kModel = std::string(TOKENIZER_FIXTURES_DIR) + "/tiny-qwen2/";

TEST(BpeTokenizerTest, ChatPromptsTokenizeAsVllmDoes) {
  auto tok = BpeTokenizer::FromModelDir(kModel);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ((*tok)->vocab_size(), 8192u);
  auto tmpl = ChatTemplate::Parse(Read(kModel + "chat_template.jinja"));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().message();
  EXPECT_EQ(tmpl->name(), "chatml");
  auto doc = boost::json::parse(Read(std::string(KV_FIXTURES_DIR) + "/vllm032_requests.json"));
  size_t checked = 0;
  bool tools = false;
  for (const auto& r : doc.as_array()) {
    std::vector<ChatMessage> messages;
    for (const auto& m : r.at("messages").as_array())
      messages.push_back(
          {std::string(m.at("role").as_string()), std::string(m.at("content").as_string())});
    std::vector<uint32_t> want;
    for (const auto& t : r.at("token_ids").as_array())
      want.push_back(static_cast<uint32_t>(t.as_int64()));
    EXPECT_EQ((*tok)->Encode(tmpl->Render(messages, true)), want) << "request " << checked;
    tools = tools || r.at("tools").as_bool();
    ++checked;
  }
  EXPECT_EQ(checked, 4u);
  EXPECT_TRUE(tools);
}

// tokenizer.json alone (GPT-2's pre-tokenizer) is not what vLLM runs for a Qwen2 model:
// " 0" is one token there, two under Qwen2's class override (digits split alone).
TEST(BpeTokenizerTest, Qwen2ClassOverridesTheFilesPreTokenizer) {
  auto file_only = BpeTokenizer::FromFile(kModel + "tokenizer.json");
  auto as_vllm = BpeTokenizer::FromModelDir(kModel);
  ASSERT_TRUE(file_only.ok() && as_vllm.ok());
  EXPECT_EQ((*file_only)->Encode(" 0").size(), 1u);
  EXPECT_EQ((*as_vllm)->Encode(" 0").size(), 2u);
}

TEST(BpeTokenizerTest, SpecialTokensAreSingleIdsAndBytesAlwaysEncode) {
  auto tok = BpeTokenizer::FromModelDir(kModel);
  ASSERT_TRUE(tok.ok());
  auto ids = (*tok)->Encode("<|im_start|><|im_end|><|endoftext|>");
  EXPECT_EQ(ids, (std::vector<uint32_t>{1, 2, 0}));
  // Invalid UTF-8 and control bytes still map to byte tokens: nothing is dropped.
  std::string odd = "\xff\xfe\x01 ok";
  EXPECT_FALSE((*tok)->Encode(odd).empty());
  EXPECT_TRUE((*tok)->Encode("").empty());
}

TEST(BpeTokenizerTest, RefusesWhatItCannotReproduce) {
  auto word_piece = BpeTokenizer::FromJson(
      R"({"normalizer": null, "pre_tokenizer": {"type": "BertPreTokenizer"},
          "model": {"type": "WordPiece", "vocab": {}}})");
  ASSERT_FALSE(word_piece.ok());
  EXPECT_NE(word_piece.status().message().find("BertPreTokenizer"), std::string::npos);
  EXPECT_FALSE(BpeTokenizer::FromJson("not json").ok());
  auto jinja = ChatTemplate::Parse("{% for m in messages %}{{ m.content }}{% endfor %}");
  ASSERT_FALSE(jinja.ok());
  EXPECT_EQ(jinja.status().code(), ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace kinference::tokenizer
