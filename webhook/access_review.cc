#include "webhook/access_review.h"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "base/json.h"
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
  if (!query.path.empty()) {
    spec["nonResourceAttributes"] = {{"path", query.path}, {"verb", query.verb}};
  } else {
    spec["resourceAttributes"] = {{"namespace", query.ns},
                                  {"verb", query.verb},
                                  {"group", query.group},
                                  {"resource", query.resource}};
  }
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
  const Json* status = base::Object(answer, "status").value_or(nullptr);
  if (status == nullptr) throw std::runtime_error("the SubjectAccessReview answer has no status");
  AccessDecision d;
  d.allowed = base::Bool(*status, "allowed").value_or(false);
  // status.denied means an authorizer said no outright; allowed already reflects that.
  if (base::Bool(*status, "denied").value_or(false)) d.allowed = false;
  d.reason = base::StringAt(*status, "reason");
  d.evaluation_error = base::StringAt(*status, "evaluationError");
  return d;
}

namespace {

void Append(std::string& key, std::string_view part) {
  key += std::to_string(part.size());
  key += ':';
  key += part;
}

}  // namespace

std::string AccessCacheKey(const AccessQuery& query) {
  std::string key;
  Append(key, query.user.username);
  Append(key, query.user.uid);
  std::vector<std::string> groups = query.user.groups;
  std::ranges::sort(groups);
  key += 'g' + std::to_string(groups.size());
  for (const auto& g : groups) Append(key, g);
  key += 'e' + std::to_string(query.user.extra.size());
  for (const auto& [k, values] : query.user.extra) {  // a std::map: ordered by key
    Append(key, k);
    key += 'v' + std::to_string(values.size());
    for (const auto& v : values) Append(key, v);
  }
  Append(key, query.ns);
  Append(key, query.verb);
  Append(key, query.group);
  Append(key, query.resource);
  // Last, so every resource question keeps the key it had; "p" marks a non-resource one.
  if (!query.path.empty()) {
    key += 'p';
    Append(key, query.path);
  }
  return key;
}

CachingAccessReviewer::CachingAccessReviewer(AccessReviewer& inner, AccessCacheOptions options,
                                             base::Clock& clock)
    : inner_(inner), options_(options), clock_(clock) {}

size_t CachingAccessReviewer::size() const {
  std::scoped_lock lock(mu_);
  return entries_.size();
}

AccessDecision CachingAccessReviewer::Review(const AccessQuery& query) {
  const std::string key = AccessCacheKey(query);
  {
    std::scoped_lock lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      if (clock_.Now() < it->second.expires) {
        lru_.splice(lru_.begin(), lru_, it->second.lru);
        return it->second.decision;
      }
      lru_.erase(it->second.lru);
      entries_.erase(it);
    }
  }
  AccessDecision d = inner_.Review(query);  // throws: nothing remembered
  if (!d.evaluation_error.empty() || options_.capacity == 0) return d;
  const auto ttl = d.allowed ? options_.allowed_ttl : options_.denied_ttl;
  if (ttl <= std::chrono::milliseconds::zero()) return d;
  std::scoped_lock lock(mu_);
  const auto expires = clock_.Now() + ttl;
  if (auto it = entries_.find(key); it != entries_.end()) {  // a concurrent miss got there
    it->second.decision = d;
    it->second.expires = expires;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return d;
  }
  while (entries_.size() >= options_.capacity) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(key);
  entries_.emplace(key, Entry{d, expires, lru_.begin()});
  return d;
}

}  // namespace kmt::webhook
