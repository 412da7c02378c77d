// webhook/token_review.h — "who holds this bearer token?", asked of the API server's
// authenticators (service account tokens, OIDC, whatever the cluster runs) through an
// authentication.k8s.io/v1 TokenReview, as kube-apiserver's delegated authentication does
// for an aggregated API server and controller-runtime's metrics filter does for a scrape.
//
// A token the API server does not accept is an answer (not authenticated), not a failure;
// a failure (the review could not be made, or its answer has no status) throws, and the
// caller must then fail closed.
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

struct TokenIdentity {
  bool authenticated = false;
  UserInfo user;      // when authenticated: status.user as the API server answered it
  std::string error;  // status.error, when the authenticators said why not (often empty)
};

class TokenAuthenticator {
 public:
  virtual ~TokenAuthenticator() = default;
  // Throws (std::exception) when no answer could be obtained.
  virtual TokenIdentity Authenticate(const std::string& token) = 0;
};

// Creates a TokenReview with the token and no audiences (so the API server checks the
// token against its own audiences, as controller-runtime's filter asks).
class TokenReviewer : public TokenAuthenticator {
 public:
  explicit TokenReviewer(kube::KubeClient& client) : client_(client) {}
  // Throws kube::KubeError when the call fails, std::runtime_error on an answer without a
  // status. A broken connection (kube::ErrorKind::kTransport) is tried again, up to
  // kReviewAttempts in all (a TokenReview stores nothing); any other failure at once.
  TokenIdentity Authenticate(const std::string& token) override;

  static constexpr int kReviewAttempts = 3;

 private:
  kube::KubeClient& client_;
};

// Remembers another authenticator's answers for a short time, as the API server's token
// cache does, so a scraper that comes back every 15 s costs one TokenReview per TTL. The key
// is the SHA-256 of the token: the cache never holds a token. A failure (exception) is never
// remembered. Bounded: at `capacity` entries the least recently used goes, so a client that
// sends a new made-up token with every request cannot grow it. Thread-safe; a miss asks
// without holding the lock.
//
// `authenticated_ttl` is how long a revoked token (its ServiceAccount deleted) still works
// here; a rejected answer is kept `rejected_ttl`.
struct TokenCacheOptions {
  std::chrono::milliseconds authenticated_ttl{10'000};
  std::chrono::milliseconds rejected_ttl{2'000};
  size_t capacity = 1024;
};

class CachingTokenAuthenticator : public TokenAuthenticator {
 public:
  // Entries expire on `clock`'s steady time.
  CachingTokenAuthenticator(TokenAuthenticator& inner, TokenCacheOptions options = {},
                            base::Clock& clock = base::SystemClock());
  TokenIdentity Authenticate(const std::string& token) override;
  size_t size() const;

 private:
  struct Entry {
    TokenIdentity identity;
    base::SteadyTime expires;
    std::list<std::string>::iterator lru;
  };
  TokenAuthenticator& inner_;
  TokenCacheOptions options_;
  base::Clock& clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;  // by SHA-256 of the token (raw bytes)
  std::list<std::string> lru_;                      // most recently used first
};

// The TokenReview object sent for `token`.
Json TokenReviewFor(const std::string& token);

// The answer's status read as the API server's webhook token authenticator reads it.
// Throws std::runtime_error when there is no status object.
TokenIdentity TokenIdentityOf(const Json& answer);

}  // namespace kmt::webhook
