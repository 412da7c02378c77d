// fuzz/policy/entry.cc — arbitrary bytes through MigrationTargetPolicy parsing (api/policy.h),
// the evacuation attacher and the validator's provenance check of what it attaches
// (webhook/policy_attacher.h, webhook/vmim_validator.h), with the testing fakes.
//
// Input: byte 0 chooses the mode, the rest is JSON (or text for mode 3):
//   bits 0-1  0 = the JSON is a policy object: ParsePolicy, ParsePolicies, ValidatePolicy
//             1 = the JSON is a VMIM CREATEd by virt-controller (bit 2: by someone else):
//                 AttachPolicy, then ValidateVmim of the patched object
//             2 = the JSON is a VMIM CREATE: ValidateVmim alone (the SAR always denies)
//             3 = the text is a max-inbound-per-node annotation: ParseMaxInbound
// Checks:
//   - nothing throws;
//   - a policy parses iff it has no cause; a parsed one's term text parses as the annotation
//     does, and its limit is absent or 1..10000; ParsePolicies puts the object in exactly
//     one of policies and skipped; ValidatePolicy allows a CREATE iff it parses;
//   - the attacher never fails without a failing read (there is none here); its patch only
//     adds annotations, and the patched VMIM carries a policy's exact term and limit and
//     passes the validator (unless it came with a limit annotation of its own), without a
//     SubjectAccessReview;
//   - the validator allows a VMIM naming a policy only from virt-controller, for an
//     evacuation, with that policy's exact term and limit; a limit annotation without a
//     policy never passes; and it never asks the SubjectAccessReview for that;
//   - ParseMaxInbound is 1..10000, and the number itself for a canonical decimal in range.
#include "fuzz/entry.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/added_term.h"
#include "api/names.h"
#include "api/policy.h"
#include "webhook/admission.h"
#include "webhook/policy_attacher.h"
#include "webhook/testing/fake_access_reviewer.h"
#include "webhook/testing/fake_cluster_view.h"
#include "webhook/vmim_validator.h"

namespace kmt::fuzz {
namespace {

using Json = nlohmann::json;
using webhook::AdmissionRequest;

constexpr const char* kController = "system:serviceaccount:kubevirt:kubevirt-controller";

Json PolicyObject(const std::string& name, const std::string& spec) {
  return {{"apiVersion", "migration-target.kubevirt.io/v1alpha1"},
          {"kind", "MigrationTargetPolicy"},
          {"metadata", {{"name", name}}},
          {"spec", Json::parse(spec)}};
}

struct World {
  webhook::testing::FakeAccessReviewer access;  // grants nothing: every SAR denies
  webhook::testing::FakeClusterView cluster;
  std::vector<api::MigrationTargetPolicy> parsed;

  World() {
    cluster.AddNode("a-1", {{"rack", "a"}, {"kubernetes.io/hostname", "a-1"}});
    cluster.AddNode("b-1", {{"rack", "b"}, {"kubernetes.io/hostname", "b-1"}});
    cluster.vmis[{"ns1", "vm1"}] =
        Json::parse(R"({"metadata": {"name": "vm1", "labels": {"app": "web"}}})");
    cluster.namespaces["ns1"] =
        Json::parse(R"({"metadata": {"name": "ns1", "labels": {"t": "x"}}})");
    cluster.policies = {
        PolicyObject("rack-a-to-b", R"({"maxInboundPerNode": 2,
          "match": {"sourceNodeSelector": {"matchLabels": {"rack": "a"}}},
          "addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}})"),
        PolicyObject("web", R"({"priority": 3, "match": {"origin": "Descheduler",
          "vmiSelector": {"matchLabels": {"app": "web"}}},
          "addedNodeSelectorTerm": {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["a-1"]}]}})"),
        PolicyObject("broken", R"({"addedNodeSelectorTerm": {}})"),
    };
    for (const Json& p : cluster.policies) {
      if (api::PolicyParse r = api::ParsePolicy(p); r.policy) parsed.push_back(*r.policy);
    }
  }

  const api::MigrationTargetPolicy* Find(const std::string& name) const {
    for (const auto& p : parsed) {
      if (p.name == name) return &p;
    }
    return nullptr;
  }
};

