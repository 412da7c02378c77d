#include "cli/completion.h"

#include <algorithm>
#include <set>

#include "base/json.h"
#include "kube/error.h"
#include "kube/paging.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

bool StartsWith(const std::string& s, const std::string& prefix) { return s.starts_with(prefix); }

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// What a value of `flag` is, for the request being read: the table's ValueKind.
void WantValueOf(const FlagDoc& flag, std::string prefix, CompletionRequest& req) {
  req.prefix = std::move(prefix);
  switch (flag.values) {
    case ValueKind::kNothing:
      req.want = Want::kNothing;  // --timeout, --context: nothing to offer
      break;
    case ValueKind::kFiles:
      req.want = Want::kFiles;
      break;
    case ValueKind::kNodes:
      req.want = Want::kNode;
      break;
    case ValueKind::kSelector:
      req.want = Want::kSelector;
      break;
    case ValueKind::kNamespaces:
      req.want = Want::kNamespace;
      break;
    case ValueKind::kVmis:
      req.want = Want::kVmi;
      break;
    case ValueKind::kChoices:
      req.want = Want::kChoice;
      // -o: the command's formats; the others: the table's.
      req.choices = flag.choices.empty() ? Split(OutputFormats(req.command), ',') : flag.choices;
      break;
  }
}

void Record(const FlagDoc& flag, const std::string& value, CompletionRequest& req) {
  if (flag.name == "kubeconfig") req.kubeconfig = value;
  if (flag.name == "context") req.context = value;
  if (flag.name == "namespace" && !value.empty()) req.ns = value;
  if (flag.name == "exclude-node") req.excluded.push_back(value);
}

std::vector<std::string> Names(kube::KubeClient& client, const kube::Resource& r,
                               const std::string& ns) {
  kube::ListOptions lo;
  lo.omit_managed_fields = true;
  json list = kube::ListAll(client, r, ns, lo);
  std::vector<std::string> names;
  for (const auto& item : base::At(list, "items"))
    names.push_back(base::StringAt(item, {"metadata", "name"}));
  return names;
}

void AddMatching(const std::vector<std::string>& values, const std::string& prefix,
                 std::vector<std::string>& out, const std::string& head = {}) {
  for (const auto& v : values) {
    if (StartsWith(v, prefix)) out.push_back(head + v);
  }
}

std::vector<std::string> ActiveMigrations(kube::KubeClient& client, const std::string& ns) {
  kube::ListOptions lo;
  lo.omit_managed_fields = true;
  json list = kube::ListAll(client, kube::kVirtualMachineInstanceMigrations, ns, lo);
  std::vector<std::string> names;
  for (const auto& item : base::At(list, "items")) {
    const std::string phase = base::StringAt(item, {"status", "phase"});
    if (phase == "Succeeded" || phase == "Failed") continue;
    names.push_back(base::StringAt(item, {"metadata", "name"}));
  }
  return names;
}

// Label keys of every node, and with `key` the values nodes give it.
std::set<std::string> NodeLabels(kube::KubeClient& client, const std::string* key) {
  kube::ListOptions lo;
  lo.omit_managed_fields = true;
  json list = kube::ListAll(client, kube::kNodes, "", lo);
  std::set<std::string> out;
  for (const auto& node : base::At(list, "items")) {
    const json* labels = base::Member(node, {"metadata", "labels"});
    if (labels == nullptr || !labels->is_object()) continue;
    for (auto it = labels->begin(); it != labels->end(); ++it) {
      if (key == nullptr) {
        out.insert(it.key());
      } else if (it.key() == *key && it->is_string()) {
        out.insert(it->get<std::string>());
      }
    }
  }
  return out;
}

// One part of a comma-separated selector at a time: the parts before it are kept.
CompletionAnswer CompleteSelector(kube::KubeClient& client, const std::string& prefix) {
  CompletionAnswer a;
  const size_t comma = prefix.rfind(',');
  const std::string head = comma == std::string::npos ? "" : prefix.substr(0, comma + 1);
  const std::string part = prefix.substr(head.size());
  if (part.find_first_of(" ()") != std::string::npos) {
    a.directive = kDirectiveNoFileComp;  // set-based syntax: nothing sensible to offer
    return a;
  }
  for (const char* op : {"!=", "==", "="}) {
    const size_t at = part.find(op);
    if (at == std::string::npos) continue;
    const std::string key = part.substr(0, at);
    const std::string value_prefix = part.substr(at + std::string(op).size());
    auto values = NodeLabels(client, &key);
    AddMatching({values.begin(), values.end()}, value_prefix, a.candidates, head + key + op);
    a.directive = kDirectiveNoFileComp;
    return a;
  }
  const bool negated = StartsWith(part, "!");
  auto keys = NodeLabels(client, nullptr);
  AddMatching({keys.begin(), keys.end()}, negated ? part.substr(1) : part, a.candidates,
              head + (negated ? "!" : ""));
  // A key is followed by an operator and a value (or a comma after `!key`).
  a.directive = kDirectiveNoFileComp | kDirectiveNoSpace;
  return a;
}

