// The CRDs (deploy/helm/kinference/crds/) and the C++ readers agree: every example policy
// is valid under both; an object setting every field the schema declares is accepted by
// the reader (so the schema declares nothing the reader would refuse); unknown fields are
// refused by both. The same agreement against a real API server is in tests/k8s_env/.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "crd/resources.h"
#include "yaml_json.h"

namespace kinference::crd {
namespace {

namespace json = boost::json;
using kinference::testing::MaximalValue;
using kinference::testing::ValidateSchema;
using kinference::testing::YamlToJson;

std::string Src(const std::string& rel) { return std::string(KINFERENCE_SOURCE_DIR) + "/" + rel; }

YAML::Node Schema(const std::string& crd_file) {
  YAML::Node crd = YAML::LoadFile(Src("deploy/helm/kinference/crds/" + crd_file));
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

std::vector<std::string> Validate(const json::value& v, const YAML::Node& schema) {
  std::vector<std::string> errors;
  ValidateSchema(v, schema, "", errors);
  return errors;
}

json::object WithMetadata(json::value spec, const std::string& name) {
  return json::object{{"apiVersion", "kinference.io/v1alpha1"},
                      {"metadata", json::object{{"name", name}, {"namespace", "ns"}}},
                      {"spec", std::move(spec)}};
}

TEST(CrdSchemaAgreement, EveryExamplePolicyIsValidForTheSchemaAndTheLoader) {
  YAML::Node schema = Schema("inferencepolicies.kinference.io.yaml");
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(Src("examples/policies"))) {
    for (const auto& doc : YAML::LoadAllFromFile(entry.path().string())) {
      json::value obj = YamlToJson(doc);
      obj.as_object()["metadata"].as_object()["namespace"] = "ns";
      auto errors = Validate(obj.at("spec"), schema["properties"]["spec"]);
      EXPECT_TRUE(errors.empty()) << entry.path() << ": " << errors.front();
      auto p = PolicyFromObject(obj.as_object());
      EXPECT_TRUE(p.ok()) << entry.path() << ": " << p.status().message();
      ++n;
    }
  }
  EXPECT_GE(n, 3);
}

TEST(CrdSchemaAgreement, EveryPolicySchemaFieldIsKnownToTheLoader) {
  YAML::Node spec_schema = Schema("inferencepolicies.kinference.io.yaml")["properties"]["spec"];
  json::value spec = MaximalValue(spec_schema);
  ASSERT_TRUE(Validate(spec, spec_schema).empty());
  auto p = PolicyFromObject(WithMetadata(spec, "max"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->alternatives.size(), 1u);
  EXPECT_TRUE(p->constraints.include.has_value());
  EXPECT_TRUE(p->match.features.stream.has_value());
}

TEST(CrdSchemaAgreement, UnknownPolicyFieldsAreRefusedByBothWithTheFieldPath) {
  YAML::Node spec_schema = Schema("inferencepolicies.kinference.io.yaml")["properties"]["spec"];
  json::object spec{{"constraints",
                     json::object{{"exclude", json::object{{"clases", json::array{"provider"}}}}}}};
  auto errors = Validate(spec, spec_schema);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("constraints.exclude: unknown field clases"), std::string::npos);
  auto p = PolicyFromObject(WithMetadata(spec, "typo"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(FieldPathOf(p.status().message()), "spec.constraints.exclude.clases");
}

TEST(CrdSchemaAgreement, EveryProviderSchemaFieldIsKnownToTheReader) {
  YAML::Node spec_schema = Schema("inferenceproviders.kinference.io.yaml")["properties"]["spec"];
  json::value spec = MaximalValue(spec_schema);
  // Values the CEL rules and formats constrain beyond what MaximalValue knows.
  spec.as_object()["baseURL"] = "https://api.example.com/v1";
  spec.as_object()["timeoutSeconds"] = 30;
  auto& ca = spec.as_object()["caBundle"].as_object();
  ca.erase("configMapRef");  // exactly one of the two
  ASSERT_TRUE(Validate(spec, spec_schema).empty()) << Validate(spec, spec_schema).front();
  auto p = ProviderFromObject(WithMetadata(spec, "max"));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->ca_kind, "Secret");
  EXPECT_EQ(p->models.size(), 1u);
}

TEST(CrdSchemaAgreement, EveryTenantSchemaFieldIsKnownToTheReader) {
  YAML::Node spec_schema = Schema("inferencetenants.kinference.io.yaml")["properties"]["spec"];
  json::value spec = MaximalValue(spec_schema);
  ASSERT_TRUE(Validate(spec, spec_schema).empty());
  auto t = TenantFromObject(WithMetadata(spec, "max"));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->api_keys.size(), 1u);
  EXPECT_EQ(t->models.size(), 1u);
  ASSERT_TRUE(t->limits.has_value());
  EXPECT_EQ(t->limits->spend_per_day, 12'500'000'000);
  EXPECT_EQ(t->limits->on_unavailable, accounting::OnUnavailable::kFailOpen);
}

TEST(CrdSchemaAgreement, EveryCrdHasStatusSubresourceConditionsAndPrinterColumns) {
  for (const char* file :
       {"inferencepolicies.kinference.io.yaml", "inferenceproviders.kinference.io.yaml",
        "inferencetenants.kinference.io.yaml"}) {
    YAML::Node crd = YAML::LoadFile(Src(std::string("deploy/helm/kinference/crds/") + file));
    EXPECT_EQ(crd["spec"]["group"].Scalar(), "kinference.io") << file;
    EXPECT_EQ(crd["spec"]["scope"].Scalar(), "Namespaced") << file;
    auto v = crd["spec"]["versions"][0];
    EXPECT_EQ(v["name"].Scalar(), "v1alpha1") << file;
    EXPECT_TRUE(v["subresources"]["status"]) << file;
    EXPECT_TRUE(v["additionalPrinterColumns"].size() >= 2) << file;
    auto status = v["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"];
    EXPECT_TRUE(status["observedGeneration"]) << file;
    EXPECT_EQ(status["conditions"]["x-kubernetes-list-type"].Scalar(), "map") << file;
    // Structural and pruning: no preserve-unknown-fields anywhere.
    std::string text = YAML::Dump(crd);
    EXPECT_EQ(text.find("x-kubernetes-preserve-unknown-fields"), std::string::npos) << file;
  }
}

}  // namespace
}  // namespace kinference::crd
