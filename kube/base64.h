// kube/base64.h — standard base64 (RFC 4648 alphabet), as Go's encoding/json writes []byte
// fields: Secret data, caBundle, kubeconfig *-data, AdmissionReview patches.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kmt::kube {

// With padding.
std::string EncodeBase64(std::string_view bytes);
// Padding optional, line breaks and spaces ignored; nullopt when malformed.
std::optional<std::string> DecodeBase64(std::string_view in);

}  // namespace kmt::kube
