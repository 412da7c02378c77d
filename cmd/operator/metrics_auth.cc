// cmd/operator/metrics_auth.cc
#include "cmd/operator/metrics_auth.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <utility>

namespace kmt::cmd {
namespace {

constexpr std::string_view kAuthenticatedGroup = "system:authenticated";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

ScrapeRefusal Refuse(int status, std::string message) {
  ScrapeRefusal r;
  r.status = status;
  r.body = std::move(message) + "\n";
  return r;
}

}  // namespace

std::optional<std::string> BearerToken(std::string_view authorization) {
  const std::string_view auth = Trim(authorization);
  // "Bearer TOKEN": the scheme, one space, the token up to the next space (a third part is
  // ignored, as strings.SplitN(auth, " ", 3) does).
  const size_t space = auth.find(' ');
  if (space == std::string_view::npos || Lower(auth.substr(0, space)) != "bearer") {
    return std::nullopt;
  }
  std::string_view token = auth.substr(space + 1);
  token = token.substr(0, token.find(' '));
  if (token.empty()) return std::nullopt;
  return std::string(token);
}

std::optional<ScrapeRefusal> AuthorizeScrape(std::string_view authorization,
                                             std::string_view method, std::string_view path,
                                             webhook::TokenAuthenticator& authenticator,
                                             webhook::AccessReviewer& reviewer) {
  const std::optional<std::string> token = BearerToken(authorization);
  if (!token) return Refuse(401, "Unauthorized");
  webhook::TokenIdentity id;
  try {
    id = authenticator.Authenticate(*token);
  } catch (const std::exception& e) {
    ScrapeRefusal r = Refuse(500, "Authentication failed");
    r.error = e.what();
    r.failure = true;
    return r;
  }
  if (!id.authenticated) {
    ScrapeRefusal r = Refuse(401, "Unauthorized");
    r.error = id.error;
    return r;
  }
  webhook::AccessQuery q;
  q.user = std::move(id.user);
  if (std::ranges::find(q.user.groups, kAuthenticatedGroup) == q.user.groups.end()) {
    q.user.groups.emplace_back(kAuthenticatedGroup);
  }
  q.verb = Lower(method);
  q.path = std::string(path);
  webhook::AccessDecision d;
  try {
    d = reviewer.Review(q);
  } catch (const std::exception& e) {
    ScrapeRefusal r = Refuse(500, "Authorization for user " + q.user.username + " failed");
    r.user = q.user.username;
    r.error = e.what();
    r.failure = true;
    return r;
  }
  if (!d.allowed) {
    ScrapeRefusal r = Refuse(403, "Authorization denied for user " + q.user.username);
    r.user = q.user.username;
    r.error = d.reason;
    return r;
  }
  return std::nullopt;
}

}  // namespace kmt::cmd
