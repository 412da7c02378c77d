#include "webhook/token_review.h"

#include <openssl/evp.h>

#include <stdexcept>
#include <utility>

#include "base/json.h"
#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::webhook {
namespace {

std::vector<std::string> Strings(const Json& list) {
  std::vector<std::string> out;
  if (!list.is_array()) return out;
  for (const Json& v : list) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::string Sha256(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &n, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed");  // OpenSSL broken: nothing sensible to do
  }
  return {reinterpret_cast<const char*>(digest), n};
}

}  // namespace

Json TokenReviewFor(const std::string& token) {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "TokenReview"},
          {"spec", {{"token", token}}}};
}

TokenIdentity TokenIdentityOf(const Json& answer) {
  // Members of the status are read leniently: the wrong type counts as absent.
  const auto status = base::Object(answer, "status");
  if (!status) throw std::runtime_error("the TokenReview answer has no status");
  TokenIdentity id;
  id.authenticated = base::Bool(**status, "authenticated").value_or(false);
  id.error = base::StringAt(**status, "error");
  if (!id.authenticated) return id;
  if (const auto user = base::Object(**status, "user")) {
    id.user.username = base::StringAt(**user, "username");
    id.user.uid = base::StringAt(**user, "uid");
    id.user.groups = Strings(base::At(**user, "groups"));
    if (const auto extra = base::Object(**user, "extra")) {
      for (const auto& [key, values] : (*extra)->items()) id.user.extra[key] = Strings(values);
    }
  }
  // An authenticated answer without a user name names nobody: treat it as a rejection.
  if (id.user.username.empty()) {
    id.authenticated = false;
    id.user = {};
  }
  return id;
}

TokenIdentity TokenReviewer::Authenticate(const std::string& token) {
  const Json review = TokenReviewFor(token);
  for (int attempt = 1;; ++attempt) {
    try {
      return TokenIdentityOf(client_.Create(kube::kTokenReviews, "", review));
    } catch (const kube::KubeError& e) {
      if (e.kind() != kube::ErrorKind::kTransport || attempt == kReviewAttempts) throw;
    }
  }
}

CachingTokenAuthenticator::CachingTokenAuthenticator(TokenAuthenticator& inner,
                                                     TokenCacheOptions options, base::Clock& clock)
    : inner_(inner), options_(options), clock_(clock) {}

size_t CachingTokenAuthenticator::size() const {
  std::scoped_lock lock(mu_);
  return entries_.size();
}

TokenIdentity CachingTokenAuthenticator::Authenticate(const std::string& token) {
  const std::string key = Sha256(token);
  {
    std::scoped_lock lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      if (clock_.Now() < it->second.expires) {
        lru_.splice(lru_.begin(), lru_, it->second.lru);
        return it->second.identity;
      }
      lru_.erase(it->second.lru);
      entries_.erase(it);
    }
  }
  TokenIdentity id = inner_.Authenticate(token);  // throws: nothing remembered
  const auto ttl = id.authenticated ? options_.authenticated_ttl : options_.rejected_ttl;
  if (options_.capacity == 0 || ttl <= std::chrono::milliseconds::zero()) return id;
  std::scoped_lock lock(mu_);
  const auto expires = clock_.Now() + ttl;
  if (auto it = entries_.find(key); it != entries_.end()) {  // a concurrent miss got there
    it->second.identity = id;
    it->second.expires = expires;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return id;
  }
  while (entries_.size() >= options_.capacity) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(key);
  entries_.emplace(key, Entry{id, expires, lru_.begin()});
  return id;
}

}  // namespace kmt::webhook
