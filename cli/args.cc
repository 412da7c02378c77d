#include "cli/args.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <memory>

namespace kmt::cli {
namespace {

// -h/--help: accepted everywhere, listed by no help text.
const FlagDoc& HelpFlag() {
  static const auto* help = new FlagDoc{
      .name = "help", .shorthand = 'h', .usage = "Help for kubectl migrate.", .bare = "true"};
  return *help;
}

const char* const kOptions = "Options";
const char* const kGlobalOptions = "Global options";
const char* const kShellCompletion =
    "Shell completion: put kubectl_complete-migrate next to kubectl-migrate on PATH (kubectl >= "
    "1.26).";

// kubectl's help layout: the command's text, its subcommands, its options and the global
// ones as `  -o, --output='': usage`, sorted by name, then the usage lines.
class KubectlFormatter : public CLI::Formatter {
 public:
  explicit KubectlFormatter(const CommandDoc& doc) : doc_(doc) {}

  std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const override {
    std::string out = doc_.about;
    auto subs = app->get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); });
    if (!subs.empty()) {
      std::ranges::sort(
          subs, [](const CLI::App* a, const CLI::App* b) { return a->get_name() < b->get_name(); });
      out += "\nAvailable Commands:\n";
      for (const CLI::App* s : subs) {
        std::string name = s->get_name();
        name.resize(std::max<size_t>(name.size() + 1, 12), ' ');
        out += "  " + name + s->get_description() + "\n";
      }
    }
    out += Group(app, kOptions);
    if (doc_.command == Command::kMigrate) {
      out += "\n" + std::string(kShellCompletion) + "\n";
      out += Group(app, kGlobalOptions);
    }
    out += "\nUsage:\n";
    for (const auto& u : doc_.usage) out += "  " + u + "\n";
    return out;
  }

 private:
  static std::string Group(const CLI::App* app, const std::string& group) {
    auto opts = app->get_options(
        [&](const CLI::Option* o) { return o->get_group() == group && !o->get_lnames().empty(); });
    if (opts.empty()) return {};
    std::ranges::sort(opts, [](const CLI::Option* a, const CLI::Option* b) {
      return a->get_lnames()[0] < b->get_lnames()[0];
    });
    std::string out = "\n" + group + ":\n";
    for (const CLI::Option* o : opts) {
      const FlagDoc* f = FindFlag(o->get_lnames()[0]);
      out += o->get_snames().empty() ? "      " : "  -" + o->get_snames()[0] + ", ";
      out += "--" + f->name + "=" + f->shown_default + ": " + o->get_description() + "\n";
    }
    return out;
  }

  const CommandDoc& doc_;
};

// The CLI11 apps of `kubectl migrate`: the root is the main command (its positional NAME,
// every flag and -h), with a subcommand per other command; policy has its own, explain.
// Every subcommand falls through to the root for the flags it lacks, so that a flag given to
// the wrong command is reported as kubectl reports it, after parsing.
struct Parser {
  std::unique_ptr<CLI::App> root;
  std::map<const CLI::App*, std::vector<std::string>> positionals;
  std::map<const CLI::App*, Command> command_of;
  CLI::App* policy = nullptr;
  CLI::App* help = nullptr;
};

CLI::Option* AddFlag(CLI::App& app, const FlagDoc& f, const std::string& description,
                     const std::string& group) {
  std::string names;
  const std::string bare = f.takes_value() ? "" : "{" + f.bare + "}";
  if (f.shorthand != 0) names = std::string("-") + f.shorthand + bare + ",";
  names += "--" + f.name + bare;
  CLI::Option* op = f.takes_value() ? app.add_option(names) : app.add_flag(names);
  // Every occurrence is kept: the table's setter sees each in turn (and refuses a repeat).
  op->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  op->description(description)->group(group);
  if (f.check) {
    op->check(CLI::Validator([check = f.check](std::string& v) { return check(v); }, ""));
  }
  return op;
}

void AddCommand(Parser& p, CLI::App& app, const CommandDoc& doc) {
  app.formatter(std::make_shared<KubectlFormatter>(doc));
  app.allow_extras();  // unknown flags: reported after parsing, in pflag's words
  p.command_of[&app] = doc.command;
  app.add_option("args", p.positionals[&app]);
  for (const std::string& name : doc.flags) {
    const FlagDoc& f = *FindFlag(name);
    AddFlag(app, f, HelpLine(doc.command, f), kOptions);
  }
}

