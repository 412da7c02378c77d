// term_verdicts — the project's side of the differential tier (hack/differential.sh,
// e2e/tools/k8s/differential): one JSON line in, one JSON line out, through the very
// functions the operator uses.
//
//   {"id": N, "hex": "<the annotation's bytes, hex>"}
//     → {"id": N, "valid": bool, "causes": [{"type", "field", "message"}...]}
//     api::ParseAddedTerm, what the validating webhook runs on the annotation (the
//     bytes travel as hex: the generator also sends text that is not UTF-8).
//   {"id": N, "term": {NodeSelectorTerm}, "labels": {...}, "name": "node"}
//     → {"id": N, "match": bool, "explain_added": bool, "explain_own": bool}
//     api::TermMatchesNode (webhook warnings, reconcile's escaped-pod check), and the
//     explainer's two matchers: the term as the added term, and as the pod's own
//     required node affinity (a selector of that one term). The term is read with the
//     strict parser (api::ParseNodeSelectorTerm) without validation, so invalid
//     requirements reach the matchers; a term of the wrong shape is an error line.
//   anything else → {"id": N, "error": "..."}
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/added_term.h"
#include "api/explain.h"
#include "api/labels.h"
#include "api/node_match.h"
#include "api/node_selector.h"
#include "api/projections.h"

namespace {

using json = nlohmann::json;
namespace api = kmt::api;

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool FromHex(const std::string& hex, std::string& out) {
  if (hex.size() % 2 != 0) return false;
  out.clear();
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexDigit(hex[i]), lo = HexDigit(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

json Validate(const std::string& text) {
  const api::AddedTermParse parsed = api::ParseAddedTerm(text);
  json causes = json::array();
  for (const api::Cause& c : parsed.causes) {
    causes.push_back({{"type", c.type}, {"field", c.field}, {"message", c.message}});
  }
  return {{"valid", parsed.term.has_value()}, {"causes", std::move(causes)}};
}

json Match(const json& in) {
  const api::TermParse parsed = api::ParseNodeSelectorTerm(in.at("term"), "");
  if (!parsed.term) {
    std::string why = "term: ";
    for (const api::Cause& c : parsed.causes) why += api::ToString(c) + "; ";
    return {{"error", why}};
  }
  const api::NodeSelectorTerm& term = *parsed.term;
  std::vector<api::NodeInfo> nodes(1);
  nodes[0].name = in.value("name", "");
  nodes[0].labels = api::Labels::FromJson(in.value("labels", json::object()));

  const bool match = api::TermMatchesNode(term, nodes[0].labels, nodes[0].name);

  api::TargetPod plain;
  const api::Explainer added(plain, &term, "", nodes, {});
  const bool explain_added =
      (added.Evaluate(0) & api::Bit(api::ReasonKind::kExcludedByAddedTerm)) == 0;

  api::TargetPod own;
  own.mutable_shape().required_affinity = api::NodeSelector{{term}};
  const api::Explainer affinity(own, nullptr, "", nodes, {});
  const bool explain_own =
      (affinity.Evaluate(0) & api::Bit(api::ReasonKind::kOwnAffinityExcludes)) == 0;

  return {{"match", match}, {"explain_added", explain_added}, {"explain_own", explain_own}};
}

}  // namespace

int main() {
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    json out;
    json id = nullptr;
    try {
      const json in = json::parse(line);
      id = in.value("id", json());
      if (in.contains("hex")) {
        std::string text;
        if (!FromHex(in.at("hex").get<std::string>(), text)) {
          out = {{"error", "hex: not an even number of hex digits"}};
        } else {
          out = Validate(text);
        }
      } else if (in.contains("term")) {
        out = Match(in);
      } else {
        out = {{"error", R"(want "hex" or "term")"}};
      }
    } catch (const std::exception& e) {
      out = {{"error", e.what()}};
    }
    out["id"] = id;
    std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    std::cout.flush();
  }
  return 0;
}
