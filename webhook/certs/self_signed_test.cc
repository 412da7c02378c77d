#include "webhook/certs/self_signed.h"

#include <catch2/catch.hpp>

#include "base/clock.h"

namespace kmt::webhook::certs {
namespace {

using namespace std::chrono;

// Certificates are dated by the real wall time: verification checks them against it.

TEST_CASE("a CA signs serving certificates with DNS and IP SANs") {
  auto now = base::SystemClock().WallNow();
  KeyPair ca = MakeCa("test-ca", now, hours(24 * 365 * 10));
  auto ca_info = Inspect(ca.cert_pem);
  REQUIRE(ca_info);
  CHECK(ca_info->is_ca);
  KeyPair serving = MakeServing(ca, {"svc.ns.svc", "127.0.0.1", "::1"}, now, hours(24));
  auto info = Inspect(serving.cert_pem);
  REQUIRE(info);
  CHECK_FALSE(info->is_ca);
  CHECK(info->hosts == std::vector<std::string>{"svc.ns.svc", "127.0.0.1", "::1"});
  auto remaining = duration_cast<hours>(info->not_after - now).count();
  CHECK(remaining >= 23);
  CHECK(remaining <= 24);
  CHECK(Verifies(ca.cert_pem, serving.cert_pem, serving.key_pem));
}

TEST_CASE("verification fails for another CA or another key") {
  auto now = base::SystemClock().WallNow();
  KeyPair ca1 = MakeCa("one", now, hours(48));
  KeyPair ca2 = MakeCa("two", now, hours(48));
  KeyPair s1 = MakeServing(ca1, {"a"}, now, hours(24));
  KeyPair s2 = MakeServing(ca1, {"a"}, now, hours(24));
  CHECK_FALSE(Verifies(ca2.cert_pem, s1.cert_pem, s1.key_pem));
  CHECK_FALSE(Verifies(ca1.cert_pem, s1.cert_pem, s2.key_pem));
  CHECK_FALSE(Verifies(ca1.cert_pem, "garbage", s1.key_pem));
}

TEST_CASE("bad input is reported, not crashed on") {
  CHECK_FALSE(Inspect("").has_value());
  CHECK_FALSE(Inspect("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"));
  KeyPair junk{"nope", "nope"};
  CHECK_THROWS_WITH(MakeServing(junk, {"a"}, base::SystemClock().WallNow(), hours(1)),
                    "certificate authority does not parse");
  KeyPair ca = MakeCa("ca", base::SystemClock().WallNow(), hours(1));
  CHECK_THROWS_WITH(MakeServing(ca, {}, base::SystemClock().WallNow(), hours(1)),
                    "a serving certificate needs at least one host");
}

}  // namespace
}  // namespace kmt::webhook::certs