std::unique_ptr<Parser> BuildParser() {
  auto p = std::make_unique<Parser>();
  const auto& commands = Commands();
  p->root = std::make_unique<CLI::App>(commands[0].about, "kubectl migrate");
  CLI::App& root = *p->root;
  root.set_help_flag();  // -h is a flag of the table's kind (HelpFlag), read after parsing
  root.require_subcommand(0, 1);
  AddCommand(*p, root, commands[0]);
  for (const FlagDoc& f : FlagDocs()) {
    if (f.global) {
      AddFlag(root, f, f.usage, kGlobalOptions);
    } else if (!Accepts(Command::kMigrate, f)) {
      AddFlag(root, f, f.usage, "");  // given before the subcommand that takes it
    }
  }
  AddFlag(root, HelpFlag(), HelpFlag().usage, "");
  for (size_t i = 1; i < commands.size(); ++i) {
    const CommandDoc& doc = commands[i];
    const std::string first = doc.path.substr(0, doc.path.find(' '));
    CLI::App* app = root.add_subcommand(first, doc.summary);
    app->fallthrough();
    if (doc.path != first) {  // policy explain
      p->policy = app;
      app->allow_extras();
      app->formatter(std::make_shared<KubectlFormatter>(doc));
      app->add_option("args", p->positionals[app]);
      app = app->add_subcommand(doc.path.substr(first.size() + 1));
      app->fallthrough();
    }
    AddCommand(*p, *app, doc);
  }
  p->help = root.add_subcommand("help", "Help about any command");
  p->help->group("")->allow_extras()->fallthrough();
  p->help->add_option("args", p->positionals[p->help]);  // `help explain`: the main help
  return p;
}

// pflag spellings CLI11 reads otherwise: `-o=json` (CLI11: the value "=json") becomes
// `--output=json`, and `--flag=` (CLI11: the next word is the value) an empty value. An
// empty value of a flag that may stand alone (`--wait=`; CLI11: a bare --wait) is checked
// here: *error is set when it is invalid.
std::vector<std::string> PflagSpellings(const std::vector<std::string>& args, std::string* error) {
  std::vector<std::string> out;
  bool value_next = false;  // the previous word was a flag whose value is this word
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--") {
      out.insert(out.end(), args.begin() + static_cast<long>(i), args.end());
      break;
    }
    if (value_next) {
      value_next = false;
      out.push_back(a);
      continue;
    }
    const FlagDoc* f = nullptr;
    if (a.size() >= 3 && a[0] == '-' && a[1] != '-' && a[2] == '=' && FindFlag(a[1]) != nullptr) {
      a = "--" + FindFlag(a[1])->name + a.substr(2);
    }
    if (a.starts_with("--")) {
      const size_t eq = a.find('=');
      f = FindFlag(a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2));
      if (f != nullptr && eq == a.size() - 1) {
        if (!f->takes_value()) {
          *error = f->check ? f->check("") : std::string();
          if (!error->empty()) return {};
        } else {
          out.push_back(a.substr(0, eq));
          out.emplace_back();
          continue;
        }
      }
      value_next = f != nullptr && f->takes_value() && eq == std::string::npos;
    } else if (a.size() == 2 && a[0] == '-') {
      f = FindFlag(a[1]);
      value_next = f != nullptr && f->takes_value();
    }
    out.push_back(a);
  }
  return out;
}

// The command's form in messages: "NAME", "explain NAME", "list".
std::string UsageOf(Command command) {
  switch (command) {
    case Command::kExplain:
      return "explain NAME";
    case Command::kStatus:
      return "status MIGRATION";
    case Command::kCancel:
      return "cancel";
    case Command::kList:
      return "list";
    case Command::kPolicyExplain:
      return "policy explain NODE";
    case Command::kMigrate:
    case Command::kHelp:
      break;
  }
  return "NAME";
}

}  // namespace