AdmissionRequest VmimCreate(const Json& object, const std::string& user) {
  AdmissionRequest r;
  r.uid = "fuzz";
  r.operation = "CREATE";
  r.resource = {"kubevirt.io", "v1", "virtualmachineinstancemigrations"};
  r.kind = {"kubevirt.io", "v1", "VirtualMachineInstanceMigration"};
  r.ns = "ns1";
  r.user_info.username = user;
  r.object = object;
  return r;
}

const Json* Annotation(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto meta = obj.find("metadata");
  if (meta == obj.end() || !meta->is_object()) return nullptr;
  auto ann = meta->find("annotations");
  if (ann == meta->end() || !ann->is_object()) return nullptr;
  auto it = ann->find(key);
  return it == ann->end() ? nullptr : &*it;
}

std::string CheckPolicy(const Json& object) {
  const api::PolicyParse p = api::ParsePolicy(object);
  if (p.policy.has_value() == !p.causes.empty()) return "policy set and causes disagree";
  if (p.policy) {
    if (!api::ParseAddedTerm(p.policy->term_text).term) return "a parsed policy's term fails";
    if (p.policy->max_inbound_per_node &&
        (*p.policy->max_inbound_per_node < 1 ||
         *p.policy->max_inbound_per_node > api::kMaxInboundLimit)) {
      return "a limit out of range parsed";
    }
  }
  for (const api::Cause& c : p.causes) {
    if (c.field.empty() && object.is_object()) return "a cause without a field";
  }
  const api::PolicySet set = api::ParsePolicies({object});
  if (set.policies.size() + set.skipped.size() != 1 ||
      set.policies.size() != (p.policy ? 1u : 0u)) {
    return "ParsePolicies disagrees with ParsePolicy";
  }
  AdmissionRequest r;
  r.uid = "fuzz";
  r.operation = "CREATE";
  r.resource = {std::string(api::kPolicyGroup), std::string(api::kPolicyVersion),
                std::string(api::kPolicyResource)};
  r.object = object;
  if (webhook::ValidatePolicy(r).allowed != p.policy.has_value()) {
    return "ValidatePolicy disagrees with ParsePolicy";
  }
  return {};
}

// Applies a JSON Patch of `add`s on /metadata/annotations[/key] (all the attacher may write).
std::optional<Json> ApplyAnnotationAdds(const Json& obj, const Json& patch, std::string* why) {
  for (const Json& op : patch) {
    const std::string path = op.value("path", "");
    if (op.value("op", "") != "add" || !path.starts_with("/metadata/annotations")) {
      *why = "the attacher's patch does more than add annotations: " + op.dump();
      return std::nullopt;
    }
  }
  try {
    return obj.patch(patch);
  } catch (const std::exception& e) {
    *why = std::string("the attacher's patch does not apply: ") + e.what();
    return std::nullopt;
  }
}

// What the validator must hold for an allowed VMIM naming a policy.
std::string CheckAttachedPair(const Json& vmim, const World& w) {
  const Json* name = Annotation(vmim, api::kPolicyAnnotation);
  if (name == nullptr || !name->is_string()) return {};
  const api::MigrationTargetPolicy* p = w.Find(name->get<std::string>());
  if (p == nullptr) return "allowed a VMIM naming a policy that does not parse or exist";
  const Json* term = Annotation(vmim, api::kAddedTermAnnotation);
  if (term == nullptr || *term != p->term_text) return "allowed a term that is not the policy's";
  const Json* cap = Annotation(vmim, api::kMaxInboundAnnotation);
  if (p->max_inbound_per_node.has_value() != (cap != nullptr)) {
    return "allowed a limit annotation that the policy does not have, or dropped its limit";
  }
  if (cap != nullptr && *cap != std::to_string(*p->max_inbound_per_node)) {
    return "allowed another limit than the policy's";
  }
  if (Annotation(vmim, api::kAnnotationEvacuationMigration) == nullptr) {
    return "allowed a policy on a VMIM that is no evacuation";
  }
  return {};
}

