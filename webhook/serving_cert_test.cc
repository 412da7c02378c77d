#include "webhook/serving_cert.h"

#include <catch2/catch.hpp>
#include <string>

#include "http/testing/test_tls.h"

namespace kmt::webhook {
namespace {

using http::testing::TestAuthority;
using http::testing::WriteFileAtomically;

struct Files {
  std::string dir = http::testing::MakeTempDir();
  std::string cert = dir + "/tls.crt";
  std::string key = dir + "/tls.key";
};

TEST_CASE("Reload loads a pair, then reports unchanged bytes as unchanged") {
  TestAuthority ca;
  Files f;
  auto pair = ca.Issue(0x1001);
  WriteFileAtomically(f.cert, pair.cert);
  WriteFileAtomically(f.key, pair.key);

  ServingCertificate sc(f.cert, f.key);
  CHECK_FALSE(sc.Loaded());
  CHECK(sc.Describe().empty());
  ReloadResult r = sc.Reload();
  CHECK(r.outcome == ReloadOutcome::kLoaded);
  CHECK(r.message.rfind("subject=CN=kmt-webhook, serial=1001, notAfter=", 0) == 0);
  CHECK(sc.Loaded());
  CHECK(sc.Describe() == r.message);
  CHECK(sc.Reload().outcome == ReloadOutcome::kUnchanged);
}

TEST_CASE("Reload swaps in a rotated pair") {
  TestAuthority ca;
  Files f;
  auto first = ca.Issue(0x10);
  WriteFileAtomically(f.cert, first.cert);
  WriteFileAtomically(f.key, first.key);
  ServingCertificate sc(f.cert, f.key);
  REQUIRE(sc.Reload().outcome == ReloadOutcome::kLoaded);

  auto second = ca.Issue(0x20);
  WriteFileAtomically(f.cert, second.cert);
  WriteFileAtomically(f.key, second.key);
  ReloadResult r = sc.Reload();
  CHECK(r.outcome == ReloadOutcome::kLoaded);
  CHECK(sc.Describe().find("serial=20,") != std::string::npos);
}

TEST_CASE("Reload keeps the served pair while a rotation is half written") {
  TestAuthority ca;
  Files f;
  auto first = ca.Issue(0x10);
  WriteFileAtomically(f.cert, first.cert);
  WriteFileAtomically(f.key, first.key);
  ServingCertificate sc(f.cert, f.key);
  REQUIRE(sc.Reload().outcome == ReloadOutcome::kLoaded);

  auto second = ca.Issue(0x20);
  WriteFileAtomically(f.cert, second.cert);  // the key still belongs to the first
  ReloadResult r = sc.Reload();
  CHECK(r.outcome == ReloadOutcome::kFailed);
  CHECK(r.message == "the key in " + f.key + " does not belong to the certificate in " + f.cert);
  CHECK(sc.Describe().find("serial=10,") != std::string::npos);
  // The same broken bytes are not reported again.
  CHECK(sc.Reload().outcome == ReloadOutcome::kUnchanged);

  WriteFileAtomically(f.key, second.key);
  CHECK(sc.Reload().outcome == ReloadOutcome::kLoaded);
  CHECK(sc.Describe().find("serial=20,") != std::string::npos);
}

TEST_CASE("Reload reports missing and unparsable files") {
  TestAuthority ca;
  Files f;
  ServingCertificate sc(f.cert, f.key);
  ReloadResult missing = sc.Reload();
  CHECK(missing.outcome == ReloadOutcome::kFailed);
  CHECK(missing.message == "cannot read certificate file " + f.cert);

  auto pair = ca.Issue(0x30);
  WriteFileAtomically(f.cert, pair.cert);
  ReloadResult no_key = sc.Reload();
  CHECK(no_key.outcome == ReloadOutcome::kFailed);
  CHECK(no_key.message == "cannot read key file " + f.key);

  WriteFileAtomically(f.key, "not a key");
  ReloadResult bad_key = sc.Reload();
  CHECK(bad_key.outcome == ReloadOutcome::kFailed);
  CHECK(bad_key.message.rfind("no PEM private key in " + f.key + ": ", 0) == 0);

  WriteFileAtomically(f.cert, "garbage");
  WriteFileAtomically(f.key, pair.key);
  ReloadResult bad_cert = sc.Reload();
  CHECK(bad_cert.outcome == ReloadOutcome::kFailed);
  CHECK(bad_cert.message.rfind("no PEM certificate in " + f.cert + ": ", 0) == 0);
  CHECK_FALSE(sc.Loaded());
}

}  // namespace
}  // namespace kmt::webhook
