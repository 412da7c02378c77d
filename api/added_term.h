// api/added_term.h — the admin's request: where it lives on a VMIM and how it is read.
//
// DESIGN.md §2: the request travels as the VMIM annotation kAddedTermAnnotation because
// KubeVirt's structural CRD would prune an unknown spec field. AddedTermSource() is the one
// place that knows this; moving to a spec field is a one-line change there.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/cause.h"
#include "api/node_selector.h"

namespace kmt::api {

inline constexpr size_t kMaxAddedTermBytes = 16 * 1024;

// The text of the request on a VMIM (JSON object), or nullopt when the VMIM carries none.
// A present but non-string annotation value cannot occur (annotations are map[string]string),
// and is treated as absent.
std::optional<std::string> AddedTermSource(const nlohmann::json& vmim);

// The field path every cause about the request starts with:
// "metadata.annotations[migration-target.kubevirt.io/added-node-selector-term]".
const std::string& AddedTermFieldPath();

struct AddedTermParse {
  std::optional<NodeSelectorTerm> term;  // set iff causes is empty
  std::vector<Cause> causes;
};

// Size cap (FieldValueTooLong), JSON syntax (FieldValueInvalid naming the byte
// position; a leading byte order mark is no JSON), members repeated within one object
// (FieldValueInvalid naming each repeat, as the API server's strict decoding rejects
// them), strict shape (node_selector.h) and validation (validation.h).
AddedTermParse ParseAddedTerm(std::string_view text);

}  // namespace kmt::api
