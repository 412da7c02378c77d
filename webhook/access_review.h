// webhook/access_review.h — "may this user do that?", asked of the API server's
// authorizers (RBAC and whatever else the cluster runs) through a SubjectAccessReview.
//
// The validator asks whether the requester of a VMIM may `use`
// `addednodeselectorterms.migration-target.kubevirt.io` in the VMIM's namespace: that
// virtual resource is this project's notion of "cluster admin for this request", granted
// by an ordinary (Cluster)Role. Going through SubjectAccessReview rather than reading RBAC
// objects means every authorizer the cluster configures takes part, as it would for a
// real request.
#pragma once

#include <string>

#include "kube/client.h"
#include "webhook/admission.h"

namespace kmt::webhook {

// The resourceAttributes of the question, and who asks.
struct AccessQuery {
  UserInfo user;
  std::string ns;
  std::string verb;
  std::string group;
  std::string resource;
};

struct AccessDecision {
  bool allowed = false;
  std::string reason;            // the authorizer's explanation, often empty
  std::string evaluation_error;  // an authorizer failed while evaluating (it may still decide)
};

class AccessReviewer {
 public:
  virtual ~AccessReviewer() = default;
  // The authorizers' decision. Throws (std::exception) when no decision could be obtained:
  // the caller must then fail closed.
  virtual AccessDecision Review(const AccessQuery& query) = 0;
};

// Creates an authorization.k8s.io/v1 SubjectAccessReview with the requester's username,
// uid, groups and extra, exactly as the AdmissionReview carried them.
class SubjectAccessReviewer : public AccessReviewer {
 public:
  explicit SubjectAccessReviewer(kube::KubeClient& client) : client_(client) {}
  // Throws kube::KubeError when the call fails, std::runtime_error on an answer without
  // a status. A broken connection (kube::ErrorKind::kTransport) is tried again, up to
  // kReviewAttempts in all; any other failure is thrown at once.
  AccessDecision Review(const AccessQuery& query) override;

  static constexpr int kReviewAttempts = 3;

 private:
  kube::KubeClient& client_;
};

// The SubjectAccessReview object sent for `query`.
Json SubjectAccessReviewFor(const AccessQuery& query);

}  // namespace kmt::webhook