std::vector<std::string> FlagNames(const CompletionRequest& req) {
  std::vector<std::string> out;
  auto offer = [&](const std::string& spelled, const std::string& usage) {
    if (StartsWith(spelled, req.prefix)) out.push_back(spelled + "\t" + usage);
  };
  for (const FlagDoc& f : FlagDocs()) {
    if (!Accepts(req.command, f)) continue;
    const bool given = std::ranges::find(req.given_flags, f.name) != req.given_flags.end();
    if (given && !f.repeatable) continue;
    offer("--" + f.name, f.usage);
    if (f.shorthand != 0) offer(std::string("-") + f.shorthand, f.usage);
  }
  offer("--help", "Help for kubectl migrate.");
  offer("-h", "Help for kubectl migrate.");
  return out;
}

}  // namespace

bool CompletionRequest::NeedsCluster() const {
  switch (want) {
    case Want::kFirstWord:
    case Want::kVmi:
    case Want::kMigration:
    case Want::kActiveMigration:
    case Want::kNode:
    case Want::kSelector:
    case Want::kNamespace:
      return true;
    case Want::kNothing:
    case Want::kFiles:
    case Want::kFlagName:
    case Want::kChoice:
      break;
  }
  return false;
}

CompletionRequest ReadCompletionLine(const std::vector<std::string>& words) {
  CompletionRequest req;
  const std::string current = words.empty() ? "" : words.back();
  const size_t typed = words.empty() ? 0 : words.size() - 1;
  bool subcommand_seen = false;
  bool after_dashdash = false;
  size_t positionals = 0;
  std::string first_positional;      // after `policy`: its subcommand
  const FlagDoc* pending = nullptr;  // a flag whose value is the next word

  for (size_t i = 0; i < typed; ++i) {
    const std::string& w = words[i];
    if (pending != nullptr) {
      Record(*pending, w, req);
      pending = nullptr;
      continue;
    }
    const FlagDoc* flag = nullptr;
    std::optional<std::string> value;
    if (!after_dashdash && w == "--") {
      after_dashdash = true;
      continue;
    }
    if (!after_dashdash && StartsWith(w, "--")) {
      const size_t eq = w.find('=');
      flag = FindFlag(w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2));
      if (eq != std::string::npos) value = w.substr(eq + 1);
    } else if (!after_dashdash && w.size() >= 2 && w[0] == '-') {
      flag = FindFlag(w[1]);
      if (w.size() > 2) value = w[2] == '=' ? w.substr(3) : w.substr(2);
    } else {
      if (!subcommand_seen && positionals == 0) {
        if (w == "help") {
          req.command = Command::kHelp;
          subcommand_seen = true;
          continue;
        }
        auto it = std::find_if(SubcommandDocs().begin(), SubcommandDocs().end(),
                               [&](const SubcommandDoc& s) { return s.name == w; });
        if (it != SubcommandDocs().end()) {
          req.command = it->command;
          subcommand_seen = true;
          continue;
        }
      }
      if (positionals++ == 0) first_positional = w;
      continue;
    }
    if (flag == nullptr) continue;  // unknown (or -h): the plugin itself will say so
    req.given_flags.push_back(flag->name);
    if (value) {
      Record(*flag, *value, req);
    } else if (flag->takes_value()) {  // a bare --wait or --dry-run is complete
      pending = flag;
    }
  }

  if (pending != nullptr) {
    WantValueOf(*pending, current, req);
    return req;
  }
  if (!after_dashdash && StartsWith(current, "-")) {
    const size_t eq = current.find('=');
    const FlagDoc* flag = nullptr;
    if (eq != std::string::npos && StartsWith(current, "--")) {
      flag = FindFlag(current.substr(2, eq - 2));
    } else if (eq == 2 && current.size() >= 3) {
      flag = FindFlag(current[1]);
    }
    if (eq != std::string::npos) {
      // `--flag=val`: the candidates are the values alone, as cobra's are (its shell
      // scripts keep the `--flag=` part).
      if (flag != nullptr) {  // a flag without values to offer wants nothing
        WantValueOf(*flag, current.substr(eq + 1), req);
      } else {
        req.want = Want::kNothing;
      }
      return req;
    }
    req.want = Want::kFlagName;
    req.prefix = current;
    return req;
  }
  req.prefix = current;
  if (req.command == Command::kPolicyExplain) {
    // `policy explain NODE`: the subcommand, then the node being left.
    if (positionals == 0) {
      req.want = Want::kChoice;
      req.choices = {"explain"};
    } else if (positionals == 1 && first_positional == "explain") {
      req.want = Want::kNode;
    } else {
      req.want = Want::kNothing;
    }
  } else if (req.command == Command::kHelp || positionals > 0) {
    req.want = Want::kNothing;
  } else if (!subcommand_seen) {
    req.want = Want::kFirstWord;
  } else {
    switch (req.command) {
      case Command::kExplain:
        req.want = Want::kVmi;
        break;
      case Command::kStatus:
        req.want = Want::kMigration;
        break;
      case Command::kCancel: {
        const bool by_vmi = std::ranges::find(req.given_flags, "vmi") != req.given_flags.end();
        req.want = by_vmi ? Want::kNothing : Want::kActiveMigration;
        break;
      }
      case Command::kMigrate:
      case Command::kList:
      case Command::kPolicyExplain:
      case Command::kHelp:
        req.want = Want::kNothing;
        break;
    }
  }
  return req;
}

