// cmd/operator/metrics_auth.h — who may scrape /metrics: the decision controller-runtime's
// metrics filter (pkg/metrics/filters WithAuthenticationAndAuthorization) makes, which is
// what a kubebuilder v4 project serves.
//
//   1. Authentication: the request's bearer token, checked by a TokenReview.
//        no Authorization header, another scheme, an empty token  → 401 "Unauthorized"
//        a token the API server does not accept                   → 401 "Unauthorized"
//        the TokenReview could not be made                        → 500 "Authentication failed"
//      An accepted user gets the group system:authenticated when the answer lacks it (the
//      API server's authenticated-group adder).
//   2. Authorization: a SubjectAccessReview of that user (name, uid, groups, extra) for the
//      non-resource URL of the request, verb = the method in lower case ("get").
//        denied (or no opinion)                → 403 "Authorization denied for user U"
//        the review could not be made          → 500 "Authorization for user U failed"
//   3. Allowed → no verdict: the caller serves the page.
//
// One difference on purpose: controller-runtime answers a rejected token with 500, because
// its union authenticator turns the bearer-token authenticator's "invalid bearer token" into
// an error; kube-apiserver itself, and this function, answer 401 — a client error, which a
// scraper and an alert on 5xx answers should see as one.
//
// Bodies are Go's http.Error's: the message and a newline, text/plain. Answers are cached by
// the authenticator and reviewer passed in (webhook/token_review.h, webhook/access_review.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "webhook/access_review.h"
#include "webhook/token_review.h"

namespace kmt::cmd {

struct ScrapeRefusal {
  int status = 401;
  std::string body;      // "Unauthorized\n", ...
  std::string user;      // the authenticated user's name, when there is one
  std::string error;     // for the log: why the review failed, or the denial's reason
  bool failure = false;  // a review could not be made (500): log as an error
};

// The token of an "Authorization: Bearer TOKEN" header, as the API server's bearer-token
// authenticator reads it: the scheme case-insensitive, surrounding spaces trimmed; nullopt
// for no header, another scheme or an empty token.
std::optional<std::string> BearerToken(std::string_view authorization);

// nullopt: allowed, serve it. Otherwise the answer to send instead.
std::optional<ScrapeRefusal> AuthorizeScrape(std::string_view authorization,
                                             std::string_view method, std::string_view path,
                                             webhook::TokenAuthenticator& authenticator,
                                             webhook::AccessReviewer& reviewer);

}  // namespace kmt::cmd
