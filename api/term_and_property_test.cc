// Property: for random pods, terms and nodes, the merged required node affinity matches a
// node exactly when the original one did (no required affinity = every node) and the
// added term does.
#include <catch2/catch.hpp>
#include <random>

#include "api/names.h"
#include "api/node_match.h"
#include "api/term_and.h"

namespace kmt::api {
namespace {

using json = nlohmann::json;

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Int(0, static_cast<int>(v.size()) - 1))];
  }

  NodeSelectorRequirement Expression() {
    static const std::vector<std::string> keys{"zone", "rack", "gpu", "cores"};
    static const std::vector<std::string> values{"a", "b", "c", "1", "4", "8"};
    static const std::vector<std::string> ops{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
    NodeSelectorRequirement r{Pick(keys), Pick(ops), {}};
    if (r.op == "In" || r.op == "NotIn") {
      const int n = Int(1, 3);
      for (int i = 0; i < n; ++i) r.values.push_back(Pick(values));
    } else if (r.op == "Gt" || r.op == "Lt") {
      r.values.push_back(std::to_string(Int(0, 9)));
    }
    return r;
  }
  NodeSelectorRequirement Field() {
    return {"metadata.name", Int(0, 1) ? "In" : "NotIn", {"node-" + std::to_string(Int(0, 3))}};
  }
  NodeSelectorTerm Term(bool allow_empty) {
    NodeSelectorTerm t;
    do {
      const int e = Int(0, 3), f = Int(0, 1);
      for (int i = 0; i < e; ++i) t.match_expressions.push_back(Expression());
      for (int i = 0; i < f; ++i) t.match_fields.push_back(Field());
    } while (!allow_empty && t.empty());
    return t;
  }
  Labels NodeLabels() {
    std::vector<std::pair<std::string, std::string>> kv;
    if (Int(0, 3)) kv.emplace_back("zone", Pick(std::vector<std::string>{"a", "b", "c"}));
    if (Int(0, 1)) kv.emplace_back("rack", Pick(std::vector<std::string>{"a", "b", "1"}));
    if (Int(0, 1)) kv.emplace_back("gpu", Pick(std::vector<std::string>{"", "a", "8"}));
    if (Int(0, 3)) kv.emplace_back("cores", Pick(std::vector<std::string>{"1", "4", "8", "x"}));
    return Labels(kv);
  }

 private:
  std::mt19937 rng_;
};

TEST_CASE("Merged selector matches == original matches AND term matches") {
  const std::string gate(kSchedulingGate);
  const uint32_t seed = GENERATE(1u, 2u, 3u, 4u, 5u);
  Gen g(seed);
  int merged_nodes = 0;
  for (int iter = 0; iter < 400; ++iter) {
    json pod = {{"metadata", {{"uid", "u"}, {"resourceVersion", "1"}}},
                {"spec", {{"schedulingGates", {{{"name", gate}}}}}}};
    std::optional<NodeSelector> original;
    const int shape = g.Int(0, 4);
    if (shape >= 1) pod["spec"]["affinity"] = json::object();
    if (shape >= 2) pod["spec"]["affinity"]["nodeAffinity"] = json::object();
    if (shape >= 3) {
      NodeSelector s;
      const int n = shape == 3 ? 0 : g.Int(1, 3);
      for (int i = 0; i < n; ++i) s.terms.push_back(g.Term(/*allow_empty=*/g.Int(0, 5) == 0));
      pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
          ToJson(s);
      if (!s.terms.empty()) original = s;
    }
    const NodeSelectorTerm term = g.Term(/*allow_empty=*/false);
    const json patched = pod.patch(json(AndTermIntoPod(pod, term, gate)));
    const NodeSelector merged =
        NodeSelectorFromJsonLenient(patched["spec"]["affinity"]["nodeAffinity"]
                                           ["requiredDuringSchedulingIgnoredDuringExecution"]);
    CHECK(PodCarriesTerm(patched, term));
    CHECK(AndTermIntoPod(patched, term, gate).empty());  // idempotent, gate gone
    for (int n = 0; n < 8; ++n) {
      const Labels labels = g.NodeLabels();
      const std::string name = "node-" + std::to_string(g.Int(0, 3));
      const bool before = !original || SelectorMatchesNode(*original, labels, name);
      const bool want = before && TermMatchesNode(term, labels, name);
      const bool got = SelectorMatchesNode(merged, labels, name);
      if (got != want) {
        CAPTURE(seed, iter, pod.dump(), ToJson(term).dump(), labels.ToJson().dump(), name);
        FAIL("merged selector disagrees");
      }
      merged_nodes += got ? 1 : 0;
    }
  }
  CHECK(merged_nodes > 50);  // the generator produces matching nodes, not only misses
}

}  // namespace
}  // namespace kmt::api