CompletionAnswer Complete(const CompletionRequest& req, const std::string& ns,
                          kube::KubeClient* client) {
  CompletionAnswer a;
  a.directive = kDirectiveNoFileComp;
  if (req.NeedsCluster() && client == nullptr && req.want != Want::kFirstWord) {
    a.directive = kDirectiveError;
    return a;
  }
  try {
    switch (req.want) {
      case Want::kNothing:
        break;
      case Want::kFiles:
        a.directive = kDirectiveDefault;
        break;
      case Want::kFlagName:
        a.candidates = FlagNames(req);
        break;
      case Want::kChoice:
        AddMatching(req.choices, req.prefix, a.candidates);
        break;
      case Want::kFirstWord:
        for (const auto& s : SubcommandDocs()) {
          if (StartsWith(s.name, req.prefix)) a.candidates.push_back(s.name + "\t" + s.summary);
        }
        if (StartsWith("help", req.prefix))
          a.candidates.emplace_back("help\tHelp about any command");
        try {
          if (client != nullptr) {
            AddMatching(Names(*client, kube::kVirtualMachineInstances, ns), req.prefix,
                        a.candidates);
          }
        } catch (const kube::KubeError&) {
          // ignored: the subcommands are still worth offering without the cluster.
        }
        break;
      case Want::kVmi:
        AddMatching(Names(*client, kube::kVirtualMachineInstances, ns), req.prefix, a.candidates);
        break;
      case Want::kMigration:
        AddMatching(Names(*client, kube::kVirtualMachineInstanceMigrations, ns), req.prefix,
                    a.candidates);
        break;
      case Want::kActiveMigration:
        AddMatching(ActiveMigrations(*client, ns), req.prefix, a.candidates);
        break;
      case Want::kNode: {
        std::vector<std::string> nodes;
        for (auto& n : Names(*client, kube::kNodes, "")) {
          if (std::ranges::find(req.excluded, n) == req.excluded.end()) {
            nodes.push_back(std::move(n));
          }
        }
        AddMatching(nodes, req.prefix, a.candidates);
        break;
      }
      case Want::kSelector:
        return CompleteSelector(*client, req.prefix);
      case Want::kNamespace:
        AddMatching(Names(*client, kube::kNamespaces, ""), req.prefix, a.candidates);
        break;
    }
  } catch (const kube::KubeError&) {
    return CompletionAnswer{{}, kDirectiveError};
  }
  return a;
}

std::string FormatCompletion(const CompletionAnswer& answer, bool descriptions) {
  std::string out;
  for (const auto& c : answer.candidates) {
    out += descriptions ? c : c.substr(0, c.find('\t'));
    out += "\n";
  }
  out += ":" + std::to_string(answer.directive) + "\n";
  return out;
}

}  // namespace kmt::cli
