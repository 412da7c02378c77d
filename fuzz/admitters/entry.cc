// fuzz/admitters/entry.cc — arbitrary bytes through the real admission shell to the real
// admitters (webhook/vmim_validator.h, webhook/pod_mutator.h), wired with the testing fakes.
//
// Input: byte 0 chooses the admitter and the fakes' state, the rest is the AdmissionReview
// body (so every golden request of webhook/testdata is a seed once a control byte is put
// in front of it):
//   bit 0     0 = VMIM validator, 1 = Pod mutator
//   bits 1-2  SubjectAccessReview: 0 allowed, 1 denied, 2 denied with a reason, 3 fails
//   bits 3-4  the VMIM the mutator reads (named by the pod, uid from the pod's label):
//             0 present with a term, 1 present without, 2 absent, 3 the read fails
//   bit 5     the VMIM's uid differs from the pod's label; the validator: nodes unreadable
//   bit 6     the validator: VMI unreadable; it never checks KubeVirt's addedNodeSelector
//   bit 7     Content-Type carries "; charset=utf-8"
// Checks (webhook/shell.h, webhook/pod_mutator.h, webhook/vmim_validator.h):
//   - nothing throws, and the admitters handle every failure of their fakes themselves
//     (no "internal error" 500 from the shell);
//   - HTTP 200, 400 or 415 with a JSON body; a 200 echoes the uid the decoder read and
//     carries a boolean `allowed`; a denial carries a status code >= 400;
//   - the validator never patches; it fails closed: a VMIM CREATE carrying the term is
//     allowed only when the SubjectAccessReview allowed it;
//   - the mutator patches only allowed pod CREATEs; a patch is base64 of a JSON Patch that
//     nlohmann's patch() applies to the pod, after which the pod carries the gate exactly
//     once, keeps every other gate in order, and is otherwise unchanged.
#include "fuzz/entry.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/added_term.h"
#include "api/names.h"
#include "kube/base64.h"
#include "webhook/admission.h"
#include "webhook/pod_mutator.h"
#include "webhook/shell.h"
#include "webhook/testing/fake_access_reviewer.h"
#include "webhook/testing/fake_cluster_view.h"
#include "webhook/vmim_validator.h"

namespace kmt::fuzz {
namespace {

using Json = nlohmann::json;
using webhook::AdmissionRequest;
using webhook::testing::FakeAccessReviewer;
using webhook::testing::FakeClusterView;

constexpr const char* kTerm =
    R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["node-2"]}]})";