ArgsParse ParseArgs(const std::vector<std::string>& args) {
  auto fail = [](std::string why) { return ArgsParse{std::nullopt, std::move(why)}; };
  std::unique_ptr<Parser> parser = BuildParser();
  CLI::App& root = *parser->root;
  std::string error;
  std::vector<std::string> words = PflagSpellings(args, &error);
  if (!error.empty()) return fail(error);
  std::ranges::reverse(words);  // CLI11 parses a reversed list
  try {
    root.parse(words);
  } catch (const CLI::ArgumentMismatch& e) {
    // "--node: 1 required TEXT missing": a flag at the end without its value.
    const std::string what = e.what();
    return fail("flag needs an argument: " + what.substr(0, what.find(':')));
  } catch (const CLI::ValidationError& e) {
    // "--flag: <the table's message>"
    const std::string what = e.what();
    const size_t colon = what.find(": ");
    return fail(colon == std::string::npos ? what : what.substr(colon + 2));
  } catch (const CLI::ParseError& e) {
    return fail(e.what());
  }
  for (const std::string& w : root.remaining(true)) {
    if (w.starts_with("--") && w.size() > 2)
      return fail("unknown flag: " + w.substr(0, w.find('=')));
    if (w.size() >= 2 && w[0] == '-' && w[1] != '-') {
      return fail("unknown shorthand flag: '" + std::string(1, w[1]) + "' in " + w);
    }
  }

  // The apps given, outermost first, and the positionals in command-line order.
  std::vector<CLI::App*> chain{&root};
  while (!chain.back()->get_subcommands().empty())
    chain.push_back(chain.back()->get_subcommands()[0]);
  std::vector<std::string> positionals = parser->positionals[&root];

  Invocation inv;
  std::vector<std::string> given;  // long names of the flags on the command line
  bool help = false;
  for (CLI::App* app : chain) {
    std::map<const CLI::Option*, size_t> seen;
    for (const CLI::Option* op : app->parse_order()) {
      if (op->get_lnames().empty()) continue;  // the positionals
      const std::string name = op->get_lnames()[0];
      const std::string& value = op->results()[seen[op]++];
      if (name == HelpFlag().name) {
        help = true;
        continue;
      }
      const FlagDoc& f = *FindFlag(name);
      std::string err = f.set(inv, value);
      if (!err.empty()) return fail(err);
      given.push_back(name);
    }
  }

  Command command = Command::kMigrate;
  if (chain.size() > 1 && !positionals.empty()) {
    // A subcommand's name after the main command's NAME is one more NAME, as in pflag.
    for (size_t i = 1; i < chain.size(); ++i) {
      positionals.push_back(chain[i]->get_name());
      const auto& more = parser->positionals[chain[i]];
      positionals.insert(positionals.end(), more.begin(), more.end());
    }
  } else if (chain.size() > 1 && chain[1] == parser->help) {
    inv.command = Command::kHelp;
    return ArgsParse{inv, {}};
  } else if (chain.size() > 1 && chain[1] == parser->policy) {
    command = Command::kPolicyExplain;
    const auto& words_before = parser->positionals[parser->policy];
    if (!words_before.empty() && !help) {
      return fail(R"(unknown command ")" + words_before[0] +
                  R"(" for "kubectl migrate policy": the only one is explain)");
    }
    if (chain.size() == 2 && !help) return fail("policy needs a subcommand: explain");
    if (chain.size() > 2) positionals = parser->positionals[chain[2]];
  } else if (chain.size() > 1) {
    command = parser->command_of.at(chain[1]);
    positionals = parser->positionals[chain[1]];
  }
  if (help) {
    inv.command = Command::kHelp;
    inv.help_for = command;
    return ArgsParse{inv, {}};
  }
  inv.command = command;
  const std::string formats = OutputFormats(command);
  if (!inv.output.empty() && !formats.empty() &&
      ("," + formats + ",").find("," + inv.output + ",") == std::string::npos) {
    return fail("unable to match a printer suitable for the output format \"" + inv.output +
                "\", allowed formats are: " + formats);
  }

  for (const std::string& name : given) {
    if (Accepts(command, *FindFlag(name))) continue;
    if (command == Command::kStatus && name == "output") continue;  // status prints one form
    if (command == Command::kExplain) {
      return fail("explain accepts only --node, --selector, --term-file and --exclude-node");
    }
    if (command == Command::kStatus && name != "vmi" && name != "all-namespaces") {
      return fail("status accepts no placement, --dry-run or --wait flags");
    }
    return fail("flag --" + name + " does not apply to 'kubectl migrate " + UsageOf(command) + "'");
  }

  if (command == Command::kList) {
    if (!positionals.empty()) {
      return fail("list takes no arguments, got " + std::to_string(positionals.size()));
    }
    return ArgsParse{inv, {}};
  }
  if (command == Command::kCancel) {
    if (positionals.size() > 1) {
      return fail("exactly one MIGRATION is required, got " + std::to_string(positionals.size()));
    }
    if (positionals.empty() && !inv.vmi) return fail("cancel needs a MIGRATION or --vmi VMI");
    if (!positionals.empty() && inv.vmi) {
      return fail("cancel takes a MIGRATION or --vmi VMI, not both");
    }
    if (!positionals.empty()) inv.name = positionals[0];
    return ArgsParse{inv, {}};
  }

  const char* what = command == Command::kStatus          ? "MIGRATION"
                     : command == Command::kPolicyExplain ? "NODE"
                                                          : "NAME";
  if (positionals.empty()) {
    if (command == Command::kMigrate && args.empty()) {
      inv.command = Command::kHelp;
      return ArgsParse{inv, {}};
    }
    return fail(std::string("exactly one ") + what + " is required, got 0");
  }
  if (positionals.size() > 1) {
    return fail(std::string("exactly one ") + what + " is required, got " +
                std::to_string(positionals.size()));
  }
  inv.name = positionals[0];

  switch (command) {
    case Command::kMigrate:
      if (!inv.HasRequest()) {
        return fail(
            "one of --node, --selector, --term-file or --exclude-node is required; "
            "for a migration without placement use 'virtctl migrate'");
      }
      if (inv.wait && inv.dry_run != DryRun::kNone) {
        return fail("--wait cannot be combined with --dry-run");
      }
      break;
    case Command::kExplain:
      break;
    case Command::kStatus:
      if (inv.HasRequest() || inv.dry_run != DryRun::kNone || inv.wait) {
        return fail("status accepts no placement, --dry-run or --wait flags");
      }
      break;
    case Command::kCancel:
    case Command::kList:
    case Command::kPolicyExplain:
    case Command::kHelp:
      break;
  }
  return ArgsParse{inv, {}};
}

std::string HelpText(Command command) {
  std::unique_ptr<Parser> parser = BuildParser();
  for (const auto& [app, c] : parser->command_of) {
    if (c == command) return app->help();
  }
  return parser->root->help();
}

}  // namespace kmt::cli
