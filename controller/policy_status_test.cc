// The policies' status: computed from the policy and the cached VMIMs naming it, written
// only when it differs, on a timer and on notification.
#include "controller/policy_status.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/fake_clock.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::controller {
namespace {

using Json = nlohmann::json;

Json Policy(const std::string& name, const std::string& term) {
  return {{"apiVersion", "migration-target.kubevirt.io/v1alpha1"},
          {"kind", "MigrationTargetPolicy"},
          {"metadata", {{"name", name}}},
          {"spec", {{"addedNodeSelectorTerm", Json::parse(term)}}}};
}

api::MigrationInfo Carrying(const std::string& ns, const std::string& name,
                            const std::string& policy, const std::string& created) {
  api::MigrationInfo m;
  m.ns = ns;
  m.name = name;
  m.policy = policy;
  m.created = created;
  return m;
}

const base::WallTime kNow =
    base::WallTime(std::chrono::seconds(1767225600));  // 2026-01-01T00:00:00Z

TEST_CASE("Status: count, newest, Ready; the transition time kept while Ready holds") {
  Json p = Policy("p", R"({"matchExpressions":[{"key":"rack","operator":"Exists"}]})");
  p["metadata"]["generation"] = 3;
  Json s = DesiredPolicyStatus(p,
                               {Carrying("a", "m1", "p", "2026-01-01T00:00:01Z"),
                                Carrying("b", "m2", "p", "2026-01-01T00:00:05Z")},
                               kNow);
  CHECK(s["matchedMigrations"] == 2);
  CHECK(s["observedGeneration"] == 3);
  CHECK(s["lastAppliedMigration"] == "b/m2");
  CHECK(s["lastAppliedTime"] == "2026-01-01T00:00:05Z");
  REQUIRE(s["conditions"].size() == 1);
  CHECK(s["conditions"][0]["type"] == "Ready");
  CHECK(s["conditions"][0]["status"] == "True");
  CHECK(s["conditions"][0]["reason"] == "Valid");
  CHECK(s["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z");

  // Later, the VMIMs gone: the last applied stays, the transition time too.
  p["status"] = s;
  Json later = DesiredPolicyStatus(p, {}, kNow + std::chrono::hours(1));
  CHECK(later["matchedMigrations"] == 0);
  CHECK(later["lastAppliedMigration"] == "b/m2");
  CHECK(later["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z");
}

TEST_CASE("A policy that does not parse is Ready=False/InvalidTerm with its first broken rule") {
  Json s = DesiredPolicyStatus(
      Policy("p", R"({"matchFields":[{"key":"metadata.labels","operator":"In","values":["x"]}]})"),
      {}, kNow);
  CHECK(s["conditions"][0]["status"] == "False");
  CHECK(s["conditions"][0]["reason"] == "InvalidTerm");
  CHECK(s["conditions"][0]["message"] ==
        "the operator skips this policy: spec.addedNodeSelectorTerm.matchFields[0].key: Invalid "
        "value: \"metadata.labels\": not a valid field selector key");
}

TEST_CASE("A pass writes the status that differs, once; timer and Notify run passes") {
  kube::FakeClient client;
  client.SetStatusSubresource(kube::kMigrationTargetPolicies, true);
  client.Create(kube::kMigrationTargetPolicies, "",
                Policy("p", R"({"matchExpressions":[{"key":"rack","operator":"Exists"}]})"));
  client.Create(kube::kMigrationTargetPolicies, "",
                Policy("q", R"({"matchExpressions":[{"key":"rack","operator":"Exists"}]})"));
  base::FakeClock clock;
  base::Logger log(clock, base::LogLevel::kError, base::LogFormat::kText,
                   [](const std::string&) {});
  std::vector<api::MigrationInfo> cached = {Carrying("ns", "m1", "p", "2026-01-01T00:00:01Z")};
  PolicyStatusWriter w(
      client, clock, log, [&] { return cached; }, std::chrono::seconds(30));

  CHECK(w.Pass() == 2);
  CHECK(client.Get(kube::kMigrationTargetPolicies, "", "p")["status"]["matchedMigrations"] == 1);
  CHECK(client.Get(kube::kMigrationTargetPolicies, "", "q")["status"]["matchedMigrations"] == 0);
  CHECK(w.Pass() == 0);  // nothing changed: nothing written

  w.Start();
  clock.Advance(base::Duration::zero());  // the first pass: nothing to write
  cached.push_back(Carrying("ns", "m2", "q", "2026-01-01T00:00:02Z"));
  w.Notify();
  w.Notify();  // coalesced
  client.ClearCalls();
  clock.Advance(std::chrono::milliseconds(200));
  int patches = 0;
  for (const auto& c : client.Calls()) patches += c.verb == kube::Verb::kPatch ? 1 : 0;
  CHECK(patches == 1);
  CHECK(client.Get(kube::kMigrationTargetPolicies, "", "q")["status"]["lastAppliedMigration"] ==
        "ns/m2");

  cached.clear();
  clock.Advance(std::chrono::seconds(30));  // the periodic pass
  CHECK(client.Get(kube::kMigrationTargetPolicies, "", "p")["status"]["matchedMigrations"] == 0);
  w.Stop();
}

}  // namespace
}  // namespace kmt::controller
