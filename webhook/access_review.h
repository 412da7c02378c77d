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

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/clock.h"
#include "kube/client.h"
#include "webhook/admission.h"

namespace kmt::webhook {

// The question, and who asks: resourceAttributes (ns, verb, group, resource), or, when
// `path` is set, nonResourceAttributes (path, verb; ns, group and resource unused), as
// for a scrape of /metrics.
struct AccessQuery {
  UserInfo user;
  std::string ns;
  std::string verb;
  std::string group;
  std::string resource;
  std::string path;  // a non-resource URL such as "/metrics"
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

// Remembers another reviewer's decisions for a short time, as kube-apiserver's webhook
// authorizer does (there: allowed 5 min, denied 30 s), so a burst of placed migrations by one
// admin costs one SubjectAccessReview instead of one each. The key is everything the question
// carries: user name, uid, groups, extra, namespace, verb, group and resource. A decision with
// an evaluation error and a failure (exception) are never remembered. (For a non-resource
// question the key holds the path and verb instead.) Bounded: at `capacity`
// entries the least recently used goes. Thread-safe; a miss asks without holding the lock, so
// two concurrent misses for one key may both ask.
//
// The TTLs are how long a change of RBAC takes to show: a revoked admin can still place
// migrations for up to `allowed_ttl`, a newly granted one waits up to `denied_ttl`.
struct AccessCacheOptions {
  std::chrono::milliseconds allowed_ttl{10'000};
  std::chrono::milliseconds denied_ttl{2'000};
  size_t capacity = 4096;
};

class CachingAccessReviewer : public AccessReviewer {
 public:
  // Entries expire on `clock`'s steady time.
  CachingAccessReviewer(AccessReviewer& inner, AccessCacheOptions options = {},
                        base::Clock& clock = base::SystemClock());
  AccessDecision Review(const AccessQuery& query) override;
  size_t size() const;

 private:
  struct Entry {
    AccessDecision decision;
    base::SteadyTime expires;
    std::list<std::string>::iterator lru;
  };
  AccessReviewer& inner_;
  AccessCacheOptions options_;
  base::Clock& clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // most recently used first
};

// The cache key of a query: every member, unambiguously (length-prefixed), groups and extra
// in a canonical order.
std::string AccessCacheKey(const AccessQuery& query);

// The SubjectAccessReview object sent for `query`.
Json SubjectAccessReviewFor(const AccessQuery& query);

}  // namespace kmt::webhook
