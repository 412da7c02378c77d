// webhook/testing/fake_access_reviewer.h — an AccessReviewer that decides from a table,
// as RBAC would from bindings: a user or any of their groups granted the (namespace,
// verb, group, resource) — or, for a non-resource question, the (verb, path) — is allowed.
// Can be made to fail.
#pragma once

#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include "webhook/access_review.h"

namespace kmt::webhook::testing {

class FakeAccessReviewer : public AccessReviewer {
 public:
  // subject: "user:NAME" or "group:NAME"; ns "" grants in every namespace (a ClusterRoleBinding).
  void Grant(std::string subject, std::string ns, std::string verb, std::string group,
             std::string resource) {
    grants_.insert({std::move(subject), std::move(ns), std::move(verb), std::move(group),
                    std::move(resource), ""});
  }
  // A ClusterRole rule `nonResourceURLs: [path], verbs: [verb]`, bound to subject.
  void GrantPath(std::string subject, std::string verb, std::string path) {
    grants_.insert({std::move(subject), "", std::move(verb), "", "", std::move(path)});
  }
  std::optional<std::string> error;  // when set, Review throws std::runtime_error(*error)
  std::string deny_reason;           // reason reported with a denial
  int calls = 0;                     // reviews asked for

  AccessDecision Review(const AccessQuery& q) override {
    ++calls;
    if (error) throw std::runtime_error(*error);
    auto granted = [&](const std::string& subject) {
      for (const std::string& ns : {q.ns, std::string()}) {
        if (grants_.count({subject, ns, q.verb, q.group, q.resource, q.path}) > 0) return true;
      }
      return false;
    };
    AccessDecision d;
    d.allowed = granted("user:" + q.user.username);
    for (const auto& g : q.user.groups) d.allowed = d.allowed || granted("group:" + g);
    if (!d.allowed) d.reason = deny_reason;
    return d;
  }

 private:
  std::set<std::tuple<std::string, std::string, std::string, std::string, std::string, std::string>>
      grants_;
};

}  // namespace kmt::webhook::testing