const Json* At(const Json& root, std::initializer_list<std::string_view> path) {
  const Json* cur = &root;
  for (std::string_view key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string StringOr(const Json* j, std::string fallback = "") {
  return j != nullptr && j->is_string() ? j->get<std::string>() : std::move(fallback);
}

struct World {
  FakeAccessReviewer access;
  FakeClusterView cluster;
  bool sar_allows = false;
  bool check_kubevirt = true;
  bool trust_virt_api = false;

  World(unsigned control, const std::optional<AdmissionRequest>& req) {
    switch ((control >> 1) & 3) {
      case 0:
        sar_allows = true;
        break;
      case 1:
        break;
      case 2:
        access.deny_reason = "denied by policy \"x\"\n\xff";
        break;
      default:  // 3
        access.error = "connection refused";
        break;
    }
    // Granted to whoever asks, in any namespace, when the review allows.
    if (sar_allows && req) {
      access.Grant("user:" + req->user_info.username, "", std::string(api::kRbacVerb),
                   std::string(api::kRbacGroup), std::string(api::kRbacResource));
    }
    cluster.AddNode("node-1", {{"kubernetes.io/hostname", "node-1"}});
    cluster.AddNode("node-2", {{"kubernetes.io/hostname", "node-2"}});
    if ((control & 1) == 0) {
      if (control & 32) cluster.nodes_error = "nodes are forbidden";
      if (control & 64) {
        cluster.vmi_error = "the server is unavailable";
        check_kubevirt = false;
        trust_virt_api = true;
      }
      if (req) {
        const std::string vmi = StringOr(At(req->object, {"spec", "vmiName"}));
        cluster.vmi_nodes[{req->ns, vmi}] = "node-2";
      }
      return;
    }
    const unsigned vmim = (control >> 3) & 3;
    if (vmim == 3) cluster.migration_error = "context deadline exceeded";
    if (vmim >= 2 || !req) return;
    const Json& pod = req->object;
    const std::string ns =
        !req->ns.empty() ? req->ns : StringOr(At(pod, {"metadata", "namespace"}));
    const std::string name =
        StringOr(At(pod, {"metadata", "annotations", api::kAnnotationMigrationJobName}));
    std::string uid = StringOr(At(pod, {"metadata", "labels", api::kLabelMigrationJobUID}));
    if (control & 32) uid += "-other";
    Json m = {{"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}}};
    if (vmim == 0) m["metadata"]["annotations"] = {{std::string(api::kAddedTermAnnotation), kTerm}};
    cluster.migrations[{ns, name}] = std::move(m);
  }
};

bool IsVmimCreateWithTerm(const AdmissionRequest& r) {
  return r.resource.group == "kubevirt.io" &&
         r.resource.resource == "virtualmachineinstancemigrations" && r.sub_resource.empty() &&
         r.operation == "CREATE" && api::AddedTermSource(r.object).has_value();
}

bool IsPodCreate(const AdmissionRequest& r) {
  return r.resource.group.empty() && r.resource.resource == "pods" && r.sub_resource.empty() &&
         r.operation == "CREATE";
}

// The gate names of a pod's spec.schedulingGates (entries without a string name as "").
std::optional<std::vector<std::string>> Gates(const Json& pod) {
  const Json* gates = At(pod, {"spec", "schedulingGates"});
  if (gates == nullptr || !gates->is_array()) return std::nullopt;
  std::vector<std::string> names;
  for (const Json& g : *gates) names.push_back(g.is_object() ? StringOr(At(g, {"name"})) : "");
  return names;
}

std::string CheckPatch(const AdmissionRequest& req, const Json& response) {
  if (StringOr(At(response, {"patchType"})) != "JSONPatch") {
    return "a patch without patchType JSONPatch: " + response.dump();
  }
  std::optional<std::string> bytes = kube::DecodeBase64(StringOr(At(response, {"patch"})));
  if (!bytes) return "a patch that is not base64: " + response.dump();
  Json ops = Json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (!ops.is_array() || ops.empty()) return "a patch that is not a JSON Patch array: " + *bytes;
  // Op by op, checking first what RFC 6902 requires of the target's parent (nlohmann's
  // patch() asserts on a primitive parent and turns a null one into an object).
  Json patched = req.object;
  for (const Json& op : ops) {
    const std::string path = StringOr(At(op, {"path"}), "\x01");
    std::string why;
    try {
      const Json::json_pointer parent = Json::json_pointer(path).parent_pointer();
      if (!patched.contains(parent) ||
          !(patched.at(parent).is_object() || patched.at(parent).is_array())) {
        why = "the parent of " + path + " is not an object or array";
      } else {
        patched = patched.patch(Json::array({op}));
      }
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) {
      return fmt::format("the mutator's patch {} does not apply to the pod {}: {}", *bytes,
                         req.object.dump(), why);
    }
  }
  const std::optional<std::vector<std::string>> after = Gates(patched);
  const std::string gate(api::kSchedulingGate);
  if (!after || std::count(after->begin(), after->end(), gate) != 1) {
    return "the patched pod does not carry the gate exactly once: " + patched.dump();
  }
  std::vector<std::string> others = *after;
  others.erase(std::ranges::find(others, gate));
  std::vector<std::string> before = Gates(req.object).value_or(std::vector<std::string>{});
  if (others != before) return "the patch changed the pod's other gates: " + patched.dump();
  // Apart from the gate list the pod is unchanged.
  Json a = req.object;
  Json b = std::move(patched);
  if (!a.contains("spec") || a["spec"].is_null()) a["spec"] = Json::object();  // patch added it
  a["spec"].erase("schedulingGates");
  b["spec"].erase("schedulingGates");
  if (a != b) return "the patch changed more than spec.schedulingGates: " + *bytes;
  return {};
}

std::string Check(std::string_view input) {
  if (input.empty()) return {};
  const unsigned control = static_cast<unsigned char>(input[0]);
  const std::string_view body = input.substr(1);
  const webhook::DecodeResult decoded = webhook::DecodeAdmissionReview(body);
  World world(control, decoded.request);
  const bool mutator = (control & 1) != 0;
  webhook::VmimValidatorDeps deps{world.access,
                                  world.cluster,
                                  {.check_kubevirt_added_node_selector = world.check_kubevirt,
                                   .trust_virt_api_added_node_selector = world.trust_virt_api}};
  const webhook::Admitter admit = [&](const AdmissionRequest& r) {
    return mutator ? webhook::MutateTargetPod(r, world.cluster) : webhook::ValidateVmim(r, deps);
  };
  const char* content_type =
      (control & 128) ? "application/json; charset=utf-8" : "application/json";
  const webhook::ShellAnswer answer = webhook::ServeAdmission(content_type, body, admit);
  if (mutator) {
    // The server decodes only the members the mutator reads: the same answer, always.
    const webhook::ShellAnswer kept =
        webhook::ServeAdmission(content_type, body, admit, &webhook::TargetPodReads());
    if (kept.http_status != answer.http_status || kept.body != answer.body) {
      return fmt::format(
          "decoded with TargetPodReads the mutator answered HTTP {} {}, from the "
          "whole review HTTP {} {}",
          kept.http_status, kept.body, answer.http_status, answer.body);
    }
  }

  if (answer.http_status != 200 && answer.http_status != 400 && answer.http_status != 415) {
    return fmt::format("shell answered HTTP {}", answer.http_status);
  }
  const Json review = Json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
  if (review.is_discarded()) return "shell answered a body that is not JSON: " + answer.body;
  if (answer.http_status != 200) {
    if (!body.empty() && !decoded.uid.empty()) {
      return fmt::format("HTTP {} although the request uid \"{}\" was readable", answer.http_status,
                         decoded.uid);
    }
    return {};
  }
  const Json* response = At(review, {"response"});
  if (response == nullptr || !response->is_object()) return "a 200 without a response";
  if (decoded.uid.empty() || StringOr(At(*response, {"uid"}), "\x01") != decoded.uid) {
    return fmt::format("a 200 that does not echo uid \"{}\": {}", decoded.uid, answer.body);
  }
  const Json* allowed = At(*response, {"allowed"});
  if (allowed == nullptr || !allowed->is_boolean()) return "no boolean allowed: " + answer.body;
  const Json* code = At(*response, {"status", "code"});
  if (!allowed->get<bool>() &&
      (code == nullptr || !code->is_number_integer() || code->get<int>() < 400)) {
    return "a denial without a status code >= 400: " + answer.body;
  }
  const std::string message = StringOr(At(*response, {"status", "message"}));
  if (message.starts_with("internal error")) {
    return "an admitter let an exception reach the shell: " + message;
  }
  if (!decoded.request) return {};
  const AdmissionRequest& req = *decoded.request;
  const bool patched = response->contains("patch") || response->contains("patchType");
  if (!mutator) {
    if (patched) return "the validator answered with a patch: " + answer.body;
    if (allowed->get<bool>() && IsVmimCreateWithTerm(req) && !world.sar_allows) {
      return "the validator admitted a term the SubjectAccessReview did not allow: " + answer.body;
    }
    return {};
  }
  if (!patched) return {};
  if (!allowed->get<bool>() || !IsPodCreate(req)) {
    return "the mutator patched a request it did not admit as a pod CREATE: " + answer.body;
  }
  return CheckPatch(req, *response);
}

}  // namespace

std::string CheckTarget(std::string_view input) { return Check(input); }

}  // namespace kmt::fuzz