std::string CheckAttach(const Json& object, bool other_user) {
  World w;
  const std::string user = other_user ? "kmt-admin" : kController;
  const AdmissionRequest req = VmimCreate(object, user);
  const webhook::AdmissionResponse r = webhook::AttachPolicy(req, w.cluster, {});
  if (!r.allowed) return "the attacher refused without a failing read: " + r.status->message;
  if (!r.patch) return {};
  if (other_user) return "patched a VMIM that virt-controller did not create";
  std::string why;
  std::optional<Json> after = ApplyAnnotationAdds(object, *r.patch, &why);
  if (!after) return why;
  webhook::VmimValidatorDeps deps{w.access, w.cluster};
  const webhook::AdmissionResponse v = webhook::ValidateVmim(VmimCreate(*after, user), deps);
  // A VMIM that came with a limit annotation of its own may be refused (virt-controller never
  // writes one); otherwise the validator must take what the attacher wrote.
  const bool came_with_limit = Annotation(object, api::kMaxInboundAnnotation) != nullptr;
  if (!v.allowed && !came_with_limit) {
    return "the validator refused what the attacher attached: " +
           (v.status ? v.status->message : std::string("?"));
  }
  if (!v.allowed) return {};
  if (w.access.calls != 0) return "the attached policy asked for a SubjectAccessReview";
  return CheckAttachedPair(*after, w);
}

std::string CheckValidate(const Json& object, bool other_user) {
  World w;
  const std::string user = other_user ? "kmt-admin" : kController;
  webhook::VmimValidatorDeps deps{w.access, w.cluster};
  const webhook::AdmissionResponse v = webhook::ValidateVmim(VmimCreate(object, user), deps);
  const Json* policy = Annotation(object, api::kPolicyAnnotation);
  const Json* cap = Annotation(object, api::kMaxInboundAnnotation);
  if (policy != nullptr && w.access.calls != 0) {
    return "a VMIM naming a policy asked for a SubjectAccessReview";
  }
  if (!v.allowed) return {};
  if (policy == nullptr && cap != nullptr) return "allowed a limit annotation without a policy";
  if (policy != nullptr) {
    if (other_user) return "allowed a policy annotation from someone but virt-controller";
    return CheckAttachedPair(object, w);
  }
  return {};
}

std::string CheckMaxInbound(const std::string& text) {
  const std::optional<int64_t> n = api::ParseMaxInbound(text);
  if (!n || *n < 1 || *n > api::kMaxInboundLimit) return "ParseMaxInbound out of 1..10000";
  const bool canonical = !text.empty() && text.size() <= 5 && text[0] != '0' &&
                         std::ranges::all_of(text, [](char c) { return c >= '0' && c <= '9'; });
  if (canonical && std::stoll(text) <= api::kMaxInboundLimit && *n != std::stoll(text)) {
    return fmt::format("ParseMaxInbound(\"{}\") = {}", text, *n);
  }
  return {};
}

}  // namespace

std::string CheckTarget(std::string_view input) {
  if (input.empty()) return {};
  const unsigned control = static_cast<unsigned char>(input[0]);
  const std::string rest(input.substr(1));
  if ((control & 3) == 3) return CheckMaxInbound(rest);
  Json j = Json::parse(rest, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return {};
  const bool other_user = control & 4;
  switch (control & 3) {
    case 0:
      return CheckPolicy(j);
    case 1:
      return CheckAttach(j, other_user);
    default:
      return CheckValidate(j, other_user);
  }
}

}  // namespace kmt::fuzz
