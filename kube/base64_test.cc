// kube/base64_test.cc
#include "kube/base64.h"

#include <catch2/catch.hpp>

namespace kmt::kube {
namespace {

TEST_CASE("EncodeBase64 matches RFC 4648 test vectors") {
  auto [in, out] = GENERATE(table<std::string, std::string>({
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
      {std::string("\xff\xfe\x00", 3), "//4A"},
  }));
  CAPTURE(in);
  CHECK(EncodeBase64(in) == out);
}

TEST_CASE("DecodeBase64") {
  struct Row {
    const char* in;
    std::optional<std::string> out;
  };
  const Row row = GENERATE(values<Row>({
      {"aGVsbG8=", std::string("hello")},
      {"aGVsbG8", std::string("hello")},
      {"aGVs\nbG8=", std::string("hello")},
      {"", std::string("")},
      {"YQ==", std::string("a")},
      {"!!", std::nullopt},
      {"YQ==YQ", std::nullopt},
      {"Y", std::nullopt},
  }));
  CAPTURE(row.in);
  CHECK(DecodeBase64(row.in) == row.out);
}

TEST_CASE("What EncodeBase64 writes, DecodeBase64 reads back") {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  for (size_t n = 0; n <= all.size(); n += 37) {
    CAPTURE(n);
    CHECK(DecodeBase64(EncodeBase64(all.substr(0, n))) == all.substr(0, n));
  }
}

}  // namespace
}  // namespace kmt::kube
