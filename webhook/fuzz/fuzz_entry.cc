#include "webhook/fuzz/fuzz_entry.h"

#include <fmt/format.h>

#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "api/added_term.h"
#include "api/node_selector.h"
#include "api/validation.h"
#include "webhook/admission.h"
#include "webhook/shell.h"

namespace kmt::webhook::fuzz {
namespace {

using Json = nlohmann::json;

// An admitter that does what the validator does with the request, without I/O.
AdmissionResponse ReadTerm(const AdmissionRequest& req) {
  for (const Json* obj : {&req.object, &req.old_object}) {
    std::optional<std::string> text = api::AddedTermSource(*obj);
    if (!text) continue;
    api::AddedTermParse parsed = api::ParseAddedTerm(*text);
    if (!parsed.term) return Invalid(std::move(parsed.causes));
    AdmissionResponse r = Allowed();
    r.warnings.push_back(api::ToString(*parsed.term));
    return r;
  }
  return Allowed();
}

std::string CheckShell(std::string_view input) {
  ShellAnswer answer = ServeAdmission("application/json", input, ReadTerm);
  if (answer.http_status != 200 && answer.http_status != 400 && answer.http_status != 415) {
    return fmt::format("shell answered HTTP {}", answer.http_status);
  }
  Json body = Json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return "shell answered a body that is not JSON: " + answer.body;
  if (answer.http_status != 200) return {};
  const std::string uid = DecodeAdmissionReview(input).uid;
  const Json* echoed = nullptr;
  if (auto r = body.find("response"); r != body.end() && r->is_object()) {
    if (auto u = r->find("uid"); u != r->end()) echoed = &*u;
  }
  if (uid.empty()) return "shell answered 200 without a readable request uid";
  if (echoed == nullptr || !echoed->is_string() || echoed->get<std::string>() != uid) {
    return fmt::format("shell answered 200 without echoing uid \"{}\": {}", uid, answer.body);
  }
  return {};
}

std::string CheckTermParser(std::string_view input) {
  api::AddedTermParse parsed = api::ParseAddedTerm(input);
  if (parsed.term.has_value() == !parsed.causes.empty()) {
    return "ParseAddedTerm returned a term together with causes, or neither";
  }
  const std::string& prefix = api::AddedTermFieldPath();
  for (const api::Cause& c : parsed.causes) {
    if (!c.field.starts_with(prefix)) {
      return fmt::format("cause field \"{}\" is not under {}", c.field, prefix);
    }
  }
  if (!parsed.term) return {};
  api::TermParse again = api::ParseNodeSelectorTerm(api::ToJson(*parsed.term), "");
  if (!again.term || !(*again.term == *parsed.term)) {
    return "a parsed term did not survive ToJson and a strict parse: " +
           api::ToJson(*parsed.term).dump();
  }
  if (!api::ValidateNodeSelectorTerm(*again.term, "").empty()) {
    return "a valid term no longer validates after ToJson: " + api::ToJson(*parsed.term).dump();
  }
  (void)api::ToString(*parsed.term);
  return {};
}

}  // namespace

std::string CheckAdmissionInput(std::string_view input) {
  try {
    if (std::string broken = CheckShell(input); !broken.empty()) return broken;
    return CheckTermParser(input);
  } catch (const std::exception& e) {
    return std::string("exception escaped: ") + e.what();
  } catch (...) {
    return "unknown exception escaped";
  }
}

}  // namespace kmt::webhook::fuzz
