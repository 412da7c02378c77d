#include "webhook/access_review.h"

#include <stdexcept>

#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::webhook {

Json SubjectAccessReviewFor(const AccessQuery& query) {
  Json spec = Json::object();
  spec["user"] = query.user.username;
  // Go's omitempty on uid, groups and extra: send only what the requester had.
  if (!query.user.uid.empty()) spec["uid"] = query.user.uid;
  if (!query.user.groups.empty()) spec["groups"] = query.user.groups;
  if (!query.user.extra.empty()) {
    Json extra = Json::object();
    for (const auto& [key, values] : query.user.extra) extra[key] = values;
    spec["extra"] = std::move(extra);
  }
  spec["resourceAttributes"] = {{"namespace", query.ns},
                                {"verb", query.verb},
                                {"group", query.group},
                                {"resource", query.resource}};
  return {{"apiVersion", "authorization.k8s.io/v1"},
          {"kind", "SubjectAccessReview"},
          {"spec", std::move(spec)}};
}

AccessDecision SubjectAccessReviewer::Review(const AccessQuery& query) {
  const Json review = SubjectAccessReviewFor(query);
  Json answer;
  for (int attempt = 1;; ++attempt) {
    try {
      answer = client_.Create(kube::kSubjectAccessReviews, "", review);
      break;
    } catch (const kube::KubeError& e) {
      // The connection broke (the transport never resends a POST whose answer it may
      // have missed). A SubjectAccessReview stores nothing, so sending it again is safe.
      if (e.kind() != kube::ErrorKind::kTransport || attempt == kReviewAttempts) throw;
    }
  }
  auto status = answer.find("status");
  if (!answer.is_object() || status == answer.end() || !status->is_object()) {
    throw std::runtime_error("the SubjectAccessReview answer has no status");
  }
  AccessDecision d;
  auto allowed = status->find("allowed");
  d.allowed = allowed != status->end() && allowed->is_boolean() && allowed->get<bool>();
  // status.denied means an authorizer said no outright; allowed already reflects that.
  auto denied = status->find("denied");
  if (denied != status->end() && denied->is_boolean() && denied->get<bool>()) d.allowed = false;
  if (auto r = status->find("reason"); r != status->end() && r->is_string()) {
    d.reason = r->get<std::string>();
  }
  if (auto e = status->find("evaluationError"); e != status->end() && e->is_string()) {
    d.evaluation_error = e->get<std::string>();
  }
  return d;
}

}  // namespace kmt::webhook
