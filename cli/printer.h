// cli/printer.h — kubectl-style output: -o name|yaml|json, and the text of
// API errors exactly as kubectl prints them ("Error from server (Forbidden): …").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kmt::cli {

// YAML 1.2 block style for a JSON document; strings that a YAML reader would
// not read back as the same string (numbers, booleans, null, special
// characters, leading/trailing space) are double-quoted.
std::string ToYaml(const nlohmann::json& doc);

// "virtualmachineinstancemigration.kubevirt.io/NAME" for -o name.
std::string ResourceName(const nlohmann::json& obj);

// Renders obj as -o `format` ("name", "yaml", "json"); "" → the kubectl
// default line "<resource>/<name> <verb>" with " (server dry run)" / " (dry run)".
std::string Render(const nlohmann::json& obj, const std::string& format, const std::string& verb,
                   const std::string& dry_run_suffix);

// Rows as kubectl's table printer aligns them (tabwriter, padding 3): every column but the
// last padded to its widest cell plus three spaces. The first row is the header.
std::string RenderTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace kmt::cli
